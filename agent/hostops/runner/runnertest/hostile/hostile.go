// Package hostile holds the strings the injection tests of the host
// operations send in every request field. It imports nothing, so that the
// runner package's own tests can use it as well as runnertest.
package hostile

// Values returns strings that would change the meaning of a PowerShell or
// cmd command line if they were pasted into it.
func Values() []string {
	return []string{
		`'; Remove-Item C:\ -Recurse; '`,
		`"; Remove-Item C:\ -Recurse; "`,
		`$(Remove-Item C:\ -Recurse)`,
		"`whoami`",
		"x\nRemove-Item C:\\ -Recurse",
		"x\r\nStop-Computer",
		`x & calc.exe`,
		`x | Out-File C:\pwned`,
		`${env:PATH}`,
		`@(Stop-Computer)`,
		`x; Stop-Computer`,
		`x' -Force '`,
	}
}
