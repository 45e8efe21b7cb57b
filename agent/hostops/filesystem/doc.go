// Package filesystem holds the host operations of the CSI Proxy filesystem API
// group, in portable Go. Paths reach it already confined by the API server.
package filesystem
