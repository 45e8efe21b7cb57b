package win32test

import "github.com/pipeguard/pipeguard/agent/hostops/win32"

// Errno is a Windows error code with the text Windows gives for it, as a
// windows.Errno reads on Windows.
type Errno struct {
	Code uint32
	Text string
}

func (e Errno) Error() string { return e.Text }

// The Windows errors the fake host answers with, and their texts.
var (
	ErrFileNotFound     = Errno{2, "The system cannot find the file specified."}
	ErrInvalidFunction  = Errno{1, "Incorrect function."}
	ErrNotSupported     = Errno{50, "The request is not supported."}
	ErrInvalidParameter = Errno{87, "The parameter is incorrect."}
	ErrInsufficientBuf  = Errno{122, "The data area passed to a system call is too small."}
	ErrInvalidName      = Errno{123, "The filename, directory name, or volume label syntax is incorrect."}
	ErrDirNotEmpty      = Errno{145, "The directory is not empty."}
	ErrAlreadyExists    = Errno{183, "Cannot create a file when that file already exists."}
	ErrMoreData         = Errno{234, "More data is available."}
	ErrNotAReparsePoint = Errno{4390, "The file or directory is not a reparse point."}
	ErrAccessDenied     = Errno{5, "Access is denied."}
	ErrBadNetPath       = Errno{53, "The network path was not found."}
)

// Fail returns the *win32.Error of a call of fn on path failing with e, its
// Kind as Windows' implementation sorts e.Code.
func Fail(fn, path string, e Errno) error {
	return &win32.Error{Func: fn, Path: path, Err: e, Kind: win32.KindOf(e.Code)}
}
