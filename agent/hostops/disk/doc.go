// Package disk holds the host operations of the CSI Proxy disk API group.
// Native asks the disks themselves through win32.Sys (SCSI addresses, the
// page 83 and serial identifiers, sizes); partitioning, rescanning and the
// online state are WMI method calls on MSFT_Disk and MSFT_StorageSetting
// (WMI, the Cmdlets), in the agent's own process. Disk numbers are integers
// formatted by the agent.
package disk
