package confine

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func mustNew(t *testing.T, o Options) *Confiner {
	t.Helper()
	c, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// check runs Check and returns the cleaned path or the refusing rule and message.
func check(t *testing.T, c *Confiner, p string, mode Mode) (string, Rule, string) {
	t.Helper()
	got, err := c.Check("path", p, mode)
	if err == nil {
		return got, "", ""
	}
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("Check(%q) returned %T %v, want *Refusal", p, err, err)
	}
	return "", r.Rule, err.Error()
}

func TestWindowsRules(t *testing.T) {
	c := mustNew(t, Options{Flavour: Windows, Roots: []string{`C:\var\lib\kubelet`, `C:\csi`}})
	cases := map[string]struct {
		path     string
		want     string // cleaned path when accepted
		rule     Rule
		contains string
	}{
		"root itself":                {path: `C:\var\lib\kubelet`, want: `C:\var\lib\kubelet`},
		"below root":                 {path: `C:\var\lib\kubelet\pods\x\volumes`, want: `C:\var\lib\kubelet\pods\x\volumes`},
		"other letter case":          {path: `c:\VAR\lib\Kubelet\pods`, want: `c:\VAR\lib\Kubelet\pods`},
		"working dir":                {path: `C:\csi\staging`, want: `C:\csi\staging`},
		"doubled separators cleaned": {path: `C:\var\lib\kubelet\\pods\\x\`, want: `C:\var\lib\kubelet\pods\x`},
		"prefix without separator": {path: `C:\var\lib\kubeletX\a`, rule: RuleOutsideRoots,
			contains: `path "C:\var\lib\kubeletX\a" is outside the allowed roots [C:\var\lib\kubelet C:\csi]: `},
		"parent of root":             {path: `C:\var\lib`, rule: RuleOutsideRoots},
		"other drive":                {path: `D:\var\lib\kubelet\a`, rule: RuleOutsideRoots},
		"dot dot":                    {path: `C:\var\lib\kubelet\..\..\Windows`, rule: RuleTraversal, contains: `contains a ".." segment`},
		"dot":                        {path: `C:\var\lib\kubelet\.\a`, rule: RuleTraversal},
		"long path prefix":           {path: `\\?\C:\var\lib\kubelet\a`, rule: RuleAlternatePrefix, contains: "UNC, device or long-path prefix"},
		"device namespace":           {path: `\\.\C:\var\lib\kubelet\a`, rule: RuleAlternatePrefix},
		"pipe":                       {path: `\\.\pipe\csi-proxy-disk-v1`, rule: RuleAlternatePrefix},
		"nt object prefix":           {path: `\??\C:\var\lib\kubelet\a`, rule: RuleAlternatePrefix},
		"unc share":                  {path: `\\server\share\a`, rule: RuleAlternatePrefix},
		"forward slash unc":          {path: `//server/share`, rule: RuleAlternatePrefix},
		"device path":                {path: `\Device\HarddiskVolume1\a`, rule: RuleAlternatePrefix},
		"rooted without drive":       {path: `\var\lib\kubelet\a`, rule: RuleNotAbsolute},
		"relative":                   {path: `var\lib\kubelet`, rule: RuleNotAbsolute},
		"drive relative":             {path: `C:var\lib\kubelet`, rule: RuleNotAbsolute},
		"forward slashes":            {path: `C:/var/lib/kubelet/a`, rule: RuleNotAbsolute},
		"mixed slash":                {path: `C:\var\lib\kubelet/a`, rule: RuleCharacters, contains: `contains "/"`},
		"alternate data stream":      {path: `C:\var\lib\kubelet\a:stream`, rule: RuleCharacters},
		"wildcard":                   {path: `C:\var\lib\kubelet\*`, rule: RuleCharacters},
		"quote":                      {path: `C:\var\lib\kubelet\a"b`, rule: RuleCharacters},
		"newline":                    {path: "C:\\var\\lib\\kubelet\\a\nb", rule: RuleCharacters, contains: `"C:\\var\\lib\\kubelet\\a\nb"`},
		"trailing dot":               {path: `C:\var\lib\kubelet.\a`, rule: RuleCharacters, contains: "ending in a dot or space"},
		"trailing space":             {path: `C:\var\lib\kubelet \a`, rule: RuleCharacters},
		"device name":                {path: `C:\var\lib\kubelet\NUL`, rule: RuleDeviceName},
		"device name with extension": {path: `C:\var\lib\kubelet\com1.txt`, rule: RuleDeviceName},
		"kelvin sign is not k":       {path: "C:\\var\\lib\\\u212Aubelet\\a", rule: RuleOutsideRoots},
		"empty":                      {path: "", rule: RuleEmpty},
		"too long":                   {path: `C:\var\lib\kubelet\` + strings.Repeat("a", 250), rule: RuleLength, contains: "over the limit of 260"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, rule, msg := check(t, c, tc.path, ResolveAll)
			if rule != tc.rule {
				t.Fatalf("Check(%q): rule %q (%s), want %q", tc.path, rule, msg, tc.rule)
			}
			if tc.rule == "" && got != tc.want {
				t.Fatalf("Check(%q) = %q, want %q", tc.path, got, tc.want)
			}
			if tc.rule != "" && !strings.Contains(msg, "(confinement rule "+string(tc.rule)+")") {
				t.Errorf("message %q does not name rule %s", msg, tc.rule)
			}
			if !strings.Contains(msg, tc.contains) {
				t.Errorf("message %q does not contain %q", msg, tc.contains)
			}
		})
	}
}

func TestLinuxRules(t *testing.T) {
	c := mustNew(t, Options{Flavour: Linux, Roots: []string{"/var/lib/kubelet", "/csi/"}})
	cases := map[string]struct {
		path     string
		want     string
		rule     Rule
		contains string
	}{
		"root itself":              {path: "/var/lib/kubelet", want: "/var/lib/kubelet"},
		"below root":               {path: "/var/lib/kubelet/pods/x", want: "/var/lib/kubelet/pods/x"},
		"working dir cleaned":      {path: "/csi//a/", want: "/csi/a"},
		"prefix without separator": {path: "/var/lib/kubeletX/a", rule: RuleOutsideRoots, contains: `path "/var/lib/kubeletX/a" is outside the allowed roots [/var/lib/kubelet /csi]`},
		"case matters":             {path: "/var/lib/Kubelet/a", rule: RuleOutsideRoots},
		"dot dot":                  {path: "/var/lib/kubelet/../../etc", rule: RuleTraversal},
		"dot":                      {path: "/var/lib/kubelet/./a", rule: RuleTraversal},
		"relative":                 {path: "var/lib/kubelet", rule: RuleNotAbsolute},
		"nul":                      {path: "/var/lib/kubelet/a\x00b", rule: RuleCharacters},
		"empty":                    {path: "", rule: RuleEmpty},
		"too long":                 {path: "/var/lib/kubelet/" + strings.Repeat("a", 4096), rule: RuleLength},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, rule, msg := check(t, c, tc.path, ResolveAll)
			if rule != tc.rule {
				t.Fatalf("Check(%q): rule %q (%s), want %q", tc.path, rule, msg, tc.rule)
			}
			if tc.rule == "" && got != tc.want {
				t.Fatalf("Check(%q) = %q, want %q", tc.path, got, tc.want)
			}
			if !strings.Contains(msg, tc.contains) {
				t.Errorf("message %q does not contain %q", msg, tc.contains)
			}
		})
	}
}

func TestSymlinkEscape(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Linux-flavour paths through OS symlinks: the Windows flavour is TestWindowsRules here and test/wine through real pipes")
	}
	base := t.TempDir()
	kubelet := filepath.Join(base, "kubelet")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{kubelet, outside, filepath.Join(kubelet, "pods")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"escape":      outside,                          // points out
		"inside":      filepath.Join(kubelet, "pods"),   // points in
		"dangling":    filepath.Join(outside, "nofile"), // points out, target missing
		"relative-up": "../outside",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(kubelet, name)); err != nil {
			t.Fatal(err)
		}
	}
	c := mustNew(t, Options{Flavour: Linux, Roots: []string{kubelet}, Resolver: OSResolver{}})
	cases := map[string]struct {
		path string
		mode Mode
		rule Rule
	}{
		"plain existing dir":                {path: kubelet + "/pods", mode: ResolveAll},
		"not yet existing":                  {path: kubelet + "/pods/a/b/c", mode: ResolveAll},
		"through link pointing in":          {path: kubelet + "/inside/a", mode: ResolveAll},
		"through link pointing out":         {path: kubelet + "/escape/a", mode: ResolveParent, rule: RuleSymlinkEscape},
		"new dir below link pointing out":   {path: kubelet + "/escape/a/b", mode: ResolveAll, rule: RuleSymlinkEscape},
		"relative link pointing out":        {path: kubelet + "/relative-up/x", mode: ResolveParent, rule: RuleSymlinkEscape},
		"the outward link itself, lstat":    {path: kubelet + "/escape", mode: ResolveParent},
		"the outward link itself, followed": {path: kubelet + "/escape", mode: ResolveAll, rule: RuleSymlinkEscape},
		"dangling outward link followed":    {path: kubelet + "/dangling", mode: ResolveAll, rule: RuleSymlinkEscape},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, rule, msg := check(t, c, tc.path, tc.mode)
			if rule != tc.rule {
				t.Fatalf("Check(%q): rule %q (%s), want %q", tc.path, rule, msg, tc.rule)
			}
			if rule == RuleSymlinkEscape && !strings.Contains(msg, "outside the allowed roots") && !strings.Contains(msg, "could not be resolved") {
				t.Errorf("message %q does not explain the escape", msg)
			}
		})
	}
}

// TestRootThatIsALink accepts a kubelet path that is itself a symlink, and
// paths below it, in both resolution modes.
func TestRootThatIsALink(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Linux-flavour paths through OS symlinks: the Windows flavour is TestWindowsRules here and test/wine through real pipes")
	}
	base := t.TempDir()
	real := filepath.Join(base, "data", "kubelet")
	if err := os.MkdirAll(filepath.Join(real, "pods"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "kubelet")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	c := mustNew(t, Options{Flavour: Linux, Roots: []string{link}, Resolver: OSResolver{}})
	for _, p := range []string{link, link + "/pods", link + "/pods/new/dir"} {
		for _, mode := range []Mode{ResolveParent, ResolveAll} {
			if _, rule, msg := check(t, c, p, mode); rule != "" {
				t.Errorf("Check(%q, %v) refused: %s", p, mode, msg)
			}
		}
	}
	if _, rule, _ := check(t, c, filepath.Join(base, "data"), ResolveAll); rule != RuleOutsideRoots {
		t.Errorf("the link target's parent: rule %q, want outside-roots", rule)
	}
}

func TestNewRejectsBadRoots(t *testing.T) {
	cases := map[string]Options{
		"no roots":          {Flavour: Linux},
		"relative root":     {Flavour: Linux, Roots: []string{"kubelet"}},
		"unc root":          {Flavour: Windows, Roots: []string{`\\server\share`}},
		"traversal in root": {Flavour: Windows, Roots: []string{`C:\var\..\x`}},
	}
	for name, o := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := New(o); err == nil {
				t.Fatal("New accepted bad roots")
			}
		})
	}
}

func TestDriveRootAsRoot(t *testing.T) {
	c := mustNew(t, Options{Flavour: Windows, Roots: []string{`C:\`}})
	if _, rule, msg := check(t, c, `C:\anything`, ResolveAll); rule != "" {
		t.Fatalf("refused below drive root: %s", msg)
	}
	if _, rule, _ := check(t, c, `D:\anything`, ResolveAll); rule != RuleOutsideRoots {
		t.Fatalf("rule %q, want outside-roots", rule)
	}
}
