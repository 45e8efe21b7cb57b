package main

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestAuditStructuredOutput: -o json and -o yaml of query, summary and
// verify carry what the tables show; verify keeps its exit code.
func TestAuditStructuredOutput(t *testing.T) {
	path := writeLog(t, 0)

	code, out, errOut := runCLI(t, "", "audit", "query", path, "--decision", "deny", "-o", "yaml")
	if code != exitOK || strings.Count(out, "---\n") != 3 {
		t.Fatalf("query -o yaml: exit %d, stderr %q\n%s", code, errOut, out)
	}
	for _, doc := range strings.Split(strings.TrimPrefix(out, "---\n"), "---\n") {
		var ev map[string]any
		if err := yaml.Unmarshal([]byte(doc), &ev); err != nil || ev["kind"] != "Event" {
			t.Fatalf("query -o yaml document %q: %v", doc, err)
		}
	}

	code, out, errOut = runCLI(t, "", "audit", "summary", path, "-o", "json", "--top", "1")
	var sum summaryView
	if err := json.Unmarshal([]byte(out), &sum); err != nil || code != exitOK {
		t.Fatalf("summary -o json: exit %d, %v, stderr %q\n%s", code, err, errOut, out)
	}
	if sum.Total != 6 || sum.Allowed != 2 || sum.Denied != 3 || sum.Incomplete != 1 || len(sum.Rows) != 5 ||
		len(sum.TopDenied) != 1 || sum.TopDenied[0] != (summaryRow{Caller: "default/debug (sa default)", Method: "disk v1 PartitionDisk", Decision: "DENY", Rule: "disk-volume-csi-only", Count: 2}) ||
		sum.From == nil || !sum.From.Equal(t0) {
		t.Fatalf("summary -o json: %+v", sum)
	}

	for _, format := range []string{"json", "yaml"} {
		rotated := writeLog(t, 1200)
		code, out, errOut = runCLI(t, "", "audit", "verify", rotated, "-o", format)
		var v verifyView
		if err := yaml.Unmarshal([]byte(out), &v); err != nil || code != exitOK {
			t.Fatalf("verify -o %s: exit %d, %v, stderr %q\n%s", format, code, err, errOut, out)
		}
		if !v.Intact || v.Records != 17 || v.First != 1 || v.Last != 17 || len(v.Files) != 9 || len(v.Problems) != 0 {
			t.Fatalf("verify -o %s of an intact log: %+v", format, v)
		}
		editRecord(t, rotated)
		code, out, _ = runCLI(t, "", "audit", "verify", rotated, "-o", format)
		v = verifyView{}
		if err := yaml.Unmarshal([]byte(out), &v); err != nil || code != exitDenied {
			t.Fatalf("verify -o %s of an edited log: exit %d, want 1; %v\n%s", format, code, err, out)
		}
		if v.Intact || len(v.Problems) == 0 || v.Problems[0].Where == "" || v.Problems[0].Message == "" {
			t.Fatalf("verify -o %s of an edited log: %+v", format, v)
		}
	}
}
