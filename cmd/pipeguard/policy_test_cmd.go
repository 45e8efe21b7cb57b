package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/spf13/cobra"

	shipped "github.com/pipeguard/pipeguard/rego"
	"github.com/pipeguard/pipeguard/rego/regotest"
)

// testOptions are the flags of pipeguard policy test.
type testOptions struct {
	verbose bool
	output  string
	paths   []string
	run     string         // --run REGEX
	runRe   *regexp.Regexp // compiled --run; nil runs every test

	cmdPath string // as the messages name the command
}

func newPolicyTestCommand(name string, s streams) *cobra.Command {
	o := &testOptions{}
	c := &cobra.Command{
		Use:   "test [DIR|FILE...]",
		Short: "Run rego tests and PolicyTestSuite files",
		Long: `Runs rego tests like opa test, and PolicyTestSuite files.

Without arguments it runs the tests of the shipped rules. Each argument is
a .rego file, a PolicyTestSuite file (.yaml, .yml) or a directory, in which
every .rego file and every PolicyTestSuite file below it is taken (other
YAML files there, such as the manifests a suite names, are left alone).

Rego files are loaded together with the shipped rules, so tests (rules
named test_*) can exercise whole decisions through data.pipeguard.admission.

A PolicyTestSuite names manifests, namespace labels and policies, and the
decision expected on each object (allow, warn, dryrun, deny or skip, and
optionally a regular expression its message must match); every expectation is
listed PASS or FAIL with the reason. See docs/cli.md for the format.

--run REGEX runs only the rego tests whose full name (data.PACKAGE.test_NAME)
matches the regular expression, and the suite tests whose name, or
SUITE/TEST (the suite's metadata.name), matches it, as opa test --run does.

Exit code: 0 all passed, 1 a test failed, 2 the rego or a suite does not
load, or --run matches no test.`,
		Example: examples(name, `
  # The shipped rules' tests
  %[1]s policy test

  # Your rules' tests and the suites beside them, every test listed
  %[1]s policy test ./policies -v

  # One suite
  %[1]s policy test docs/examples/policy-test-suite.yaml

  # Only the tests whose names match a regular expression
  %[1]s policy test ./policies --run 'smb|warn before enforcing'`),
		RunE: func(c *cobra.Command, args []string) error {
			o.paths, o.cmdPath = args, c.CommandPath()
			if err := checkOutput(o.output, outputTable, outputJSON, outputYAML); err != nil {
				return err
			}
			if c.Flags().Changed("run") {
				re, err := regexp.Compile(o.run)
				if err != nil {
					return usageFailure("--run %q is not a regular expression: %v", o.run, err)
				}
				o.runRe = re
			}
			return o.runTests(c.Context(), s)
		},
	}
	c.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "list every rego test, not only the failures (suites list every case)")
	addOutputFlag(c, &o.output, "json and yaml list every test and case", outputTable, outputJSON, outputYAML)
	c.Flags().StringVar(&o.run, "run", "", "run only the tests that match `REGEX`: rego tests by full name (data.PACKAGE.test_NAME), suite tests by name or SUITE/TEST")
	return c
}

// testReport is what -o json and -o yaml print.
type testReport struct {
	Rego   []regoResult  `json:"rego,omitempty"`
	Suites []suiteReport `json:"suites,omitempty"`
	Passed int           `json:"passed"`
	Failed int           `json:"failed"`
}

// regoResult is one rego test rule's outcome.
type regoResult struct {
	Package  string `json:"package"`
	Name     string `json:"name"`
	Location string `json:"location,omitempty"`
	Pass     bool   `json:"pass"`
	Skip     bool   `json:"skip,omitempty"`
	Error    string `json:"error,omitempty"`
	Output   string `json:"output,omitempty"`
}

