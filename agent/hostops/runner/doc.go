// Package runner runs host commands for the Windows host operations. A Command
// carries its program, arguments and environment separately so that request
// values never become part of command text, and so that tests can assert all
// three exactly with a Fake.
//
// On Windows the agent runs PowerShell Commands through Workers, a small pool
// of long-lived PowerShell processes that take each constant script once and
// then its values as data on their standard input (see WorkerBootstrap); Exec,
// one process per Command, remains for other programs and for tests. Bound
// gives every call of a group the deadline and the concurrency cap of its
// operation (package limits), named by Command.Op.
package runner
