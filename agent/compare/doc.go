// Package compare asks CSI Proxy and pipeguard the same read-only questions
// and reports where their answers differ, so that an administrator can tell
// on a node still running CSI Proxy whether pipeguard-agent will answer its
// drivers as CSI Proxy does (pipeguard-agent compare, docs/install.md).
//
// Both sides are read through the same Conns: CSI Proxy's through its client
// library on its named pipes (DialCSIProxy, Windows only), pipeguard's
// through the agent's own API group servers and host operations, served in
// memory in this process (Local): nothing listens on the host.
//
// Only the methods of Allowed are ever called. The Conns hold the groups'
// clients as interfaces that declare those methods and no other, so a
// mutating method cannot be called through them; the tests hold Allowed
// against the method table of package methods and the gate's notion of a
// mutating method.
package compare
