// Package anchor publishes the head of a node's audit chain to the
// cluster, so that something outside the node knows where the chain ends:
// an attacker holding the node's files can then no longer cut the end of
// the log or rewrite it and re-chain without verification noticing. The
// object is a coordination.k8s.io/v1 Lease per node in the agent's
// namespace (see audit.Anchor); the API server, through the
// ValidatingAdmissionPolicy shipped in config/agent, lets only the agent
// on that node write it and never lets its sequence number go backwards,
// except after a reset by a person holding the recovery role, which the
// Lease keeps and verification reports. pipeguard-agent publishes; the
// review side (package review: ReadAnchor, VerifyWith) reads the anchor
// back and verifies the files against it.
package anchor
