// Package hostile holds the strings the injection tests of the host
// operations send in every request field. It imports nothing.
package hostile

// CommandLine returns strings that would change the meaning of a
// PowerShell or cmd command line if they were pasted into it. Each is
// long enough not to occur by chance in a Windows path or environment, so
// a test may look for it in a program's name, arguments or environment.
func CommandLine() []string {
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

// Values returns CommandLine and the strings that would change the meaning
// of a WQL query or a WMI object path. Some of these (a lone backslash) occur
// in every Windows path, so a test that searches a command line for them
// uses CommandLine instead.
func Values() []string {
	return append(CommandLine(),
		`x' OR Name <> '`,
		`x' OR TRUE OR '`,
		`x" OR Name <> "`,
		`\`,
		`x\`,
		`MSFT_Disk.ObjectId="{1}"`,
	)
}
