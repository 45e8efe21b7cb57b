// Package app assembles pipeguard-agent in one place: the CSI Proxy API
// group servers on their pipes or sockets, the guard in front of every
// request (caller identity, confinement, the rego gate, the audit log) and
// the metrics listener. NewCommand is the binary: its command line
// (CommandOptions, and CompareOptions for pipeguard-agent compare), which
// runs Run; New builds the servers around a guard the caller provides,
// which tests and the load tool use.
package app
