package admission_test

import (
	"regexp"
	"testing"
)

// loosenings are edits that weaken the prefilter, each dropping one guard
// (or, for the pipe check, the pair of guards that back each other up).
// Each must let some protected object of the corpus past.
var loosenings = []struct {
	name    string
	pattern string // regexp over each expression
	repl    string
}{
	{"drop the NT object directory guard (\\Device, \\GLOBALROOT…)",
		`[\w.]+\.matches\(r'\(\?i\)\^[^']*'\)`, `false`},
	{"drop the pipe substring check and the NT object directory guard",
		`[\w.]+\.lowerAscii\(\)\.contains\('pipe'\) \|\|\s*[\w.]+\.matches\(r'\(\?i\)\^[^']*'\)`, `false`},
	{"let percent signs and non-ASCII characters in, so encodings and look-alikes",
		`\[A-Za-z0-9_\.-\]\*\[A-Za-z0-9_-\]`, `[A-Za-z0-9_.%\x{80}-\x{10FFFF}-]*[A-Za-z0-9_%\x{80}-\x{10FFFF}-]`},
	{"let separator runs in, so the \\\\.\\, \\\\?\\ and UNC families",
		`\^\(/\|`, `^([/\\]+|`},
	{"let segments end in dots, so . and ..",
		`\[A-Za-z0-9_\.-\]\*\[A-Za-z0-9_-\]`, `[A-Za-z0-9_.-]+`},
	{"let ? and $ in, so the \\??\\ and IPC$ families",
		`\[A-Za-z0-9_\.-\]\*\[A-Za-z0-9_-\]`, `[A-Za-z0-9_.?$-]*[A-Za-z0-9_?$-]`},
	{"ignore subPath",
		`\|\| has\(m\.subPath\) &&`, `|| false &&`},
	{"ignore init containers",
		`\.\?initContainers\.orValue\(\[\]\)`, `.?initContainers.orValue([]).filter(x, false)`},
	{"ignore ephemeral containers",
		`\.\?ephemeralContainers\.orValue\(\[\]\)`, `.?ephemeralContainers.orValue([]).filter(x, false)`},
	{"ignore local PersistentVolumes",
		`, \?object\.spec\.\?local\.\?path`, ``},
}

func TestLooseningThePrefilterIsCaught(t *testing.T) {
	c := loadCorpus(t)
	for _, l := range loosenings {
		t.Run(l.name, func(t *testing.T) {
			cfg := loadFilter(t).cfg.DeepCopy()
			re := regexp.MustCompile(l.pattern)
			changed := 0
			for i := range cfg.Webhooks {
				for j := range cfg.Webhooks[i].MatchConditions {
					mc := &cfg.Webhooks[i].MatchConditions[j]
					if e := re.ReplaceAllLiteralString(mc.Expression, l.repl); e != mc.Expression {
						mc.Expression = e
						changed++
					}
				}
			}
			if changed == 0 {
				t.Fatalf("%q matches no expression: the loosening tests nothing", l.pattern)
			}
			f, err := compileFilter(cfg)
			if err != nil {
				t.Fatal(err)
			}
			misses, _ := differential(t, f, c)
			if len(misses) == 0 {
				t.Fatalf("the corpus lets the loosened prefilter (%d expressions edited) pass", changed)
			}
			t.Logf("caught: %s is not sent, but %s", misses[0].what, misses[0].why)
		})
	}
}
