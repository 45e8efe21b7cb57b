// Package runner runs host commands for the Windows host operations. A Command
// carries its program, arguments and environment separately so that request
// values never become part of command text, and so that tests can assert all
// three exactly with a Fake.
package runner
