package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// flagName matches a command-line flag spelled in text: two dashes and a
// lower-case name, not inside a longer run of dashes or a word.
var flagName = regexp.MustCompile(`(^|[^-\w])--[a-z][a-z0-9]*(-[a-z0-9]+)*`)

// mayNameFlags are the folders, below the repository's root, whose code
// may spell flag names: the commands, which own their flags, and the tools
// and tests. A library names its options by option.Name (package
// internal/option) and the command renders them with its flags.
var mayNameFlags = []string{"cmd/", "hack/", "test/"}

// flagNameExceptions are the string literals of the product that spell a
// flag and must, each "file: literal" with the reason.
var flagNameExceptions = map[string]string{
	// The controller tells the reader which pipeguard command lists every
	// violation: a command to run, not an option of the controller, which
	// has no flag of its own to name here.
	`controller/audit_run.go: "; … and %d more %s (see %s %s, or run pipeguard policy eval --cluster)"`: "a command line the reader runs",
}

// flagLiterals returns the string literals of src, a Go file, that spell a
// flag, as "file:line: literal". Comments are left out: a comment may name
// the flag a caller sets.
func flagLiterals(file, src string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil || !flagName.MatchString(s) {
			return true
		}
		if _, ok := flagNameExceptions[file+": "+lit.Value]; ok {
			return true
		}
		found = append(found, file+":"+strconv.Itoa(fset.Position(lit.Pos()).Line)+": "+lit.Value)
		return true
	})
	return found, nil
}

// TestNoLibrarySpellsAFlag reads every Go file of the product outside the
// commands (all that git tracks, but the tests and the tools) for a string
// that spells a flag. Flag names reach messages one way: a library names
// its options by option.Name, and the command that shows the message
// renders them with its Namer (cmd/pipeguard-agent/flagname and the like).
func TestNoLibrarySpellsAFlag(t *testing.T) {
	found := scanProductSources(t, mayNameFlags, flagLiterals)
	if len(found) > 0 {
		t.Errorf("library strings that spell a flag (name the option with option.Name; only %s spell flags):\n%s",
			strings.Join(mayNameFlags, ", "), strings.Join(found, "\n"))
	}
}

// TestFlagCheckCatchesAFlag: the check finds a flag in every kind of
// string literal, and leaves comments, look-alikes and the exceptions
// alone.
func TestFlagCheckCatchesAFlag(t *testing.T) {
	caught := map[string]string{
		"an error":              `var _ = fmt.Errorf("no kubelet path: set --kubelet-path")`,
		"a raw string":          "const help = `start the agent with\n--allowed-service=x`",
		"a constant":            `const note = "no CRI endpoint (--cri-endpoint)"`,
		"a struct field":        `var _ = T{Setting: "--host-call-timeout-disk"}`,
		"at the very start":     `var _ = "--timeout"`,
		"a flag with its value": `var _ = "runs with --audit-failure=deny;"`,
	}
	for name, src := range caught {
		got, err := flagLiterals("x.go", "package x\n"+src+"\n")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != 1 {
			t.Errorf("%s: %q: found %v, want it caught", name, src, got)
		}
	}
	left := map[string]string{
		"a comment":           "// set --kubelet-path\nvar _ = 1",
		"a line comment":      `var _ = "x" // start the agent with --allowed-service`,
		"a separator":         `var _ = "-- end --"`,
		"an upper-case word":  `var _ = "--X"`,
		"dashes inside words": `var _ = "a---b x--y"`,
		"an exception":        `var _ = "; … and %d more %s (see %s %s, or run pipeguard policy eval --cluster)"`,
	}
	for name, src := range left {
		file := "x.go"
		if name == "an exception" {
			file = "controller/audit_run.go"
		}
		got, err := flagLiterals(file, "package x\n"+src+"\n")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != 0 {
			t.Errorf("%s: %q: found %v, want it left alone", name, src, got)
		}
	}
}
