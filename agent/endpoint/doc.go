// Package endpoint describes one served CSI Proxy API group version: its
// group, version, and how to register its gRPC service. The API group
// packages produce Endpoints; the server package listens and serves them.
package endpoint
