//go:build linux

package confine

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRefusePodLinkFromFinalPath: a new link's source is judged by where
// it lies on the host, not only by the name its root resolved. A source
// that reaches another pod's directory through a host link, one made
// before the request or swapped in after the source was opened (as a host
// directory link under Wine, which the root does not see as a link), is
// refused with rule pod-link; a staging path still links to a publish
// path.
func TestRefusePodLinkFromFinalPath(t *testing.T) {
	k := filepath.Join(t.TempDir(), "kubelet")
	pod := func(uid string, names ...string) string {
		return filepath.Join(append([]string{k, "pods", uid}, names...)...)
	}
	plugins := filepath.Join(k, "plugins")
	for _, d := range []string{pod("victim", "data", "deeper"), pod("attacker"), filepath.Join(plugins, "x", "data"), filepath.Join(plugins, "staging")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(pod("victim"), filepath.Join(plugins, "abs")))
	must(os.Symlink("../pods/victim", filepath.Join(plugins, "rel")))
	must(os.Symlink("rel", filepath.Join(plugins, "chain")))
	c := mustNew(t, Options{Flavour: Linux, Roots: []string{k}, Resolver: OSResolver{}})
	link := pod("attacker", "l")
	want := func(source string) string {
		return `source_path: path "` + source + `" leads into the directory of pod victim (` + pod("victim") +
			`); a link may lead into a pod's directory only from inside that same pod's directory, and the new link "` + link + `" is not there (confinement rule pod-link)`
	}
	check := func(name, source string, h *Handle, wantMsg string) {
		t.Helper()
		err := Named("source_path", c.RefusePodLinkFrom(source, h, link))
		if wantMsg == "" {
			if err != nil {
				t.Fatalf("%s: refused: %v", name, err)
			}
			return
		}
		if err == nil || err.Error() != wantMsg {
			t.Fatalf("%s: %v\nwant\n%s", name, err, wantMsg)
		}
	}
	open := func(p string) *Handle {
		t.Helper()
		h, err := c.Open(p, ResolveAll)
		must(err)
		t.Cleanup(func() { _ = h.Close() })
		return h
	}

	for _, via := range []string{"abs", "rel", "chain"} {
		source := filepath.Join(plugins, via, "data")
		check("host link "+via, source, open(source), want(source))
	}
	staging := filepath.Join(plugins, "staging")
	err := Named("source_path", c.RefusePodLinkFrom(staging, open(staging), pod("victim", "volumes", "kubernetes.io~csi", "pv", "mount")))
	if err != nil {
		t.Fatalf("staging to publish path: %v", err)
	}

	// Opened while plugins/x was a directory; then it became a link into
	// the victim's directory. The root's name still says plugins/x/...;
	// the final path says where the link would lead.
	source, missing := filepath.Join(plugins, "x", "data"), filepath.Join(plugins, "x", "data", "later", "deeper")
	h, hm := open(source), open(missing)
	if h.Abs() != source {
		t.Fatalf("Abs %q, want %q", h.Abs(), source)
	}
	must(os.Rename(filepath.Join(plugins, "x"), filepath.Join(plugins, "x.old")))
	must(os.Symlink("../pods/victim", filepath.Join(plugins, "x")))
	if got, err := h.Place(); err != nil || got != pod("victim", "data") {
		t.Fatalf("Place = %q, %v; want %q", got, err, pod("victim", "data"))
	}
	if got, err := hm.Place(); err != nil || got != pod("victim", "data", "later", "deeper") {
		t.Fatalf("Place of a name not there yet = %q, %v; want %q", got, err, pod("victim", "data", "later", "deeper"))
	}
	check("swapped after open", source, h, want(source))
	check("swapped after open, not there yet", missing, hm, want(missing))

	// Swapped for an absolute link, which the root does not follow: the
	// source is refused too, not placed where the name said.
	abs := filepath.Join(plugins, "y", "data")
	must(os.MkdirAll(abs, 0o755))
	ha := open(abs)
	must(os.Rename(filepath.Join(plugins, "y"), filepath.Join(plugins, "y.old")))
	must(os.Symlink(pod("victim"), filepath.Join(plugins, "y")))
	wantAbs := `path "` + abs + `" resolves through a symlink outside the allowed root "` + k + `": a link on the way leaves it, or is absolute and changed while in use (confinement rule symlink-escape)`
	if err := c.RefusePodLinkFrom(abs, ha, link); err == nil || err.Error() != wantAbs {
		t.Fatalf("a source swapped for an absolute link into another pod: %v\nwant\n%s", err, wantAbs)
	}
}
