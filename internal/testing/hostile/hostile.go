// Package hostile holds the strings the injection tests of the host
// operations send in every request field. It imports nothing.
package hostile

// Values returns strings that would change the meaning of a PowerShell or
// cmd command line, a WQL query or a WMI object path if they were pasted
// into it.
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
		`x' OR Name <> '`,
		`x' OR TRUE OR '`,
		`x" OR Name <> "`,
		`\`,
		`x\`,
		`MSFT_Disk.ObjectId="{1}"`,
	}
}