func (o *testOptions) runTests(ctx context.Context, s streams) error {
	var regoFiles []shipped.File
	var suiteFiles []string
	if len(o.paths) == 0 {
		regoFiles = regotest.Shipped()
	} else {
		regoPaths, suitePaths, err := collectTests(o.paths)
		if err != nil {
			return err
		}
		suiteFiles = suitePaths
		if len(regoPaths) > 0 {
			loaded, err := regotest.Load(regoPaths...)
			if err != nil {
				return inputFailure(err)
			}
			regoFiles = regotest.WithShippedRules(loaded)
		}
	}
	var regoResults []*tester.Result
	if len(regoFiles) > 0 {
		var err error
		if regoResults, err = regotest.Run(ctx, regoFiles); err != nil {
			return inputFailure(err)
		}
	}
	// Read every suite before running any: a broken one stops the run.
	var suites []*suite
	for _, f := range suiteFiles {
		more, err := readSuites(f)
		if err != nil {
			return err
		}
		suites = append(suites, more...)
	}
	if len(regoResults) == 0 && len(suites) == 0 {
		return badInput("no tests found (rego test rules are named test_*; suites are %s files)", suiteKind)
	}
	if o.runRe != nil {
		regoResults, suites = selectRego(o.runRe, regoResults), selectSuites(o.runRe, suites)
		if len(regoResults) == 0 && len(suites) == 0 {
			return badInput("no tests match --run %q: rego tests are matched by their full name (data.PACKAGE.test_NAME), suite tests by their name or SUITE/TEST", o.run)
		}
	}
	warn := func(msg string) { fmt.Fprintf(s.ErrOut, "%s: warning: %s\n", o.cmdPath, msg) }
	var reports []suiteReport
	for _, st := range suites {
		rep, err := runSuite(ctx, st, warn)
		if err != nil {
			return err
		}
		reports = append(reports, rep)
	}

	failed := 0
	if o.output == outputTable {
		if len(regoResults) > 0 {
			ch := make(chan *tester.Result, len(regoResults))
			for _, r := range regoResults {
				ch <- r
			}
			close(ch)
			reporter := tester.PrettyReporter{Output: s.Out, Verbose: o.verbose, FailureLine: true, LocalVars: true}
			if err := reporter.Report(ch); err != nil {
				return inputFailure(err)
			}
			if len(reports) > 0 {
				fmt.Fprintln(s.Out)
			}
		}
		if len(reports) > 0 {
			_, failed = printSuites(s.Out, reports)
		}
		for _, r := range regoResults {
			if !r.Pass() && !r.Skip {
				failed++
			}
		}
	} else {
		rep := testReport{Rego: make([]regoResult, 0, len(regoResults)), Suites: reports}
		for _, r := range regoResults {
			rr := regoResult{Package: strings.TrimPrefix(r.Package, "data."), Name: r.Name, Pass: r.Pass(), Skip: r.Skip, Output: string(r.Output)}
			if r.Location != nil {
				rr.Location = fmt.Sprintf("%s:%d", r.Location.File, r.Location.Row)
			}
			if r.Error != nil {
				rr.Error = r.Error.Error()
			}
			if rr.Pass || rr.Skip {
				rep.Passed++
			} else {
				rep.Failed++
			}
			rep.Rego = append(rep.Rego, rr)
		}
		for _, sr := range reports {
			for _, c := range sr.Cases {
				if c.Pass {
					rep.Passed++
				} else {
					rep.Failed++
				}
			}
		}
		failed = rep.Failed
		if err := printStructured(s.Out, o.output, rep); err != nil {
			return err
		}
	}
	if failed > 0 {
		return exitCode(exitDenied)
	}
	return nil
}

// collectTests sorts the arguments into rego files and suite files.
func collectTests(paths []string) (rego, suites []string, err error) {
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, nil, badInput("cannot read %s: %v", p, err)
		}
		if !info.IsDir() {
			switch ext := strings.ToLower(filepath.Ext(p)); ext {
			case ".rego":
				rego = append(rego, p)
			case ".yaml", ".yml":
				data, err := os.ReadFile(p)
				if err != nil {
					return nil, nil, badInput("cannot read %s: %v", p, err)
				}
				if !isSuite(data) {
					return nil, nil, badInput("%s: not a %s: want a file of apiVersion %s, kind %s", p, suiteKind, suiteAPIVersion, suiteKind)
				}
				suites = append(suites, p)
			default:
				return nil, nil, badInput("%s: want a .rego file, a %s file (.yaml or .yml) or a directory", p, suiteKind)
			}
			continue
		}
		var foundRego, foundSuites []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			switch strings.ToLower(filepath.Ext(path)) {
			case ".rego":
				foundRego = append(foundRego, path)
			case ".yaml", ".yml":
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				if isSuite(data) {
					foundSuites = append(foundSuites, path)
				}
			}
			return nil
		})
		if err != nil {
			return nil, nil, badInput("cannot read the tests under %s: %v", p, err)
		}
		if len(foundRego) == 0 && len(foundSuites) == 0 {
			return nil, nil, badInput("no .rego files or %s files under %s", suiteKind, p)
		}
		sort.Strings(foundRego)
		sort.Strings(foundSuites)
		rego, suites = append(rego, foundRego...), append(suites, foundSuites...)
	}
	return rego, suites, nil
}
