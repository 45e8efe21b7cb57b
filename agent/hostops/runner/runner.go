package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
)

// Command is one program invocation.
type Command struct {
	// Program is the executable, e.g. "powershell.exe".
	Program string
	// Args are its arguments; for PowerShell they hold a constant script.
	Args []string
	// Env holds the request values as NAME=value pairs, added to the
	// agent's own environment.
	Env []string
	// Script is the constant PowerShell script of a PowerShell command,
	// without the preamble Args add to it; Workers run it by this text.
	// Empty for other programs.
	Script string
	// Op names the operation, e.g. "Format-Volume" (Script sets it): a
	// Bounded runner applies its limits, and errors name it.
	Op string
	// Group is the API group the command is of, e.g. "volume" (a Bounded
	// runner sets it), which the PowerShell workers share workers by.
	Group string
}

// Runner runs a Command and returns its standard output.
type Runner interface {
	Run(ctx context.Context, cmd Command) ([]byte, error)
}

// PowerShellProgram is the PowerShell executable of Windows Server. On
// Windows it is the full path below the system directory
// (C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe), so that no
// directory on the agent's PATH can put another program in its place.
var PowerShellProgram = powerShellProgram()

// PowerShell returns the Command that runs a constant script with the given
// environment. script must be a constant: request values go in env only.
// $ErrorActionPreference=Stop makes every cmdlet failure end the script with
// a non-zero exit code.
func PowerShell(script string, env ...string) Command {
	return Command{
		Program: PowerShellProgram,
		Args:    []string{"-NoLogo", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-Command", "$ErrorActionPreference='Stop'; " + script},
		Env:     env,
		Script:  script,
	}
}

// Script runs a constant PowerShell script with r, its values in env, and
// names the operation in the error and to a Bounded runner, which applies
// the operation's limits.
func Script(ctx context.Context, r Runner, op, script string, env ...string) ([]byte, error) {
	cmd := PowerShell(script, env...)
	cmd.Op = op
	out, err := r.Run(ctx, cmd)
	var deadline *limits.DeadlineError
	if errors.As(err, &deadline) {
		return nil, err // names the operation already
	}
	if err != nil {
		return nil, fmt.Errorf("%s failed: %w", op, err)
	}
	return out, nil
}

// Env formats one environment entry.
func Env(name, value string) string { return name + "=" + value }

// DefaultWaitDelay is how long Exec waits, once the context has ended and
// the process is killed, for its output pipes to close.
const DefaultWaitDelay = 5 * time.Second

// Exec runs commands with os/exec.
type Exec struct {
	// WaitDelay bounds the wait for the output pipes after the process is
	// killed, which a child of it may hold open; 0 means DefaultWaitDelay.
	WaitDelay time.Duration
}

// Run runs cmd and returns its standard output; on failure the error carries
// the program's standard error. When ctx ends the process is killed, and
// Run returns within WaitDelay even if the process does not exit or a child
// of it keeps its output open (the child is not killed).
func (e Exec) Run(ctx context.Context, cmd Command) ([]byte, error) {
	c := exec.CommandContext(ctx, cmd.Program, cmd.Args...)
	c.Env = append(os.Environ(), cmd.Env...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	c.Cancel = func() error { return c.Process.Kill() }
	c.WaitDelay = e.WaitDelay
	if c.WaitDelay <= 0 {
		c.WaitDelay = DefaultWaitDelay
	}
	if err := c.Run(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return stdout.Bytes(), fmt.Errorf("%w (%v): %s", ctxErr, err, strings.TrimSpace(stderr.String()))
		}
		return stdout.Bytes(), fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// Unsupported refuses to run anything. The agent gives it to the Windows-only
// groups on other OSes, where their calls are answered before any host
// operation; it is a second stop.
type Unsupported struct{ GOOS string }

// Run returns an error.
func (u Unsupported) Run(_ context.Context, cmd Command) ([]byte, error) {
	return nil, fmt.Errorf("cannot run %s on %s: this host operation needs Windows", cmd.Program, u.GOOS)
}
