//go:build !windows

package confine

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenResolvesInsideTheRoot resolves links with handles on the root:
// links that stay inside work, absolute ones included; links that leave
// are refused with symlink-escape.
func TestOpenResolvesInsideTheRoot(t *testing.T) {
	base := t.TempDir()
	k := filepath.Join(base, "kubelet")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{outside, filepath.Join(k, "pods", "data")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"abs-in":      filepath.Join(k, "pods", "data"),
		"rel-in":      "pods/data",
		"chain-in":    "rel-in",
		"dangling-in": filepath.Join(k, "pods", "later"),
		"abs-out":     outside,
		"rel-out":     "../outside",
		"chain-out":   "rel-out",
		"dangling":    filepath.Join(outside, "missing"),
		"slash":       "/",
		"self":        k,
		"loop":        "loop",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(k, name)); err != nil {
			t.Fatal(err)
		}
	}
	c := mustNew(t, Options{Flavour: Linux, Roots: []string{k}, Resolver: OSResolver{}})
	cases := map[string]struct {
		path string
		mode Mode
		want string
		rule Rule
	}{
		"plain":                      {path: k + "/pods/data/x", mode: ResolveAll, want: "pods/data/x"},
		"the root":                   {path: k, mode: ResolveAll, want: "."},
		"absolute link inside":       {path: k + "/abs-in/x", mode: ResolveParent, want: "pods/data/x"},
		"relative link inside":       {path: k + "/rel-in", mode: ResolveAll, want: "pods/data"},
		"chained link inside":        {path: k + "/chain-in/x/y", mode: ResolveAll, want: "pods/data/x/y"},
		"dangling link inside":       {path: k + "/dangling-in", mode: ResolveAll, want: "pods/later"},
		"link itself, not followed":  {path: k + "/abs-out", mode: ResolveParent, want: "abs-out"},
		"link to the root":           {path: k + "/self", mode: ResolveAll, want: "."},
		"absolute link outside":      {path: k + "/abs-out/x", mode: ResolveParent, rule: RuleSymlinkEscape},
		"relative link outside":      {path: k + "/rel-out", mode: ResolveAll, rule: RuleSymlinkEscape},
		"chained link outside":       {path: k + "/chain-out/x", mode: ResolveParent, rule: RuleSymlinkEscape},
		"dangling link outside":      {path: k + "/dangling", mode: ResolveAll, rule: RuleSymlinkEscape},
		"link to the filesystem top": {path: k + "/slash/etc", mode: ResolveAll, rule: RuleSymlinkEscape},
		"link loop":                  {path: k + "/loop", mode: ResolveAll, rule: RuleSymlinkEscape},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h, err := c.Open(tc.path, tc.mode)
			if tc.rule != "" {
				var r *Refusal
				if !errors.As(err, &r) || r.Rule != tc.rule {
					t.Fatalf("Open(%q) = %v, want rule %s", tc.path, err, tc.rule)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open(%q): %v", tc.path, err)
			}
			defer h.Close()
			if h.Name() != tc.want {
				t.Fatalf("Open(%q).Name() = %q, want %q", tc.path, h.Name(), tc.want)
			}
		})
	}
}

// TestHandleErrRefusesEscapes maps the root handle's refusal of a link that
// leaves the root, met while an operation runs, to symlink-escape.
func TestHandleErrRefusesEscapes(t *testing.T) {
	k := t.TempDir()
	if err := os.Symlink(t.TempDir(), filepath.Join(k, "out")); err != nil {
		t.Fatal(err)
	}
	c := mustNew(t, Options{Flavour: Linux, Roots: []string{k}})
	h, err := c.Open(k+"/x", ResolveParent)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	err = h.Root().Mkdir("out/new", 0o755)
	if !IsEscape(err) {
		t.Fatalf("os.Root reported %v for a link out of the root; IsEscape does not recognise it", err)
	}
	var r *Refusal
	if !errors.As(h.Err(err), &r) || r.Rule != RuleSymlinkEscape {
		t.Fatalf("Err = %v, want a symlink-escape refusal", h.Err(err))
	}
	var pe *os.PathError
	if _, err := h.Root().Lstat("missing"); !errors.As(h.Err(err), &pe) || pe.Path != filepath.Join(k, "missing") {
		t.Fatalf("Err does not name the host path: %v", h.Err(err))
	}
}

// TestRefuseRoot refuses roots, nested ones included, and nothing else.
func TestRefuseRoot(t *testing.T) {
	c := mustNew(t, Options{Flavour: Linux, Roots: []string{"/var/lib/kubelet", "/var/lib/kubelet/plugins/wd"}})
	for p, want := range map[string]bool{
		"/var/lib/kubelet":             true,
		"/var/lib/kubelet/":            true,
		"/var/lib/kubelet/plugins/wd":  true,
		"/var/lib/kubelet/plugins":     false,
		"/var/lib/kubelet/plugins/wd2": false,
	} {
		err := c.RefuseRoot("path", p, "Rmdir")
		var r *Refusal
		if got := errors.As(err, &r) && r.Rule == RuleRootTarget; got != want {
			t.Errorf("RefuseRoot(%q) = %v, want refused %v", p, err, want)
		}
		if want && err.Error() != `path: path "`+p+`" is an allowed root itself; Rmdir may act only on paths inside it (confinement rule root-target)` {
			t.Errorf("message %q", err)
		}
	}
}
