// Package methods is the one table of the request fields of every CSI Proxy
// API method that the agent treats specially: which fields carry host paths
// and how much of each path is resolved through symlinks, and which fields
// name what a call acts on.
//
// Three parts of the agent read it: the guard confines every path field
// lexically before the gate, the API group servers confine and resolve the
// path fields of the operation they run, and the audit record names its
// object by the first of the method's fields that the request sets.
//
// Methods are listed under their newest names; the names older API versions
// gave the same method find the same entry.
package methods
