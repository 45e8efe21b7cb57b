// Package filesystem holds the host operations of the CSI Proxy filesystem API
// group, in portable Go. Paths reach it already confined by the API server,
// and each operation still runs through a handle on the allowed root that
// holds its path (confine.Handle), never through the path string. Recursive
// removals never cross a mount point, and a new link is created through a
// handle on its directory, checked against the pod directories for the
// caller (rule pod-link).
package filesystem
