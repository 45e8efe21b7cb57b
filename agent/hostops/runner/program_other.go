//go:build !windows

package runner

// powerShellProgram names PowerShell for the tests of other OSes, where the
// agent never starts it.
func powerShellProgram() string { return "powershell.exe" }
