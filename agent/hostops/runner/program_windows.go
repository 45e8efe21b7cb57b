package runner

import (
	"path/filepath"

	"golang.org/x/sys/windows"
)

// powerShellProgram returns the path of Windows PowerShell in the system
// directory; when that cannot be read, the path on a standard installation
// (never a bare name, which would be looked up on PATH).
func powerShellProgram() string {
	dir, err := windows.GetSystemDirectory()
	if err != nil || dir == "" {
		dir = `C:\Windows\System32`
	}
	return filepath.Join(dir, `WindowsPowerShell\v1.0\powershell.exe`)
}
