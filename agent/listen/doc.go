// Package listen names and opens the endpoints the agent serves on: one per
// CSI Proxy API group version. Names come from one helper, so a pipe and its
// unix-socket stand-in can never disagree: \\.\pipe\csi-proxy-<group>-<version>
// on Windows, <socket-dir>/csi-proxy-<group>-<version>.sock elsewhere.
//
// On Windows the pipes are created with an explicit security descriptor
// (DefaultSDDL unless configured); unix sockets get mode 0660.
package listen
