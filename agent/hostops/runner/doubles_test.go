package runner

import "context"

// answer is a Runner that answers every command with out.
type answer string

func (a answer) Run(context.Context, Command) ([]byte, error) { return []byte(a), nil }

// hostileValues are values that would change the meaning of a PowerShell
// or cmd command line if they were pasted into it (runnertest.Hostile holds
// the same for the host operations' tests, which import this package).
var hostileValues = []string{
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
