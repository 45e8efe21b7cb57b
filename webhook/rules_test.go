package webhook_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/pipeguard/pipeguard/rego"
	"github.com/pipeguard/pipeguard/webhook"
)

// TestRulesIndexEveryDeny: webhook.Rules lists exactly the rule ids that
// the shipped rego can emit and those that Go code denies with, each with
// the file that decides it.
func TestRulesIndexEveryDeny(t *testing.T) {
	want := map[string]string{} // rule id -> file that decides it
	for _, f := range rego.Admission() {
		for _, id := range regoRuleIDs(t, f) {
			want[id] = "rego/" + f.Name
		}
	}
	for file, ids := range goRuleIDs(t) {
		for _, id := range ids {
			want[id] = file
		}
	}
	got := map[string]string{}
	for _, r := range webhook.Rules() {
		if _, dup := got[r.ID]; dup {
			t.Errorf("rule %q is listed twice", r.ID)
		}
		if r.Denies == "" {
			t.Errorf("rule %q does not say what it denies", r.ID)
		}
		got[r.ID] = r.DecidedIn
	}
	for id, file := range want {
		switch decided, ok := got[id]; {
		case !ok:
			t.Errorf("rule %q, decided in %s, is missing from webhook.Rules", id, file)
		case decided != file:
			t.Errorf("webhook.Rules says rule %q is decided in %s; it is decided in %s", id, decided, file)
		}
	}
	for id, file := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("webhook.Rules lists rule %q in %s, which nothing decides", id, file)
		}
	}
}

// regoRuleIDs returns the rule ids the violations built in a rego file can
// carry: the literals rule_id returns, literals written in place, and
// AdminRules for violations named after the policy whose rego reported
// them.
func regoRuleIDs(t *testing.T, f rego.File) []string {
	t.Helper()
	mod, err := ast.ParseModuleWithOpts(f.Name, f.Source, ast.ParserOptions{})
	if err != nil {
		t.Fatal(err)
	}
	returned := map[string][]string{} // function name -> the string literals it returns
	for _, r := range mod.Rules {
		for ; r != nil; r = r.Else {
			if r.Head.Value == nil || len(r.Head.Args) == 0 {
				continue
			}
			if s, ok := r.Head.Value.Value.(ast.String); ok {
				name := r.Head.Ref().String()
				returned[name] = append(returned[name], string(s))
			}
		}
	}
	var ids []string
	for _, r := range mod.Rules {
		name := r.Head.Ref().String()
		ast.WalkTerms(r, func(term *ast.Term) bool {
			obj, ok := term.Value.(ast.Object)
			if !ok {
				return false
			}
			rule := obj.Get(ast.StringTerm("rule"))
			if rule == nil {
				return false
			}
			switch v := rule.Value.(type) {
			case ast.String:
				ids = append(ids, string(v))
			case ast.Call:
				fn := v[0].String()
				if len(returned[fn]) == 0 {
					t.Errorf("%s: rule %s names its violations with %s, which returns no string literal", f.Name, name, rule)
				}
				ids = append(ids, returned[fn]...)
			case ast.Var:
				if name != "custom_defaults" || !slices.ContainsFunc(r.Head.Args, func(a *ast.Term) bool { return a.Equal(rule) }) {
					t.Errorf("%s: rule %s names its violations %s, which the index cannot follow", f.Name, name, rule)
				}
				ids = append(ids, webhook.AdminRules)
			default:
				t.Errorf("%s: rule %s names its violations %s, which the index cannot follow", f.Name, name, rule)
			}
			return false
		})
	}
	if len(ids) == 0 {
		t.Fatalf("%s: found no rule ids", f.Name)
	}
	return ids
}

// goRuleIDs returns, by file, the rule ids of the messages that the
// package's Go code denies with, written as a message's "[id] " prefix or
// as the Rule of a policy.Violation it builds. Only handler.go denies
// otherwise, with the messages of the rego decision.
func goRuleIDs(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	ruleID := regexp.MustCompile(`"\[([a-z0-9-]+)\] |Rule:\s+"([a-z0-9-]+)"`)
	out := map[string][]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range ruleID.FindAllSubmatch(src, -1) {
			ids = append(ids, string(m[1])+string(m[2]))
		}
		denies := strings.Count(string(src), "admission.Denied(")
		switch {
		case name == "handler.go":
			if len(ids) > 0 {
				t.Errorf("handler.go denies with rule ids %q of its own", ids)
			}
		case denies > 0 && len(ids) == 0:
			t.Errorf("%s denies requests without a rule id", name)
		case len(ids) > 0:
			out["webhook/"+name] = ids
		}
	}
	return out
}
