package server

import "path/filepath"

// PipePrefix is the Windows named pipe namespace.
const PipePrefix = `\\.\pipe\`

// BaseName is the name CSI Proxy gives the endpoint of an API group version:
// csi-proxy-<group>-<version>.
func BaseName(group, version string) string {
	return "csi-proxy-" + group + "-" + version
}

// PipePath is the Windows named pipe of an API group version, e.g.
// \\.\pipe\csi-proxy-filesystem-v1.
func PipePath(group, version string) string {
	return PipePrefix + BaseName(group, version)
}

// SocketPath is the unix socket that stands in for the pipe of an API group
// version, e.g. /run/pipeguard/csi-proxy-filesystem-v1.sock.
func SocketPath(dir, group, version string) string {
	return filepath.Join(dir, BaseName(group, version)+".sock")
}
