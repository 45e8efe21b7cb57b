package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pipeguard/pipeguard/internal/version"
)

// streams are the standard streams a command reads and writes.
type streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// exitError ends a command with an exit code. Its error, if any, is
// printed after the command's name; a usage error also points at --help.
type exitError struct {
	code  int
	err   error
	usage bool
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit code %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitCode ends a command with code and nothing more to say: what went
// wrong is already in its output.
func exitCode(code int) error { return &exitError{code: code} }

// inputFailure is bad input (exit 2): a file that cannot be read, a
// manifest or policy that is not valid.
// An error that already says how the command ends is returned as it is.
func inputFailure(err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{code: exitBadInput, err: err}
}

// usageFailure is a command line that cannot work (exit 2).
func usageFailure(format string, args ...any) error {
	return &exitError{code: exitBadInput, err: fmt.Errorf(format, args...), usage: true}
}

func runAs(name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	s := streams{In: stdin, Out: stdout, ErrOut: stderr}
	root := newRootCommand(name, s)
	root.SetArgs(singleDashLongFlags(root, args, stderr))
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	if cmd == nil {
		cmd = root
	}
	var ee *exitError
	if !errors.As(err, &ee) {
		// cobra's and pflag's own errors: the command line is wrong.
		ee = &exitError{code: exitBadInput, err: err, usage: true}
	}
	if ee.err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), ee.err)
	}
	if ee.usage {
		fmt.Fprintf(stderr, "See '%s --help' for usage.\n", cmd.CommandPath())
	}
	return ee.code
}

func newRootCommand(name string, s streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "pipeguard",
		Short: "Review pipe access policies and pipeguard-agent audit logs",
		Long: `pipeguard is the admin CLI of pipeguard, which guards the Windows named pipes
of CSI Proxy on Kubernetes.

It evaluates manifests against PipeAccessPolicies offline, as the admission
webhook would decide on them; runs rego tests and PolicyTestSuite files; and
queries, summarizes and verifies the audit logs of pipeguard-agent.

Installed on the PATH as kubectl-pipeguard, it is also a kubectl plugin:
kubectl pipeguard ...`,
		Example: examples(name, `
  # Evaluate a manifest against the default policy
  %[1]s policy eval -f daemonset.yaml

  # Run a policy test suite
  %[1]s policy test docs/examples/policy-test-suite.yaml

  # Verify an agent's audit log
  %[1]s audit verify /var/log/pipeguard/audit.log

  # Load completion into bash
  source <(%[1]s completion bash)`),
		Version:       version.Get().String(),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.ArbitraryArgs, // groupRun names an unknown command
		RunE:          groupRun,
	}
	if name != "pipeguard" {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: name}
	}
	root.Flags().Bool("version", false, "print the version and exit")
	root.SetVersionTemplate("pipeguard {{.Version}}\n")
	root.SetUsageTemplate(usageTemplate)
	root.SetFlagErrorFunc(flagError)
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	root.AddCommand(newPolicyCommand(name, s), newAuditCommand(name, s), newVersionCommand(name, s))
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.RunE = groupRun
			c.Example = examples(name, completionExamples["completion"])
			for _, shell := range c.Commands() {
				shell.Example = examples(name, completionExamples[shell.Name()])
			}
		}
	}
	return root
}

// completionExamples are the examples of cobra's completion commands.
var completionExamples = map[string]string{
	"completion": `
  # Completion for this bash session; see "completion SHELL --help" for the other shells
  source <(%[1]s completion bash)`,
	"bash": `
  source <(%[1]s completion bash)`,
	"zsh": `
  %[1]s completion zsh > "${fpath[1]}/_pipeguard"`,
	"fish": `
  %[1]s completion fish > ~/.config/fish/completions/pipeguard.fish`,
	"powershell": `
  %[1]s completion powershell | Out-String | Invoke-Expression`,
}

// groupRun is the Run of a command that only groups others: alone it
// prints its help; with an argument, that is not one of its commands.
func groupRun(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return c.Help()
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2
	}
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", s[0])
	}
	return usageFailure("%s", msg)
}

// flagError makes pflag's messages about a mistyped flag say what to type.
func flagError(c *cobra.Command, err error) error {
	msg := err.Error()
	// pflag reads -name as the short flags -n -a -m -e.
	if _, arg, ok := strings.Cut(msg, "unknown shorthand flag: "); ok {
		if _, token, ok := strings.Cut(arg, " in "); ok && len(token) > 2 {
			name, _, _ := strings.Cut(strings.TrimPrefix(token, "-"), "=")
			return usageFailure("unknown flag %s: long flags take two dashes, and %s has no flag --%s", token, c.CommandPath(), name)
		}
	}
	return &exitError{code: exitBadInput, err: err, usage: true}
}

// examples formats a command's examples with the name it is run as.
func examples(name, text string) string {
	return strings.TrimPrefix(fmt.Sprintf(text, name), "\n")
}

// usageTemplate is cobra's, except that a command grouping others shows
// only "CMD [command]" as its usage.
const usageTemplate = `Usage:{{if and .Runnable (not .HasAvailableSubCommands)}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

Available Commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableInheritedFlags}}

Global Flags:
{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasHelpSubCommands}}

Additional help topics:{{range .Commands}}{{if .IsAdditionalHelpTopicCommand}}
  {{rpad .CommandPath .CommandPathPadding}} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableSubCommands}}

Use "{{.CommandPath}} [command] --help" for more information about a command.{{end}}
`
