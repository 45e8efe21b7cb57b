// Command pipeguard is the admin CLI: evaluate manifests against pipe access
// policies and run rego tests offline, and query, summarize and verify
// pipeguard-agent audit logs.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/pipeguard/pipeguard/internal/version"
)

// Exit codes shared by every subcommand.
const (
	exitOK       = 0
	exitDenied   = 1 // policy eval: something was denied; policy test: a test failed
	exitBadInput = 2
)

const usage = `pipeguard: admin CLI for pipeguard.

Usage:
  pipeguard policy eval -f FILE [-f FILE...] [--policy FILE...] [--namespace-labels NS=k=v,...] [--namespace NS] [-o text|json]
  pipeguard policy eval --cluster [--kubeconfig FILE] [-o text|json]
  pipeguard policy test [DIR...] [-v]
  pipeguard audit query [PATH|-] [--since T] [--until T] [--pod P] [--namespace NS] [--caller C] [--method M] [--decision allow|deny] [-o table|json] [--follow]
  pipeguard audit summary [PATH|-] [filters] [--top N]
  pipeguard audit verify [PATH|-] [--kubeconfig FILE --node NODE]
  pipeguard version

Run "pipeguard <command> <subcommand> -h" for details.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "version" || args[0] == "--version" || args[0] == "-version") {
		fmt.Fprintln(stdout, "pipeguard", version.Get())
		return exitOK
	}
	if len(args) == 2 && (args[0] == "audit" || args[0] == "policy") && (args[1] == "-h" || args[1] == "--help" || args[1] == "help") {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	if len(args) >= 2 && args[0] == "audit" {
		return auditCommand(args[1], args[2:], stdin, stdout, stderr)
	}
	if len(args) < 2 || args[0] != "policy" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		fmt.Fprint(stderr, usage)
		return exitBadInput
	}
	switch args[1] {
	case "eval":
		return policyEval(args[2:], stdin, stdout, stderr)
	case "test":
		return policyTest(args[2:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "pipeguard: unknown command %q\n\n%s", "policy "+args[1], usage)
	return exitBadInput
}
