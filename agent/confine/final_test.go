//go:build linux

package confine_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/agent/confine"
)

// finalTree builds <base>/root with a directory, links inside it and links
// leaving it, and returns base (resolved) and the root.
func finalTree(t *testing.T) (base, root string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(base, "root")
	for _, d := range []string{"root/plugins/staging", "outside"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"root/publish":  filepath.Join(root, "plugins", "staging"),
		"root/relative": "plugins",
		"root/escape":   filepath.Join(base, "outside"),
		"root/dangling": filepath.Join(base, "outside", "missing"),
		"rootlink":      root,
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(base, name)); err != nil {
			t.Fatal(err)
		}
	}
	return base, root
}

func finalConfiner(t *testing.T, resolver confine.Resolver, roots ...string) *confine.Confiner {
	t.Helper()
	c, err := confine.New(confine.Options{Flavour: confine.Linux, Roots: roots, Resolver: resolver})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFinalResolvesLinksInsideTheRoots(t *testing.T) {
	_, root := finalTree(t)
	staging := filepath.Join(root, "plugins", "staging")
	for _, resolver := range []confine.Resolver{nil, confine.OSResolver{}} {
		c := finalConfiner(t, resolver, root)
		for name, tc := range map[string]struct {
			path string
			mode confine.Mode
			want string
		}{
			"link followed":                          {root + "/publish", confine.ResolveAll, staging},
			"relative link followed":                 {root + "/relative/staging/x", confine.ResolveParent, staging + "/x"},
			"last component kept for ResolveParent":  {root + "/publish", confine.ResolveParent, root + "/publish"},
			"link to outside kept for ResolveParent": {root + "/escape", confine.ResolveParent, root + "/escape"},
			"missing names appended":                 {root + "/publish/a/b", confine.ResolveParent, staging + "/a/b"},
			"root itself":                            {root, confine.ResolveAll, root},
		} {
			got, err := c.Final("target_path", tc.path, tc.mode)
			if err != nil || got != tc.want {
				t.Errorf("%s (resolver %T): Final(%s) = %q, %v; want %q", name, resolver, tc.path, got, err, tc.want)
			}
		}
	}
}

func TestFinalRefusesLinksLeavingTheRoots(t *testing.T) {
	base, root := finalTree(t)
	// Without a resolver Check is lexical: Final alone catches the escape.
	for _, resolver := range []confine.Resolver{nil, confine.OSResolver{}} {
		c := finalConfiner(t, resolver, root)
		for name, tc := range map[string]struct {
			path string
			mode confine.Mode
		}{
			"through a link":            {root + "/escape/new", confine.ResolveParent},
			"the link itself followed":  {root + "/escape", confine.ResolveAll},
			"through a dangling link":   {root + "/dangling/new", confine.ResolveParent},
			"a dangling link followed":  {root + "/dangling", confine.ResolveAll},
			"deeper through the escape": {root + "/escape/a/b/c", confine.ResolveParent},
		} {
			_, err := c.Final("target_path", tc.path, tc.mode)
			var ref *confine.Refusal
			if !errors.As(err, &ref) || ref.Rule != confine.RuleSymlinkEscape || ref.Field != "target_path" || ref.Path != tc.path {
				t.Errorf("%s (resolver %T): Final(%s) = %v, want a symlink-escape refusal", name, resolver, tc.path, err)
				continue
			}
			if resolver == nil && !strings.Contains(ref.Reason, filepath.Join(base, "outside")) {
				t.Errorf("%s: reason %q does not name where the path leads", name, ref.Reason)
			}
		}
	}
}

func TestFinalKeepsLexicalRefusals(t *testing.T) {
	_, root := finalTree(t)
	c := finalConfiner(t, nil, root)
	for path, rule := range map[string]confine.Rule{
		"/etc/passwd":         confine.RuleOutsideRoots,
		root + "X/a":          confine.RuleOutsideRoots,
		root + "/../outside":  confine.RuleTraversal,
		"relative/path":       confine.RuleNotAbsolute,
		root + "/a\x00b":      confine.RuleCharacters,
		"":                    confine.RuleEmpty,
		root + "/plugins/./x": confine.RuleTraversal,
	} {
		_, err := c.Final("path", path, confine.ResolveParent)
		var ref *confine.Refusal
		if !errors.As(err, &ref) || ref.Rule != rule {
			t.Errorf("Final(%q) = %v, want rule %s", path, err, rule)
		}
	}
}

func TestFinalRootThatIsALink(t *testing.T) {
	base, root := finalTree(t)
	c := finalConfiner(t, nil, filepath.Join(base, "rootlink"))
	got, err := c.Final("path", filepath.Join(base, "rootlink", "publish", "x"), confine.ResolveParent)
	if want := filepath.Join(root, "plugins", "staging", "x"); err != nil || got != want {
		t.Fatalf("Final = %q, %v; want %q", got, err, want)
	}
}

func TestFinalOfTheOtherFlavourIsLexical(t *testing.T) {
	c, err := confine.New(confine.Options{Flavour: confine.Windows, Roots: []string{`C:\var\lib\kubelet`}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Final("target_path", `C:\var\lib\kubelet\\pods\x`, confine.ResolveParent)
	if err != nil || got != `C:\var\lib\kubelet\pods\x` {
		t.Fatalf("Final = %q, %v", got, err)
	}
	var ref *confine.Refusal
	if _, err := c.Final("target_path", `C:\Windows\x`, confine.ResolveParent); !errors.As(err, &ref) || ref.Rule != confine.RuleOutsideRoots {
		t.Fatalf("Final outside the roots = %v", err)
	}
}
