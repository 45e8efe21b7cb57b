package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/pipeguard/pipeguard/policy"
)

// suiteReport is the outcome of one PolicyTestSuite.
type suiteReport struct {
	File  string       `json:"file"`
	Name  string       `json:"name"`
	Cases []caseResult `json:"cases"`
}

// caseResult is the outcome of one expectation.
type caseResult struct {
	Test     string   `json:"test"`
	Where    string   `json:"where"`  // file:line of the expectation
	Object   string   `json:"object"` // KIND NAMESPACE/NAME as expected
	Want     string   `json:"want"`
	Got      string   `json:"got,omitempty"`
	Pass     bool     `json:"pass"`
	Reason   string   `json:"reason"`
	Messages []string `json:"messages,omitempty"`
}

// runSuite evaluates every test of s. A test whose files, policies or
// manifests cannot be read is an error (exit 2), not a failed case.
func runSuite(ctx context.Context, s *suite, warn func(string)) (suiteReport, error) {
	rep := suiteReport{File: s.file, Name: s.Metadata.Name}
	if rep.Name == "" {
		rep.Name = filepath.Base(s.file)
	}
	for i := range s.Tests {
		t := &s.Tests[i]
		cases, err := runTest(ctx, s.file, t, warn)
		if err != nil {
			return rep, badInput("%s:%d: test %q: %v", s.file, t.line, t.Name, err)
		}
		rep.Cases = append(rep.Cases, cases...)
	}
	return rep, nil
}

func runTest(ctx context.Context, file string, t *suiteTest, warn func(string)) ([]caseResult, error) {
	policyDocs, err := readSources(file, t.Policies, warn, readOptions{kustomize: true, policies: true, unreadHint: suiteUnreadHint})
	if err != nil {
		return nil, err
	}
	pols, err := policiesFrom(policyDocs, "policies")
	if err != nil {
		return nil, err
	}
	if len(t.Policies) > 0 && len(pols) == 0 {
		return nil, fmt.Errorf("its policies hold no PipeAccessPolicy; leave policies out for the built-in default policy")
	}
	engine, err := newEngine(ctx, pols)
	if err != nil {
		return nil, err
	}
	docs, err := readSources(file, t.Manifests, warn, readOptions{unreadHint: suiteUnreadHint})
	if err != nil {
		return nil, err
	}
	ns := t.Namespace
	if ns == "" {
		ns = "default"
	}
	results, err := newEvaluator(engine, docs, t.NamespaceLabels, ns).evaluateAll(ctx, docs)
	if err != nil {
		return nil, err
	}
	cases := make([]caseResult, 0, len(t.Expect))
	for i := range t.Expect {
		cases = append(cases, check(file, t.Name, &t.Expect[i], results))
	}
	return cases, nil
}

// suiteUnreadHint is what the warning about the subdirectories of a
// suite's directory entry that were not read tells to do.
const suiteUnreadHint = "list each as a file: entry of its own"

// readSources reads the objects of a test's policies or manifests: files
// relative to the suite's file, or inline.
func readSources(file string, sources []suiteSource, warn func(string), opts readOptions) ([]document, error) {
	var docs []document
	for _, src := range sources {
		if src.File != "" {
			path := src.File
			if !filepath.IsAbs(path) {
				path = filepath.Join(filepath.Dir(file), path)
			}
			more, err := readManifests([]string{path}, strings.NewReader(""), warn, opts)
			if err != nil {
				return nil, err
			}
			docs = append(docs, more...)
			continue
		}
		more, err := inlineObjects(file, &src.Inline, warn)
		if err != nil {
			return nil, err
		}
		docs = append(docs, more...)
	}
	return docs, nil
}

// inlineObjects reads inline: one object, or a sequence of them.
func inlineObjects(file string, n *yaml.Node, warn func(string)) ([]document, error) {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	var docs []document
	for _, item := range items {
		where := fmt.Sprintf("%s:%d (inline)", file, item.Line)
		b, err := yaml.Marshal(item)
		if err != nil {
			return nil, badInput("%s: %v", where, err)
		}
		more, err := splitDocuments(where, b, warn)
		if err != nil {
			return nil, err
		}
		docs = append(docs, more...)
	}
	return docs, nil
}

