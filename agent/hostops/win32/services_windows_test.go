package win32

import (
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
)

// TestServiceAccessRights: each ServiceAccess opens a service with the
// least rights its calls need, as winsvc.h numbers them.
func TestServiceAccessRights(t *testing.T) {
	for _, p := range []struct {
		name      string
		ours, win uint32
	}{
		{"query rights", accessRights(ServiceAccessQuery), 0x0001 | 0x0004},
		{"start rights", accessRights(ServiceAccessStart), 0x0010 | 0x0004 | 0x0001},
		{"stop rights", accessRights(ServiceAccessStop), 0x0020 | 0x0004 | 0x0008},
	} {
		if p.ours != p.win {
			t.Errorf("%s: ours %#x, Windows %#x", p.name, p.ours, p.win)
		}
	}
}

// multiSZ lays out names as lpDependencies holds them: UTF-16 strings each
// ended by a NUL, the list by an empty one, in a buffer of 8-byte words.
func multiSZ(names []string, terminate bool) []uint64 {
	var chars []uint16
	for _, n := range names {
		chars = append(chars, windows.StringToUTF16(n)...)
	}
	if terminate {
		chars = append(chars, 0)
	}
	buf := make([]uint64, (len(chars)*2+7)/8+1)
	copy(unsafe.Slice((*uint16)(unsafe.Pointer(&buf[0])), len(buf)*4), chars)
	if !terminate {
		// No empty string at the end: fill the rest with a letter.
		rest := unsafe.Slice((*uint16)(unsafe.Pointer(&buf[0])), len(buf)*4)[len(chars):]
		for i := range rest {
			rest[i] = 'x'
		}
	}
	return buf
}

// TestMultiString reads dependency lists laid out as QUERY_SERVICE_CONFIG's
// lpDependencies documents them (Wine's service control manager reports
// none, so the real answer is not read under Wine): names and groups are
// read, and a list outside the buffer or not ended in it is an error, never
// taken for no dependencies.
func TestMultiString(t *testing.T) {
	first := func(buf []uint64) *uint16 { return (*uint16)(unsafe.Pointer(&buf[0])) }
	buf := multiSZ([]string{"LanmanWorkstation", "+NetworkProvider"}, true)
	got, err := multiString(first(buf), buf)
	if err != nil || strings.Join(got, ",") != "LanmanWorkstation,+NetworkProvider" {
		t.Fatalf("two names: %q, %v", got, err)
	}
	empty := multiSZ(nil, true)
	if got, err := multiString(first(empty), empty); err != nil || len(got) != 0 {
		t.Fatalf("no names: %q, %v", got, err)
	}
	if got, err := multiString(nil, empty); err != nil || got != nil {
		t.Fatalf("no list: %q, %v", got, err)
	}
	open := multiSZ([]string{"A"}, false)
	if _, err := multiString(first(open), open); err == nil || !strings.Contains(err.Error(), "does not end inside the buffer") {
		t.Fatalf("a list not ended: %v", err)
	}
	other := multiSZ([]string{"A"}, true)
	if _, err := multiString(first(other), buf); err == nil || !strings.Contains(err.Error(), "not inside the buffer") {
		t.Fatalf("a list outside the buffer: %v", err)
	}
}
