// Package smb holds the host operations of the CSI Proxy smb API group.
// Native checks a share path and creates the link to it with Win32 calls
// through win32.Sys; the SMB global mappings themselves are WMI calls on
// MSFT_SmbGlobalMapping (WMI, the Cmdlets) in the agent's own process, with
// the password only as a method in-parameter.
package smb
