// Package volume holds the host operations of the CSI Proxy volume API group.
// Native makes the Win32 calls (mount points, volume information, free
// space, disk extents, reparse points, cache flushes) through win32.Sys;
// only formatting and resizing are WMI method calls on MSFT_Volume and
// MSFT_Partition (WMI, the Cmdlets), in the agent's own process.
package volume
