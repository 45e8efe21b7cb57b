//go:build windows

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
)

// The call log of the fixture (fixtureLogEnv): which Win32 calls the
// fixture answered from memory and which it passed on to Wine, so that a
// test can tell what under Wine was real.

// callRecord is one line of the call log.
type callRecord struct {
	// To is "fixture" for a call the agent made, and "wine" for a call
	// the fixture passed on to Wine, logged before the fixture's line.
	To string `json:"to"`
	// Func is the Win32 function, as win32.Error names it.
	Func string `json:"func"`
	// Path is the path, volume or device it was called on.
	Path string `json:"path,omitempty"`
	// Error is the call's error; empty when it succeeded.
	Error string `json:"error,omitempty"`
}

// callLog appends callRecords to a writer, one line each.
type callLog struct {
	mu sync.Mutex
	w  io.Writer
}

// add appends a record of a call.
func (l *callLog) add(to, fn, path string, err error) error {
	r := callRecord{To: to, Func: fn, Path: path}
	if err != nil {
		r.Error = err.Error()
	}
	line, merr := json.Marshal(r)
	if merr != nil {
		return merr
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, werr := l.w.Write(append(line, '\n'))
	return werr
}

// recordedSys is a win32.Sys that logs every call it makes on sys. A call
// that cannot be logged fails, naming the log, so that a log a test reads
// is never silently short.
type recordedSys struct {
	sys win32.Sys
	to  string
	log *callLog
}

var _ win32.Sys = recordedSys{}

// done logs a call and returns its error, joined with the log's own.
func (r recordedSys) done(fn, path string, err error) error {
	if lerr := r.log.add(r.to, fn, path, err); lerr != nil {
		return errors.Join(err, fmt.Errorf("%s: writing the call log: %w", fixtureLogEnv, lerr))
	}
	return err
}

// The methods of win32.Sys: each makes the call on sys and logs it under
// the function's name.

func (r recordedSys) VolumeNameForMountPoint(mountPoint string) (string, error) {
	v, err := r.sys.VolumeNameForMountPoint(mountPoint)
	return v, r.done("GetVolumeNameForVolumeMountPointW", mountPoint, err)
}

func (r recordedSys) SetMountPoint(mountPoint, volume string) error {
	return r.done("SetVolumeMountPointW", mountPoint, r.sys.SetMountPoint(mountPoint, volume))
}

func (r recordedSys) DeleteMountPoint(mountPoint string) error {
	return r.done("DeleteVolumeMountPointW", mountPoint, r.sys.DeleteMountPoint(mountPoint))
}

func (r recordedSys) FileSystemName(volume string) (string, error) {
	fs, err := r.sys.FileSystemName(volume)
	return fs, r.done("GetVolumeInformationW", volume, err)
}

func (r recordedSys) FreeSpace(path string) (uint64, uint64, error) {
	total, free, err := r.sys.FreeSpace(path)
	return total, free, r.done("GetDiskFreeSpaceExW", path, err)
}

func (r recordedSys) FlushVolume(volume string) error {
	return r.done("FlushFileBuffers", volume, r.sys.FlushVolume(volume))
}

func (r recordedSys) Volumes() ([]string, error) {
	v, err := r.sys.Volumes()
	return v, r.done("FindFirstVolumeW", "", err)
}

func (r recordedSys) PhysicalDrives() ([]uint32, error) {
	d, err := r.sys.PhysicalDrives()
	return d, r.done("QueryDosDeviceW", "", err)
}

func (r recordedSys) DeviceIoControl(device string, code uint32, in []byte, outSize int) ([]byte, error) {
	out, err := r.sys.DeviceIoControl(device, code, in, outSize)
	return out, r.done(win32.DeviceIoControlFunc(code), device, err)
}

func (r recordedSys) ReadReparsePoint(path string) ([]byte, error) {
	data, err := r.sys.ReadReparsePoint(path)
	return data, r.done(win32.DeviceIoControlFunc(win32.FSCTL_GET_REPARSE_POINT), path, err)
}

func (r recordedSys) FileExists(path string) (bool, error) {
	ok, err := r.sys.FileExists(path)
	return ok, r.done("GetFileAttributesW", path, err)
}

func (r recordedSys) Symlink(target, link string) error {
	return r.done("CreateSymbolicLinkW", link, r.sys.Symlink(target, link))
}
