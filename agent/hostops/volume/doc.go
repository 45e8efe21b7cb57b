// Package volume holds the host operations of the CSI Proxy volume API group.
// Native makes the Win32 calls (mount points, volume information, free
// space, disk extents, reparse points, cache flushes) through win32.Sys;
// only formatting and resizing (Cmdlets) run otherwise: as MSFT_Volume and
// MSFT_Partition method calls through WMI in the agent's own process (WMI),
// as CSI Proxy 1.3 makes them, with the volume id only ever a quoted WQL
// value, or as constant PowerShell scripts in the agent's PowerShell
// workers (PowerShell), with every request value passed as data.
package volume
