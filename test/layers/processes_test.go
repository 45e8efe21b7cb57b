package layers

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// startsProcess matches the Go and Windows ways to start a process: the
// os/exec package (and x/sys/execabs), os and syscall's own starts, the
// Win32 functions that create a process, and WMI's Win32_Process, whose
// Create method starts one.
var startsProcess = regexp.MustCompile(`"os/exec"|"golang.org/x/sys/execabs"|\bos\.StartProcess\b|\bsyscall\.(StartProcess|ForkExec|Exec)\b|CreateProcess|ShellExecute|WinExec|Win32_Process\b`)

// mayStartProcesses are the folders, below the repository's root, whose
// code may start processes: the tools and tests (hack, test), which build
// and run the binaries, their helpers (internal/testing), and nothing of
// the product.
var mayStartProcesses = []string{"hack/", "test/", "internal/testing/"}

// processStarts returns the lines of src, a Go file, that start a process,
// as "file:line: text". Comment lines are left out: a comment may name what
// the code does not do.
func processStarts(file, src string) []string {
	var found []string
	for i, line := range strings.Split(src, "\n") {
		text := strings.TrimSpace(line)
		if strings.HasPrefix(text, "//") {
			continue
		}
		if startsProcess.MatchString(text) {
			found = append(found, file+":"+strconv.Itoa(i+1)+": "+text)
		}
	}
	return found
}

// TestNoProductCodeStartsAProcess reads every Go file of the product (all
// that git tracks, but the tests and the tools) for a way to start a
// process. The agent does its host work through Win32 and WMI calls in its
// own process; the webhook and the CLI have no reason to start one either.
func TestNoProductCodeStartsAProcess(t *testing.T) {
	found := scanProductSources(t, mayStartProcesses, func(file, src string) ([]string, error) {
		return processStarts(file, src), nil
	})
	if len(found) > 0 {
		t.Errorf("product code that starts a process (only %s may):\n%s", strings.Join(mayStartProcesses, ", "), strings.Join(found, "\n"))
	}
}

// TestProcessCheckCatchesEveryWay: the check finds each way it names, and
// leaves comments and look-alike names alone.
func TestProcessCheckCatchesEveryWay(t *testing.T) {
	caught := []string{
		`import "os/exec"`,
		`	"os/exec"`,
		`	"golang.org/x/sys/execabs"`,
		`p, err := os.StartProcess(name, args, attr)`,
		`pid, err := syscall.StartProcess(name, args, attr)`,
		`syscall.ForkExec(name, args, attr)`,
		`syscall.Exec(name, args, env)`,
		`err := windows.CreateProcess(nil, cmd, nil, nil, false, 0, nil, nil, &si, &pi)`,
		`proc := kernel32.NewProc("CreateProcessW")`,
		`proc := shell32.NewProc("ShellExecuteW")`,
		`proc := kernel32.NewProc("WinExec")`,
		`out, err := conn.Call(ctx, ns, "Win32_Process", "Create", p)`,
	}
	for _, line := range caught {
		if got := processStarts("x.go", line); len(got) != 1 {
			t.Errorf("%q: found %v, want it caught", line, got)
		}
	}
	left := []string{
		`// The agent never calls CreateProcess: it starts no process.`,
		`	// "os/exec" is not imported here`,
		`ctx, cancel := context.WithTimeout(ctx, d) // execution time`,
		`q := "SELECT * FROM Win32_ProcessorX"`,
		`n := executor.Run()`,
	}
	for _, line := range left {
		if got := processStarts("x.go", line); len(got) != 0 {
			t.Errorf("%q: found %v, want it left alone", line, got)
		}
	}
}

// scanProductSources runs find over the source of every Go file git
// tracks, but the tests and the files under the prefixes skip, and
// returns what it found, sorted. Fewer than 100 files read means the
// check lost its files and fails.
func scanProductSources(t *testing.T, skip []string, find func(file, src string) ([]string, error)) []string {
	t.Helper()
	root := "../.."
	out, err := exec.Command("git", "-C", root, "ls-files", "*.go").Output()
	if err != nil {
		t.Skipf("git cannot list the tracked files (%v): this check needs a git checkout", err)
	}
	var found []string
	read := 0
	for _, f := range strings.Fields(string(out)) {
		if strings.HasSuffix(f, "_test.go") || hasAnyPrefix(f, skip) {
			continue
		}
		read++
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		more, err := find(f, string(src))
		if err != nil {
			t.Fatal(err)
		}
		found = append(found, more...)
	}
	if read < 100 {
		t.Fatalf("only %d product files were read: update the check", read)
	}
	sort.Strings(found)
	return found
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
