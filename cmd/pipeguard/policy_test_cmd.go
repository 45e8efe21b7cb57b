package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/open-policy-agent/opa/v1/tester"

	shipped "github.com/pipeguard/pipeguard/rego"
	"github.com/pipeguard/pipeguard/rego/regotest"
)

func policyTest(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pipeguard policy test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	verbose := fs.Bool("v", false, "report every test, not only failures")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: pipeguard policy test [DIR|FILE...] [-v]\n\nRuns rego tests like `opa test`. Without arguments it runs the shipped\nrules' tests; with arguments, the .rego files there are loaded together\nwith the shipped rules, so tests can exercise whole decisions through\ndata.pipeguard.admission.\nExit code: 0 all passed, 1 a test failed, 2 the rego does not load or compile.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitBadInput
	}
	var files []shipped.File
	if fs.NArg() == 0 {
		files = regotest.Shipped()
	} else {
		loaded, err := regotest.Load(fs.Args()...)
		if err != nil {
			fmt.Fprintf(stderr, "pipeguard policy test: %v\n", err)
			return exitBadInput
		}
		files = regotest.WithShippedRules(loaded)
	}
	results, err := regotest.Run(context.Background(), files)
	if err != nil {
		fmt.Fprintf(stderr, "pipeguard policy test: %v\n", err)
		return exitBadInput
	}
	if len(results) == 0 {
		fmt.Fprintln(stderr, "pipeguard policy test: no tests found (test rules are named test_*)")
		return exitBadInput
	}
	ch := make(chan *tester.Result, len(results))
	failed := false
	for _, r := range results {
		failed = failed || !r.Pass()
		ch <- r
	}
	close(ch)
	reporter := tester.PrettyReporter{Output: stdout, Verbose: *verbose, FailureLine: true, LocalVars: true}
	if err := reporter.Report(ch); err != nil {
		fmt.Fprintf(stderr, "pipeguard policy test: %v\n", err)
		return exitBadInput
	}
	if failed {
		return exitDenied
	}
	return exitOK
}
