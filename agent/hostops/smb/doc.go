// Package smb holds the host operations of the CSI Proxy smb API group.
// Native checks a share path and creates the link to it with Win32 calls
// through win32.Sys; the SMB global mappings themselves are Cmdlets, of
// which there are two: WMI, the MSFT_SmbGlobalMapping methods called in the
// agent's own process as CSI Proxy 1.3 calls them, and PowerShell, constant
// scripts run in the agent's PowerShell workers. Either passes every
// request value, the password included, as data: a WMI in-parameter or an
// environment variable.
package smb
