package win32_test

import (
	"errors"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
)

func TestKindOf(t *testing.T) {
	cases := map[uint32]error{
		1: win32.ErrNotSupported, 2: win32.ErrNotFound, 3: win32.ErrNotFound, 21: win32.ErrNotReady,
		50: win32.ErrNotSupported, 122: win32.ErrBufferTooSmall, 123: win32.ErrNotFound, 234: win32.ErrBufferTooSmall,
		1112: win32.ErrNotReady, 4390: win32.ErrNotReparsePoint, 5: nil, 53: nil, 87: nil, 0: nil,
	}
	for code, want := range cases {
		if got := win32.KindOf(code); got != want {
			t.Errorf("KindOf(%d) = %v, want %v", code, got, want)
		}
	}
}

func TestErrorNamesTheCallAndMatchesItsKind(t *testing.T) {
	err := win32test.Fail("GetDiskFreeSpaceExW", `\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\`, win32test.ErrFileNotFound)
	if want := `GetDiskFreeSpaceExW \\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\: The system cannot find the file specified.`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if !errors.Is(err, win32.ErrNotFound) || !errors.Is(err, win32test.ErrFileNotFound) || errors.Is(err, win32.ErrNotSupported) {
		t.Errorf("errors.Is does not match the kind and the code only")
	}
	denied := win32test.Fail("CreateFileW", `\\.\PhysicalDrive0`, win32test.ErrAccessDenied)
	for _, kind := range []error{win32.ErrNotFound, win32.ErrNotSupported, win32.ErrNotReady, win32.ErrBufferTooSmall, win32.ErrNotReparsePoint} {
		if errors.Is(denied, kind) {
			t.Errorf("access denied matches %v", kind)
		}
	}
	if err := win32test.Fail("FindFirstVolumeW", "", win32test.ErrAccessDenied); err.Error() != "FindFirstVolumeW: Access is denied." {
		t.Errorf("a call on no path: %q", err)
	}
	err = win32.Unsupported{GOOS: "linux"}.SetMountPoint(`C:\x\`, "v")
	if want := `SetVolumeMountPointW C:\x\: cannot be called on linux: this host operation needs Windows`; err.Error() != want || !errors.Is(err, win32.ErrNotSupported) {
		t.Errorf("Unsupported: %v", err)
	}
}
