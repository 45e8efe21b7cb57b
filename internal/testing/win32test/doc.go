// Package win32test holds Host, an in-memory win32.Sys: a host of disks,
// volumes and mount points that answers DeviceIoControl and
// FSCTL_GET_REPARSE_POINT with bytes laid out as Microsoft documents the
// structures, built by the encoders of this package. Tests of the native
// host operations run on it on any OS; given a real Sys (Host.Real) it
// also stands in for what Wine cannot do (disk IOCTLs, mount points) while
// the rest goes to the host.
package win32test
