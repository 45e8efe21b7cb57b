package runnertest

import (
	"fmt"
	"strings"

	"github.com/pipeguard/pipeguard/internal/testing/hostile"
)

// Hostile returns strings that would change the meaning of a PowerShell or
// cmd command line if they were pasted into it (hostile.CommandLine). The
// injection tests of the Windows host operations send each of them in every
// request field.
func Hostile() []string { return hostile.CommandLine() }

// CheckNoText returns an error if s occurs in the program or arguments of
// any recorded command: request values must travel in the environment only.
func (f *Fake) CheckNoText(s string) error {
	for _, c := range f.Commands() {
		if strings.Contains(c.Program, s) {
			return fmt.Errorf("program %q contains %q", c.Program, s)
		}
		for _, a := range c.Args {
			if strings.Contains(a, s) {
				return fmt.Errorf("argument %q contains %q", a, s)
			}
		}
	}
	return nil
}

// CheckInEnv returns an error unless every recorded command carries s inside
// the value of one of its environment variables.
func (f *Fake) CheckInEnv(s string) error {
	cmds := f.Commands()
	if len(cmds) == 0 {
		return fmt.Errorf("no command ran with %q", s)
	}
	for _, c := range cmds {
		found := false
		for _, e := range c.Env {
			if _, v, ok := strings.Cut(e, "="); ok && strings.Contains(v, s) {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%q is not in the environment %q", s, c.Env)
		}
	}
	return nil
}
