// Package smb holds the host operations of the CSI Proxy smb API group.
// Native checks a share path and creates the link to it with Win32 calls
// through win32.Sys; the SMB global mappings themselves run as constant
// PowerShell scripts (Cmdlets) in the agent's PowerShell workers, with every
// request value, the password included, passed as data.
package smb
