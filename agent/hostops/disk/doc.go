// Package disk holds the host operations of the CSI Proxy disk API group.
// Native asks the disks themselves through win32.Sys (SCSI addresses, the
// page 83 and serial identifiers, sizes); partitioning, rescanning and the
// online state run as constant PowerShell scripts (Cmdlets) in the agent's
// PowerShell workers. Disk numbers are integers formatted by the agent.
package disk
