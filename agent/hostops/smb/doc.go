// Package smb holds the host operations of the CSI Proxy smb API group: SMB
// global mappings and the links to them, as constant PowerShell scripts run
// through a runner.Runner with every request value in the environment.
package smb
