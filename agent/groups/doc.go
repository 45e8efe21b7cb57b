// Package groups holds one subpackage per CSI Proxy API group. Each has an
// internal server with one method per operation, which validates and confines
// the request and calls the group's host operations, and thin adapters that
// turn every served API version into calls of that internal server, so that
// all versions share one set of rules.
package groups
