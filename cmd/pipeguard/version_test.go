package main

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/internal/version"
)

// TestVersion: pipeguard version and pipeguard --version print the one
// line every pipeguard binary prints, and exit 0, as kubectl's do; -o
// json and yaml carry the same fields for scripts.
func TestVersion(t *testing.T) {
	want := "pipeguard " + version.Get().String() + "\n"
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		code, out, errOut := runCLI(t, "", args...)
		if code != exitOK || out != want || !strings.Contains(out, "(revision ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 0 and %q", args, code, out, errOut, want)
		}
	}

	for _, format := range []string{"json", "yaml"} {
		code, out, errOut := runCLI(t, "", "version", "-o", format)
		if code != exitOK {
			t.Fatalf("version -o %s: exit %d: %s", format, code, errOut)
		}
		var got version.Info
		if err := yaml.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("version -o %s: %v\n%s", format, err, out)
		}
		if got != version.Get() {
			t.Errorf("version -o %s: %+v, want %+v", format, got, version.Get())
		}
		if format == "json" && !json.Valid([]byte(out)) {
			t.Errorf("version -o json is not JSON: %s", out)
		}
	}

	code, _, errOut := runCLI(t, "", "version", "-o", "xml")
	if want := "pipeguard version: --output \"xml\": want table, json or yaml\nSee 'pipeguard version --help' for usage.\n"; code != exitBadInput || errOut != want {
		t.Errorf("version -o xml: exit %d, stderr %q; want 2 and %q", code, errOut, want)
	}
}