// check compares one object's decision with the expectation.
func check(file, test string, e *expectation, results []evalResult) caseResult {
	c := caseResult{Test: test, Where: fmt.Sprintf("%s:%d", file, e.line), Object: e.Kind + " " + e.Name, Want: e.Decision}
	if e.Namespace != "" {
		c.Object = e.Kind + " " + e.Namespace + "/" + e.Name
	}
	var found []evalResult
	for _, r := range results {
		if r.Kind == e.Kind && r.Name == e.Name && (e.Namespace == "" || r.Namespace == e.Namespace) {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		c.Reason = fmt.Sprintf("no %s among the test's manifests", c.Object)
		return c
	case 1:
	default:
		var refs []string
		for _, r := range found {
			refs = append(refs, r.Namespace+"/"+r.Name)
		}
		c.Reason = fmt.Sprintf("%s matches %d objects (%s); give the namespace", c.Object, len(found), strings.Join(refs, ", "))
		return c
	}
	r := found[0]
	if r.Namespace != "" {
		c.Object = r.Kind + " " + r.Namespace + "/" + r.Name
	}
	c.Got = string(r.Decision)
	c.Messages = messages(r)
	if !e.holds(r.Decision) {
		c.Reason = fmt.Sprintf("want %s, got %s", e.Decision, c.Got)
		return c
	}
	if e.re != nil {
		matched := false
		for _, m := range c.Messages {
			matched = matched || e.re.MatchString(m)
		}
		if !matched {
			c.Reason = fmt.Sprintf("%s as expected, but no message matches /%s/", e.Decision, e.Message)
			return c
		}
		c.Pass, c.Reason = true, fmt.Sprintf("%s as expected, message matches /%s/", e.Decision, e.Message)
		return c
	}
	c.Pass, c.Reason = true, e.Decision+" as expected"
	return c
}

// holds reports whether the decision d is the one expected: the same, or
// a dryrun where allow is expected, since admission admits it.
func (e *expectation) holds(d evalDecision) bool {
	return string(d) == e.Decision || (e.Decision == string(policy.Allow) && d == decided(policy.DryRun))
}

// messages are what admission would tell about r: deny and warn messages,
// dryrun findings, or why it was not reviewed.
func messages(r evalResult) []string {
	var out []string
	if r.Reason != "" {
		out = append(out, r.Reason)
	}
	out = append(out, policy.Messages(r.Deny)...)
	for _, m := range policy.Messages(r.Warn) {
		out = append(out, "warning: "+m)
	}
	for _, m := range policy.Messages(r.DryRun) {
		out = append(out, "dryrun: "+m)
	}
	return out
}

// printSuites lists every case PASS or FAIL with its reason, a failure
// with the messages admission gave, then the totals as opa test does.
func printSuites(w io.Writer, reports []suiteReport) (passed, failed int) {
	for _, rep := range reports {
		fmt.Fprintf(w, "%s: %s %s\n", rep.File, suiteKind, rep.Name)
		test := ""
		for _, c := range rep.Cases {
			if c.Test != test {
				test = c.Test
				fmt.Fprintf(w, "  %s\n", test)
			}
			status := "PASS"
			if c.Pass {
				passed++
			} else {
				status = "FAIL"
				failed++
			}
			fmt.Fprintf(w, "    %s  %s: %s\n", status, c.Object, c.Reason)
			if !c.Pass {
				fmt.Fprintf(w, "          at %s\n", c.Where)
				for _, m := range c.Messages {
					fmt.Fprintf(w, "          %s\n", strings.ReplaceAll(m, "\n", "\n          "))
				}
			}
		}
	}
	total := passed + failed
	fmt.Fprintln(w, strings.Repeat("-", 80))
	fmt.Fprintf(w, "PASS: %d/%d\n", passed, total)
	if failed > 0 {
		fmt.Fprintf(w, "FAIL: %d/%d\n", failed, total)
	}
	return passed, failed
}
