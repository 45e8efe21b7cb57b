package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/pipeguard/pipeguard/internal/version"
)

// commandName is the name of the command, in its usage and in the first
// word of its messages.
const commandName = "pipeguard-webhook"

// Command is pipeguard-webhook's command line: it parses the arguments
// into CommandOptions, validates them, and serves.
type Command struct {
	ctx context.Context
	// run serves with the options parsed and validated; serve, but for
	// tests, which look at the options instead.
	run            func(context.Context, *CommandOptions) error
	stdout, stderr io.Writer
}

// NewCommand returns pipeguard-webhook's command. It serves until ctx ends.
func NewCommand(ctx context.Context) *Command {
	return newCommand(ctx, serve)
}

func newCommand(ctx context.Context, run func(context.Context, *CommandOptions) error) *Command {
	return &Command{ctx: ctx, run: run, stdout: os.Stdout, stderr: os.Stderr}
}

// Execute runs the command with args (the arguments after the program's
// name) and returns its exit code: 0 once it stopped cleanly, after -h or
// --version too; 2 for flags it cannot use; 1 when it cannot start or
// stops with an error.
func (c *Command) Execute(args []string) int {
	o := &CommandOptions{}
	fs := flag.NewFlagSet(commandName, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		// The flag package has printed the error and the usage.
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(c.stderr, "%s: %v\n", commandName, err)
		return 2
	}
	if o.Version {
		fmt.Fprintln(c.stdout, commandName, version.Get())
		return 0
	}
	if err := c.run(c.ctx, o); err != nil {
		var f *failure
		if !errors.As(err, &f) {
			f = &failure{code: 1, err: err}
		}
		if !f.logged {
			fmt.Fprintf(c.stderr, "%s: %v\n", commandName, f.err)
		}
		return f.code
	}
	return 0
}

// A failure ends the command with its exit code. The command prints it
// on stderr unless it is logged already.
type failure struct {
	code   int
	err    error
	logged bool
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// badFlag is a flag found unusable only once the command runs: exit code
// 2, as for those Validate refuses.
func badFlag(err error) error { return &failure{code: 2, err: err} }

// logged is an error the log reports already: exit code 1.
func logged(err error) error { return &failure{code: 1, err: err, logged: true} }
