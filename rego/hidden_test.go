package rego_test

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/pipeguard/pipeguard/internal/invisible"
	"github.com/pipeguard/pipeguard/internal/testing/invisibletest"
	shipped "github.com/pipeguard/pipeguard/rego"
)

// evalAdmission evaluates query with input against the shipped admission
// rules.
func evalAdmission(t *testing.T, query string, input any) any {
	t.Helper()
	opts := []func(*rego.Rego){rego.Query(query), rego.Input(input)}
	for _, f := range shipped.Admission() {
		opts = append(opts, rego.Module(f.Name, f.Source))
	}
	rs, err := rego.New(opts...).Eval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		t.Fatalf("%s: %d results", query, len(rs))
	}
	return rs[0].Expressions[0].Value
}

// TestHiddenCharsAreGos: the characters the rules' display_path will not
// print raw are exactly those Go escapes (invisible.Hidden), code point by
// code point. OPA's regex.match is Go's regexp, so the pattern is checked
// with it.
func TestHiddenCharsAreGos(t *testing.T) {
	pattern, ok := evalAdmission(t, "data.pipeguard.admission.hidden_chars", nil).(string)
	if !ok {
		t.Fatal("data.pipeguard.admission.hidden_chars is not a string")
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		t.Fatalf("hidden_chars %q: %v", pattern, err)
	}
	var diff []string
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		if rego, gos := re.MatchString(string(r)), invisible.Hidden(r); rego != gos {
			diff = append(diff, fmt.Sprintf("U+%04X (rego %v, Go %v)", r, rego, gos))
		}
	}
	if len(diff) > 0 {
		t.Errorf("hidden_chars and invisible.Hidden disagree on %d code points, the first: %v", len(diff), diff[:min(len(diff), 20)])
	}
}

// TestDisplayPathRendersHiddenCharacters: a path holding any hidden
// character is shown as pipeguard renders it, never raw.
func TestDisplayPathRendersHiddenCharacters(t *testing.T) {
	for _, c := range append(invisibletest.Samples(), invisibletest.Sample{Name: "REPLACEMENT CHARACTER", Rune: 0xfffd}) {
		r := c.Rune
		raw := fmt.Sprintf(`\\.\pipe\csi%cproxy`, r)
		rendered := `\\.\pipe\csi` + "\uFFFD" + `proxy`
		in := map[string]string{"raw": raw, "rendered": rendered}
		if got := evalAdmission(t, "data.pipeguard.admission.display_path(input.raw, input.rendered)", in); got != rendered {
			t.Errorf("display_path of a path with %s = %q, want the rendering", c.Name, got)
		}
	}
	in := map[string]string{"raw": `\\.\pipe\Csi-ſ`, "rendered": "rendered"}
	if got := evalAdmission(t, "data.pipeguard.admission.display_path(input.raw, input.rendered)", in); got != `\\.\pipe\Csi-ſ` {
		t.Errorf("display_path of a path without hidden characters = %q, want it as written", got)
	}
}
