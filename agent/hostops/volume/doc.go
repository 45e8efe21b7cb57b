// Package volume holds the host operations of the CSI Proxy volume API group.
// Native makes the Win32 calls (mount points, volume information, free
// space, disk extents, reparse points, cache flushes) through win32.Sys;
// only formatting and resizing run as constant PowerShell scripts (Cmdlets)
// in the agent's PowerShell workers, with every request value passed as data.
package volume
