// Package server is the wire side of pipeguard-agent: it names and opens the
// endpoints, serves the CSI Proxy API on them, and measures every request.
//
// One endpoint serves one CSI Proxy API group version (Endpoint): one
// listener and one gRPC server each, as CSI Proxy does, so each pipe exposes
// only its own service. The API group packages produce Endpoints; this
// package listens and serves them.
//
// Names come from one helper, so a pipe and its unix-socket stand-in can
// never disagree: \\.\pipe\csi-proxy-<group>-<version> on Windows,
// <socket-dir>/csi-proxy-<group>-<version>.sock elsewhere. On Windows the
// pipes are created with an explicit security descriptor (DefaultSDDL unless
// configured); unix sockets get mode 0660.
//
// Every request passes one interceptor chain, assembled in one place
// (Server.chain):
//
//	context (endpoint info, logger) ─▶ metrics ─▶ Options.Unary… (gate,
//	identity, audit) ─▶ needs-Windows stop ─▶ error shape ─▶ handler
//
// Metrics count requests by API group, version, method and gRPC code, record
// their latency. They register on a registry they are given, never the
// global one; pipeguard-agent serves that registry (cmd/pipeguard-agent/app).
//
// Shutdown is graceful: listeners close, in-flight calls finish, then Serve
// returns; after Options.ShutdownTimeout the remaining calls are cut.
package server
