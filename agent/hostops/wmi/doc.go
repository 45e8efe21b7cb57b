// Package wmi is the agent's small layer over the host's WMI service, the
// way CSI Proxy 1.3 does its storage, SMB and iSCSI work: a query, a Get
// of an object, and a method call with in-parameters whose out-parameters
// and ReturnValue are read back. The operations that have no Win32 call
// (formatting, partitioning, SMB global mappings, iSCSI) are method calls
// on the MSFT_* classes through Conn, in the agent's own process: no
// PowerShell and no process of any kind.
//
// Conn is the seam. On Windows, New returns the COM implementation (COM on
// locked OS threads in the multithreaded apartment, security at packet
// privacy with impersonation); elsewhere New fails. wmitest is an
// in-memory provider of the MSFT_* classes, with their documented method
// signatures and return codes, for the tests of the groups on any OS.
//
// Request values reach a WQL query only through Quote, and secrets only
// as method in-parameters: never in a query string, an error or a log.
package wmi
