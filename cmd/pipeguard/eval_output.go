package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/pipeguard/pipeguard/policy"
)

// evalOutput is what policy eval -o json and -o yaml print: every result,
// then the counts the table's summary line gives.
type evalOutput struct {
	Results []evalResult `json:"results"`
	Summary evalSummary  `json:"summary"`
}

// evalSummary counts the results as the table's summary line does: a
// dryrun admits the object, so it counts as allowed.
type evalSummary struct {
	Denied  int `json:"denied"`
	Warned  int `json:"warned"`
	Allowed int `json:"allowed"`
	Skipped int `json:"skipped"`
}

// printEvalStructured writes results as an evalOutput in format (json or
// yaml).
func printEvalStructured(w io.Writer, format string, results []evalResult) error {
	t := count(results)
	if results == nil {
		results = []evalResult{}
	}
	return printStructured(w, format, evalOutput{
		Results: results,
		Summary: evalSummary{Denied: t.denied, Warned: t.warned, Allowed: t.allowed, Skipped: t.skipped},
	})
}

// tally counts the decisions.
type tally struct{ denied, warned, allowed, skipped int }

func count(results []evalResult) tally {
	var t tally
	for _, r := range results {
		switch r.word() {
		case decisionDeny:
			t.denied++
		case decisionWarn:
			t.warned++
		case decisionAllow:
			t.allowed++
		default:
			t.skipped++
		}
	}
	return t
}

func (t tally) String() string {
	return fmt.Sprintf("%d denied, %d warned, %d allowed, %d skipped", t.denied, t.warned, t.allowed, t.skipped)
}

// printResults prints one block per object, then the summary line.
func printResults(w io.Writer, results []evalResult) {
	for _, r := range results {
		ref := r.Name
		if r.Namespace != "" && ref != "" {
			ref = r.Namespace + "/" + ref
		}
		if ref == "" {
			ref = "(" + r.Source + ")"
		}
		if r.Kind == "" {
			fmt.Fprintf(w, "%s %s\n", r.word(), ref)
		} else {
			fmt.Fprintf(w, "%s %s %s\n", r.word(), r.Kind, ref)
		}
		if r.Reason != "" {
			fmt.Fprintf(w, "    %s\n", r.Reason)
		}
		for _, m := range policy.Messages(r.Deny) {
			fmt.Fprintf(w, "    %s\n", indent(m))
		}
		for _, m := range policy.Messages(r.Warn) {
			fmt.Fprintf(w, "    warning: %s\n", indent(m))
		}
		for _, m := range policy.Messages(r.DryRun) {
			fmt.Fprintf(w, "    dryrun: %s\n", indent(m))
		}
	}
	fmt.Fprintf(w, "\nSummary: %s\n", count(results))
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n    ") }
