package main

import (
	"regexp"
	"strings"

	"github.com/open-policy-agent/opa/v1/tester"
)

// selectRego keeps the rego test results whose full name,
// data.PACKAGE.test_NAME, re matches, as opa test --run selects them.
func selectRego(re *regexp.Regexp, results []*tester.Result) []*tester.Result {
	var out []*tester.Result
	for _, r := range results {
		if re.MatchString(regoTestName(r)) {
			out = append(out, r)
		}
	}
	return out
}

// regoTestName is the full name of a rego test: data.PACKAGE.test_NAME.
func regoTestName(r *tester.Result) string {
	pkg := r.Package
	if !strings.HasPrefix(pkg, "data.") {
		pkg = "data." + pkg
	}
	return pkg + "." + r.Name
}

// selectSuites keeps, of each suite, the tests whose name or SUITE/TEST
// (the suite's metadata.name) re matches; a suite left with no test is
// dropped. The suites given are not changed.
func selectSuites(re *regexp.Regexp, suites []*suite) []*suite {
	var out []*suite
	for _, s := range suites {
		var tests []suiteTest
		for _, t := range s.Tests {
			if re.MatchString(t.Name) || re.MatchString(s.Metadata.Name+"/"+t.Name) {
				tests = append(tests, t)
			}
		}
		if len(tests) > 0 {
			kept := *s
			kept.Tests = tests
			out = append(out, &kept)
		}
	}
	return out
}
