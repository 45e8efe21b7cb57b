// Package inflight keeps one storage operation at a time per volume, disk,
// SMB share or iSCSI target.
//
// A host operation's deadline answers its caller, but WMI cannot cancel
// a method: the storage provider (the WMI provider host) goes on with the
// work, and a format cut at its deadline may still be writing the volume. A Table remembers, per Key,
// the operation in progress. Begin (or Do, for one call) refuses a second
// operation on the key with codes.Aborted while the first runs, and, once
// the first ended by its deadline or its caller going away
// (Token.Abandon), until the agent has checked the provider is done: the
// next request for the key runs the operation's settle check (its
// post-condition, under SettleCheckTimeout, never two at once for one
// key), or, for an operation with no reliable post-condition, the key is
// held for SettleTime. Whatever the checks say, MaxHold after the deadline
// passed the key is released with an error log and a count, so that a
// failed provider cannot hold a volume forever. Read-only calls never take
// a key.
package inflight
