package rego_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/pipeguard/pipeguard/rego/regotest"
)

// TestShippedRego runs every _test.rego file shipped in this folder, with
// the semantics of `opa test rego/`.
func TestShippedRego(t *testing.T) {
	results, err := regotest.Run(context.Background(), regotest.Shipped())
	if err != nil {
		t.Fatal(err)
	}
	if len(results) < 10 {
		t.Fatalf("found %d rego tests, want the shipped suite", len(results))
	}
	for _, r := range results {
		t.Run(r.Name, func(t *testing.T) {
			if !r.Pass() {
				var out bytes.Buffer
				_ = tester.PrettyReporter{Output: &out, Verbose: true, FailureLine: true, LocalVars: true}.Report(single(r))
				t.Fatalf("%s", out.String())
			}
		})
	}
}

func single(r *tester.Result) chan *tester.Result {
	ch := make(chan *tester.Result, 1)
	ch <- r
	close(ch)
	return ch
}
