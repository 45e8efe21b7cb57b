// Package gate decides whether pipeguard-agent runs a request, with the
// rego rules of package pipeguard.agent (shipped in rego/agent.rego) and the
// admin policies of a directory, evaluated by OPA with the same builtins as
// admission.
//
// The input document (Input, version pipeguard.io/agent/v1) carries the
// caller, the API group, version and method, whether the method changes the
// host, and the request with secrets redacted. Confinement runs before the
// rules, so the paths in it have been checked.
//
// Policies are compiled and prepared once per change of the directory and
// swapped atomically; a directory that does not compile keeps the last good
// policies in force and its error (file:row) is logged.
package gate
