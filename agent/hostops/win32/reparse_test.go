package win32_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
)

func put16(b []byte, off int, v uint16) []byte {
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint16(b[off:], v)
	return b
}

func TestParseReparsePoint(t *testing.T) {
	const vol = `\??\Volume{452e318a-5cde-421e-9831-b9853c521012}\`
	good := map[string]struct {
		buf  []byte
		want win32.ReparsePoint
	}{
		"mount point": {win32test.MountPointReparse(vol, ""),
			win32.ReparsePoint{Tag: win32.IO_REPARSE_TAG_MOUNT_POINT, SubstituteName: vol}},
		"junction": {win32test.MountPointReparse(`\??\C:\var\lib\kubelet\plugins\x`, `C:\var\lib\kubelet\plugins\x`),
			win32.ReparsePoint{Tag: win32.IO_REPARSE_TAG_MOUNT_POINT, SubstituteName: `\??\C:\var\lib\kubelet\plugins\x`, PrintName: `C:\var\lib\kubelet\plugins\x`}},
		"relative symbolic link": {win32test.SymlinkReparse(`..\staging`, `..\staging`, win32.SYMLINK_FLAG_RELATIVE),
			win32.ReparsePoint{Tag: win32.IO_REPARSE_TAG_SYMLINK, SubstituteName: `..\staging`, PrintName: `..\staging`, Flags: win32.SYMLINK_FLAG_RELATIVE}},
		"share link, names beyond the BMP": {win32test.SymlinkReparse(`\??\UNC\srv\share\𝄞`, `\\srv\share\𝄞`, 0),
			win32.ReparsePoint{Tag: win32.IO_REPARSE_TAG_SYMLINK, SubstituteName: `\??\UNC\srv\share\𝄞`, PrintName: `\\srv\share\𝄞`}},
		"another tag": {win32test.OtherReparse(0x80000013, []byte("dedup data")), win32.ReparsePoint{Tag: 0x80000013}},
		"bytes past the data": {append(win32test.MountPointReparse(vol, ""), 0xde, 0xad),
			win32.ReparsePoint{Tag: win32.IO_REPARSE_TAG_MOUNT_POINT, SubstituteName: vol}},
	}
	for name, tc := range good {
		got, err := win32.ParseReparsePoint(tc.buf)
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v\nwant %+v", name, got, err, tc.want)
		}
	}

	mp := win32test.MountPointReparse(`\??\C:\a`, `C:\a`) // PathBuffer at 16: 16 bytes, NUL, 8 bytes, NUL (28)
	link := win32test.SymlinkReparse(`\??\C:\a`, `C:\a`, 0)
	utf := func(units ...uint16) []byte {
		var b []byte
		for _, u := range units {
			b = binary.LittleEndian.AppendUint16(b, u)
		}
		return b
	}
	withName := func(name []byte) []byte {
		b := win32test.OtherReparse(win32.IO_REPARSE_TAG_MOUNT_POINT, append(utf(0, uint16(len(name)), 0, 0), name...))
		return b
	}
	faults := map[string]struct {
		buf  []byte
		want string
	}{
		"empty":       {nil, "REPARSE_DATA_BUFFER: header at offset 0: 0 bytes were returned, the header takes 8 (truncated answer)"},
		"header cut":  {mp[:7], "REPARSE_DATA_BUFFER: header at offset 0: 7 bytes were returned, the header takes 8 (truncated answer)"},
		"data cut":    {mp[:len(mp)-1], "REPARSE_DATA_BUFFER: ReparseDataLength at offset 4: 36 bytes of data after the header exceed the 35 returned"},
		"length huge": {put16(mp, 4, 0xffff), "REPARSE_DATA_BUFFER: ReparseDataLength at offset 4: 65535 bytes of data after the header exceed the 36 returned"},
		"no room for the offsets": {put16(mp, 4, 7),
			"REPARSE_DATA_BUFFER: ReparseDataLength at offset 4: 7 bytes cannot hold the 8 bytes of fields before PathBuffer"},
		"no room for the flags": {put16(link, 4, 11),
			"REPARSE_DATA_BUFFER: ReparseDataLength at offset 4: 11 bytes cannot hold the 12 bytes of fields before PathBuffer"},
		"odd offset": {put16(mp, 8, 1), "REPARSE_DATA_BUFFER: SubstituteNameOffset at offset 8: 1 is odd: UTF-16 names start at even offsets"},
		"odd length": {put16(mp, 14, 7), "REPARSE_DATA_BUFFER: PrintNameLength at offset 14: 7 is odd: UTF-16 names take whole 2-byte units"},
		"name past the buffer": {put16(mp, 12, 24),
			"REPARSE_DATA_BUFFER: PrintNameOffset at offset 12: 8 bytes from offset 24 run past the 28-byte PathBuffer"},
		"offset overflowing": {put16(put16(mp, 8, 0xfffe), 10, 0xfffe),
			"REPARSE_DATA_BUFFER: SubstituteNameOffset at offset 8: 65534 bytes from offset 65534 run past the 28-byte PathBuffer"},
		"data length cuts the names": {put16(mp, 4, 20),
			"REPARSE_DATA_BUFFER: SubstituteNameOffset at offset 8: 16 bytes from offset 0 run past the 12-byte PathBuffer"},
		"empty substitute name": {put16(mp, 10, 0), "REPARSE_DATA_BUFFER: SubstituteNameLength at offset 10: is 0: the reparse point names no target"},
		"NUL in the name": {withName(utf('C', ':', '\\', 0, 'x')),
			"REPARSE_DATA_BUFFER: SubstituteNameOffset at offset 8: the name at 0 holds a NUL character"},
		"lone high surrogate": {withName(utf('C', ':', 0xd834)),
			"REPARSE_DATA_BUFFER: SubstituteNameOffset at offset 8: the name at 0 holds an unpaired UTF-16 surrogate"},
		"lone low surrogate": {withName(utf(0xdd1e, 'x')),
			"REPARSE_DATA_BUFFER: SubstituteNameOffset at offset 8: the name at 0 holds an unpaired UTF-16 surrogate"},
		"reversed pair": {withName(utf(0xdd1e, 0xd834)),
			"REPARSE_DATA_BUFFER: SubstituteNameOffset at offset 8: the name at 0 holds an unpaired UTF-16 surrogate"},
	}
	for name, tc := range faults {
		got, err := win32.ParseReparsePoint(tc.buf)
		if err == nil || err.Error() != tc.want || got != (win32.ReparsePoint{}) {
			t.Errorf("%s: %+v, %v\nwant %q", name, got, err, tc.want)
		}
	}
}
