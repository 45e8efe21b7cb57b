// Package disk holds the host operations of the CSI Proxy disk API group.
// Native asks the disks themselves through win32.Sys (SCSI addresses, the
// page 83 and serial identifiers, sizes); partitioning, rescanning and the
// online state (Cmdlets) run either as MSFT_Disk, MSFT_Partition and
// MSFT_StorageSetting method calls through WMI in the agent's own process
// (WMI), as CSI Proxy 1.3 makes them, or as constant PowerShell scripts in
// the agent's PowerShell workers (PowerShell). Disk numbers are integers
// formatted by the agent.
package disk
