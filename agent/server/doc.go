// Package server serves CSI Proxy API endpoints: one listener and one gRPC
// server per API group version, as CSI Proxy does, so each pipe exposes only
// its own service.
//
// Every request passes one interceptor chain, assembled in one place
// (Server.chain):
//
//	context (endpoint info, logger) ─▶ metrics ─▶ Options.Unary… (gate,
//	identity, audit) ─▶ needs-Windows stop ─▶ error shape ─▶ handler
//
// Shutdown is graceful: listeners close, in-flight calls finish, then Serve
// returns; after Options.ShutdownTimeout the remaining calls are cut.
package server
