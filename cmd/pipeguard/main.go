// Command pipeguard is the admin CLI: evaluate manifests against pipe access
// policies and run rego tests and test suites offline, and query, summarize
// and verify pipeguard-agent audit logs. Installed as kubectl-pipeguard it
// is also a kubectl plugin: kubectl pipeguard ...
package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Exit codes shared by every subcommand.
const (
	exitOK       = 0
	exitDenied   = 1 // policy eval: something was denied; policy test: a test failed; audit verify: the chain is broken
	exitBadInput = 2 // usage or input error
)

func main() {
	os.Exit(runAs(commandName(os.Args[0]), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run runs the CLI as "pipeguard" and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runAs("pipeguard", args, stdin, stdout, stderr)
}

// commandName is how help and messages name the command: "kubectl
// pipeguard" when the binary was installed as the kubectl plugin
// kubectl-pipeguard, else "pipeguard".
func commandName(arg0 string) string {
	base := strings.TrimSuffix(strings.ToLower(filepath.Base(arg0)), ".exe")
	if strings.HasPrefix(base, "kubectl-") {
		// kubectl's plugin naming: a dash separates words, an underscore
		// stands for a dash (kubectl-pipe_guard is kubectl pipe-guard).
		name := strings.ReplaceAll(strings.TrimPrefix(base, "kubectl-"), "-", " ")
		return "kubectl " + strings.ReplaceAll(name, "_", "-")
	}
	return "pipeguard"
}
