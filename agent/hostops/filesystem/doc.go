// Package filesystem holds the host operations of the CSI Proxy filesystem API
// group, in portable Go. Paths reach it already confined by the API server,
// and each operation still runs through a handle on the allowed root that
// holds its path (confine.Handle), never through the path string.
package filesystem
