package runnertest

import (
	"context"
	"sync"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
)

// Fake is a runner.Runner for tests: it records commands and answers them
// with canned output.
type Fake struct {
	// Respond returns the output of a command; nil means empty output.
	Respond func(cmd runner.Command) ([]byte, error)

	mu   sync.Mutex
	cmds []runner.Command
	ops  []string
}

// Run records cmd and answers it with Respond.
func (f *Fake) Run(_ context.Context, cmd runner.Command) ([]byte, error) {
	f.mu.Lock()
	rec := cmd
	rec.Op, rec.Group = "", ""
	f.cmds = append(f.cmds, rec)
	f.ops = append(f.ops, cmd.Op)
	f.mu.Unlock()
	if f.Respond == nil {
		return nil, nil
	}
	return f.Respond(cmd)
}

// Commands returns the commands run so far as they would run: program,
// arguments, environment and script, as runner.PowerShell builds them,
// without the operation and group names the callers add (see Ops).
func (f *Fake) Commands() []runner.Command {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]runner.Command(nil), f.cmds...)
}

// Ops returns the operation names (Command.Op) of the commands run so far.
func (f *Fake) Ops() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ops...)
}
