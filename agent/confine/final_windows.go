package confine

import (
	"fmt"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/windows"
)

// Flags of GetFinalPathNameByHandle: how the volume is named.
const (
	finalVolumeNameDOS  = 0x0
	finalVolumeNameGUID = 0x1
)

// openFinal opens p, following every link, junction and mount point on the
// way, and returns the final path of the opened handle as Windows reports
// it (GetFinalPathNameByHandle): C:\... (a volume mounted in a folder is
// named through that folder, or its drive letter), \\server\share\... for
// a file on a share, or \\?\Volume{GUID}\... for a volume with neither.
func openFinal(p string) (string, error) {
	name, err := windows.UTF16PtrFromString(p)
	if err != nil {
		return "", &fs.PathError{Op: "open", Path: p, Err: err}
	}
	// No access is asked for: the handle only names the file. Sharing
	// everything leaves other users of the file undisturbed.
	h, err := windows.CreateFile(name, 0,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return "", &fs.PathError{Op: "open", Path: p, Err: err}
	}
	defer func() { _ = windows.CloseHandle(h) }()
	s, err := finalPathByHandle(h, finalVolumeNameDOS)
	if err != nil {
		// A volume with neither a drive letter nor a mount folder has no
		// DOS name.
		if s, err = finalPathByHandle(h, finalVolumeNameGUID); err != nil {
			return "", fmt.Errorf("reading the final path of %s: %w", Quote(p), err)
		}
	}
	return finalWin32Path(s), nil
}

func finalPathByHandle(h windows.Handle, flags uint32) (string, error) {
	buf := make([]uint16, windows.MAX_PATH)
	for {
		n, err := windows.GetFinalPathNameByHandle(h, &buf[0], uint32(len(buf)), flags)
		if err != nil {
			return "", err
		}
		if n < uint32(len(buf)) {
			return windows.UTF16ToString(buf[:n]), nil
		}
		buf = make([]uint16, n)
	}
}

// finalWin32Path turns \\?\C:\x into C:\x and \\?\UNC\server\share into
// \\server\share. Volume GUID paths keep their prefix.
func finalWin32Path(s string) string {
	switch {
	case strings.HasPrefix(s, `\\?\UNC\`):
		return `\\` + s[len(`\\?\UNC\`):]
	case len(s) >= 7 && strings.HasPrefix(s, `\\?\`) && s[5] == ':' && s[6] == '\\':
		return s[4:]
	}
	return s
}

// dirFinal returns the final path of the open directory d
// (GetFinalPathNameByHandle); false when Windows does not report it.
func dirFinal(d *os.File) (string, bool) {
	s, err := fileFinal(d)
	return s, err == nil
}
