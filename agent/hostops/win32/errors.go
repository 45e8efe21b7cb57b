package win32

import (
	"errors"
	"fmt"
)

// Kinds of failure the host operations act on, whatever the Windows error
// code behind them. An *Error matches its Kind with errors.Is.
var (
	// ErrNotFound is a file, directory, volume or device that does not
	// exist, or a name Windows cannot parse (ERROR_FILE_NOT_FOUND,
	// ERROR_PATH_NOT_FOUND, ERROR_INVALID_NAME).
	ErrNotFound = errors.New("not found")
	// ErrNotSupported is a device that does not answer the request
	// (ERROR_INVALID_FUNCTION, ERROR_NOT_SUPPORTED), as a disk that is not
	// on a SCSI port answers IOCTL_SCSI_GET_ADDRESS.
	ErrNotSupported = errors.New("not supported")
	// ErrNotReady is a device without its medium (ERROR_NOT_READY,
	// ERROR_NO_MEDIA_IN_DRIVE), such as an empty DVD drive.
	ErrNotReady = errors.New("device not ready")
	// ErrBufferTooSmall is an answer that did not fit the output buffer
	// (ERROR_INSUFFICIENT_BUFFER, ERROR_MORE_DATA). DeviceIoControl then
	// returns the bytes that did, which may say how many are needed.
	ErrBufferTooSmall = errors.New("output buffer too small")
	// ErrNotReparsePoint is a path that is not a reparse point: neither a
	// mount point, a junction nor a symbolic link (ERROR_NOT_A_REPARSE_POINT).
	ErrNotReparsePoint = errors.New("not a reparse point")
)

// Error is a failed Win32 call: the function, what it was called on, and
// the error Windows gave.
type Error struct {
	// Func is the Win32 function, e.g. "GetDiskFreeSpaceExW", or
	// "DeviceIoControl(IOCTL_SCSI_GET_ADDRESS)".
	Func string
	// Path is the path, volume or device it was called on; "" for a
	// call on none (listing the volumes).
	Path string
	// Err is the error Windows gave (a windows.Errno on Windows).
	Err error
	// Kind is one of ErrNotFound, ErrNotSupported, ErrNotReady,
	// ErrBufferTooSmall and ErrNotReparsePoint, or nil.
	Kind error
}

func (e *Error) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s: %v", e.Func, e.Err)
	}
	return fmt.Sprintf("%s %s: %v", e.Func, e.Path, e.Err)
}

// Unwrap returns Err and Kind, for errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	if e.Kind == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Kind}
}

// Windows error codes (winerror.h) that KindOf sorts.
const (
	errorInvalidFunction    = 1
	errorFileNotFound       = 2
	errorPathNotFound       = 3
	errorNotReady           = 21
	errorNotSupported       = 50
	errorInsufficientBuffer = 122
	errorInvalidName        = 123
	errorMoreData           = 234
	errorNoMediaInDrive     = 1112
	errorNotAReparsePoint   = 4390
)

// KindOf returns the kind of failure a Windows error code is (ErrNotFound,
// ErrNotSupported, ErrNotReady, ErrBufferTooSmall, ErrNotReparsePoint), or
// nil for the others.
func KindOf(code uint32) error {
	switch code {
	case errorFileNotFound, errorPathNotFound, errorInvalidName:
		return ErrNotFound
	case errorInvalidFunction, errorNotSupported:
		return ErrNotSupported
	case errorNotReady, errorNoMediaInDrive:
		return ErrNotReady
	case errorInsufficientBuffer, errorMoreData:
		return ErrBufferTooSmall
	case errorNotAReparsePoint:
		return ErrNotReparsePoint
	}
	return nil
}
