package app

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/internal/testing/doctable"
)

// TestFlagBoundsDocumented checks every row of docs/agent.md's Bounds table
// that a flag sets against that flag's default, as -help prints it. The
// fixed rows are checked by TestFixedBoundsDocumented.
func TestFlagBoundsDocumented(t *testing.T) {
	r := executeCommand(t, "-help")
	if r.code != 0 || r.options != nil {
		t.Fatalf("-help: exit %d, agent run: %v", r.code, r.options != nil)
	}
	defaults := map[string]string{}
	flagLine := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)(?: \w+)?\n\s+(.*)$`)
	defaultOf := regexp.MustCompile(`\(default "?([^")]*)"?\)$`)
	for _, m := range flagLine.FindAllStringSubmatch(r.stderr, -1) {
		if d := defaultOf.FindStringSubmatch(m[2]); d != nil {
			defaults["--"+m[1]] = d[1]
		} else {
			defaults["--"+m[1]] = ""
		}
	}
	flagName := regexp.MustCompile("`(--[a-z0-9-]+)`")
	rows := 0
	for _, row := range doctable.Rows(t, "../../../docs/agent.md", "Bounds", 4) {
		input, value, setBy := row[0], row[1], row[2]
		if setBy == "fixed" {
			continue
		}
		flags := flagName.FindAllStringSubmatch(setBy, -1)
		if len(flags) == 0 {
			t.Errorf("Bounds row %q: set by %q, want fixed or flags such as `--flag`", input, setBy)
		}
		for _, f := range flags {
			rows++
			def, ok := defaults[f[1]]
			if !ok {
				t.Errorf("Bounds row %q: %s is no flag of pipeguard-agent", input, f[1])
				continue
			}
			if !sameBound(value, def) {
				t.Errorf("Bounds row %q: %q, but %s defaults to %q", input, value, f[1], def)
			}
		}
	}
	if rows == 0 {
		t.Fatal("no row of the Bounds table is set by a flag")
	}
}

// sameBound compares a table value ("100 MB", "90s (...)") with a flag
// default ("100", "1m30s"): its first word, as a duration when both are.
func sameBound(value, def string) bool {
	word, _, _ := strings.Cut(value, " ")
	dv, errV := time.ParseDuration(word)
	dd, errD := time.ParseDuration(def)
	if errV == nil && errD == nil {
		return dv == dd
	}
	return word == def
}
