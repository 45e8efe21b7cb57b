package limits_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pipeguard/pipeguard/controller/limits"
)

// list renders "Pod p: " and items joined by "; ", and after the items
// kept how many were left out, as the audit's Event does.
func list(max int, items ...string) string {
	return limits.Fit(max, len(items),
		func(k int) string { return "Pod p: " + strings.Join(items[:k], "; ") },
		func(m int) string {
			if m == 0 {
				return ""
			}
			return fmt.Sprintf("; … and %d more", m)
		})
}

func TestFit(t *testing.T) {
	three := []string{"first violation message", "second violation message", "third violation message, the longest"}
	for name, tc := range map[string]struct {
		max   int
		items []string
		want  string
	}{
		"zero items": {
			max: 20, want: "Pod p: ",
		},
		"zero items, the text alone too long": {
			max: 5, want: "Po…",
		},
		"every item, exactly at the limit": {
			max: 94, items: three,
			want: "Pod p: first violation message; second violation message; third violation message, the longest",
		},
		"one byte over: the last item is counted instead": {
			max: 93, items: three,
			want: "Pod p: first violation message; second violation message; … and 1 more",
		},
		"the items kept and the count exactly at the limit": {
			max: 72, items: three,
			want: "Pod p: first violation message; second violation message; … and 1 more",
		},
		"one byte under that: one item fewer": {
			max: 71, items: three,
			want: "Pod p: first violation message; … and 2 more",
		},
		"a single item longer than the limit is cut": {
			max: 20, items: []string{strings.Repeat("x", 100)},
			want: "Pod p: xxxxxxxxxx…",
		},
		"a first item longer than the limit is cut, the rest counted": {
			max: 30, items: []string{strings.Repeat("x", 100), "beta", "gamma"},
			want: "Pod p: xxxx…; … and 2 more",
		},
		"a cut that falls on a rune boundary": {
			max: 14, items: []string{"ééééé"},
			want: "Pod p: éé…",
		},
		"a cut that falls inside a rune leaves the rune out": {
			max: 15, items: []string{"ééééé"},
			want: "Pod p: éé…",
		},
		"a multi-byte rune ending exactly at the limit is kept": {
			max: 17, items: []string{"ééééé"},
			want: "Pod p: ééééé",
		},
		"a count that does not fit either: the whole text is cut": {
			max: 9, items: []string{"alpha", "beta"},
			want: "Pod p:…",
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := list(tc.max, tc.items...)
			if got != tc.want {
				t.Errorf("Fit(%d) = %q (%d bytes)\nwant        %q", tc.max, got, len(got), tc.want)
			}
			if len(got) > tc.max || !utf8.ValidString(got) {
				t.Errorf("Fit(%d) = %q: %d bytes, valid UTF-8 %v", tc.max, got, len(got), utf8.ValidString(got))
			}
		})
	}
}

// TestFitManyItems: of 150 items, as many as fit are kept whole, and the
// count says exactly how many were left out.
func TestFitManyItems(t *testing.T) {
	var items []string
	for i := range 150 {
		items = append(items, fmt.Sprintf("item-%03d", i))
	}
	got := list(100, items...)
	want := "Pod p: item-000; item-001; item-002; item-003; item-004; item-005; item-006; … and 143 more"
	if got != want {
		t.Errorf("got  %q (%d bytes)\nwant %q", got, len(got), want)
	}
}

func TestCut(t *testing.T) {
	for name, tc := range map[string]struct {
		in   string
		max  int
		want string
	}{
		"shorter":                         {"short", 10, "short"},
		"exactly at the limit":            {"exactly10!", 10, "exactly10!"},
		"one byte over":                   {"exactly11!!", 10, "exactly…"},
		"never splits a rune":             {"ééééé", 8, "éé…"},
		"a rune that ends at the cut":     {"ééééé", 9, "ééé…"},
		"a four-byte rune before the cut": {"ab😀😀", 9, "ab😀…"},
		"a four-byte rune across the cut": {"ab😀😀", 8, "ab…"},
		"no room for the mark":            {"abcdef", 2, "ab"},
		"no room for the mark or a rune":  {"éé", 1, ""},
		"no room at all":                  {"abc", 0, ""},
	} {
		t.Run(name, func(t *testing.T) {
			got := limits.Cut(tc.in, tc.max)
			if got != tc.want || len(got) > tc.max || !utf8.ValidString(got) {
				t.Errorf("Cut(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
		})
	}
}
