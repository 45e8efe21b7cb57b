// Package metrics counts the agent's gRPC requests by API group, version,
// method and gRPC code, records their latency, and serves both for
// Prometheus. It registers on a registry it is given, never the global one.
package metrics
