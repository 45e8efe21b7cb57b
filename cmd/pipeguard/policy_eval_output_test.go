package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/policy"
)

// policyFile writes a PipeAccessPolicy named name with the enforcement
// action given into a directory of t's and returns its path.
func policyFile(t *testing.T, name string, action policy.Verdict) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name+".yaml")
	writeFile(t, p, "apiVersion: pipeguard.io/v1alpha1\nkind: PipeAccessPolicy\nmetadata: {name: "+name+"}\nspec:\n  pipes: ['csi-proxy-*']\n  enforcementAction: "+string(action)+"\n")
	return p
}

// TestPolicyEvalJSONShape: -o json is an object with results and summary;
// each decision is spelled as policy.Verdict spells it (a dryrun is
// "dryrun", not the table's ALLOW) or "skip"; the summary counts as the
// table's summary line does.
func TestPolicyEvalJSONShape(t *testing.T) {
	stdin := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n" + pipePod
	for action, want := range map[policy.Verdict]struct {
		table   string
		summary evalSummary
		code    int
	}{
		policy.Deny:   {"DENY Pod team-a/sneaky", evalSummary{Denied: 1, Skipped: 1}, 1},
		policy.Warn:   {"WARN Pod team-a/sneaky", evalSummary{Warned: 1, Skipped: 1}, 0},
		policy.DryRun: {"ALLOW Pod team-a/sneaky", evalSummary{Allowed: 1, Skipped: 1}, 0},
	} {
		t.Run(string(action), func(t *testing.T) {
			pol := policyFile(t, "p", action)
			code, table, _ := runCLI(t, stdin, "policy", "eval", "-f", "-", "--policy", pol)
			if code != want.code || !strings.Contains(table, "\n"+want.table+"\n") {
				t.Fatalf("table: exit %d, want %d and a line %q:\n%s", code, want.code, want.table, table)
			}
			code, out, errOut := runCLI(t, stdin, "policy", "eval", "-f", "-", "--policy", pol, "-o", "json")
			if code != want.code {
				t.Fatalf("-o json: exit %d, want %d: %s", code, want.code, errOut)
			}
			var raw map[string]json.RawMessage
			if err := json.Unmarshal([]byte(out), &raw); err != nil || len(raw) != 2 || raw["results"] == nil || raw["summary"] == nil {
				t.Fatalf("-o json is not {results, summary} (%v):\n%s", err, out)
			}
			var doc struct {
				Results []map[string]any `json:"results"`
				Summary map[string]int   `json:"summary"`
			}
			dec := json.NewDecoder(bytes.NewReader([]byte(out)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&doc); err != nil {
				t.Fatal(err)
			}
			if got := []any{doc.Results[0]["decision"], doc.Results[1]["decision"]}; got[0] != "skip" || got[1] != string(action) {
				t.Errorf("decisions %v, want [skip %s]", got, action)
			}
			wantSummary := map[string]int{"denied": want.summary.Denied, "warned": want.summary.Warned, "allowed": want.summary.Allowed, "skipped": want.summary.Skipped}
			if len(doc.Summary) != 4 {
				t.Errorf("summary %v, want the keys denied, warned, allowed and skipped", doc.Summary)
			}
			for k, v := range wantSummary {
				if doc.Summary[k] != v {
					t.Errorf("summary %v, want %v", doc.Summary, wantSummary)
				}
			}
		})
	}
}

// TestPolicyEvalJSONEmpty: no objects still print a results list and a
// summary, never null.
func TestPolicyEvalJSONEmpty(t *testing.T) {
	code, out, _ := runCLI(t, "# nothing\n", "policy", "eval", "-f", "-", "-o", "json")
	want := "{\n  \"results\": [],\n  \"summary\": {\n    \"denied\": 0,\n    \"warned\": 0,\n    \"allowed\": 0,\n    \"skipped\": 0\n  }\n}\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d:\n%s\nwant:\n%s", code, out, want)
	}
}

// TestDocumentedJSON: the -o json example in docs/cli.md is what the CLI
// prints for it.
func TestDocumentedJSON(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	const cmd = "$ pipeguard policy eval -f docs/examples/pod.yaml -o json\n"
	_, rest, ok := strings.Cut(string(doc), cmd)
	if !ok {
		t.Fatalf("docs/cli.md has no example %q", cmd)
	}
	documented, _, _ := strings.Cut(rest, "```")
	code, out, errOut := runCLI(t, "", "policy", "eval", "-f", "../../docs/examples/pod.yaml", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	out = strings.ReplaceAll(out, "../../docs/", "docs/")
	var a, b any
	if err := yaml.Unmarshal([]byte(documented), &a); err != nil {
		t.Fatalf("the example in docs/cli.md is not JSON: %v", err)
	}
	if err := yaml.Unmarshal([]byte(out), &b); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("docs/cli.md shows:\n%s\nthe CLI prints:\n%s", documented, out)
	}
}
