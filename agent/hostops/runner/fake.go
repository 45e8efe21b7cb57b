package runner

import (
	"context"
	"sync"
)

// Fake records commands and answers them with canned output, for tests.
type Fake struct {
	// Respond returns the output of a command; nil means empty output.
	Respond func(cmd Command) ([]byte, error)

	mu   sync.Mutex
	cmds []Command
}

// Run records cmd and answers it with Respond.
func (f *Fake) Run(_ context.Context, cmd Command) ([]byte, error) {
	f.mu.Lock()
	f.cmds = append(f.cmds, cmd)
	f.mu.Unlock()
	if f.Respond == nil {
		return nil, nil
	}
	return f.Respond(cmd)
}

// Commands returns the commands run so far.
func (f *Fake) Commands() []Command {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Command(nil), f.cmds...)
}
