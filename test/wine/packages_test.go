//go:build wine && linux

package wine

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// windowsPackages are the packages whose tests hold Windows code paths:
// path classification, confinement, caller identity, the pipes, the audit
// log, the gate and the host operations, with the agent's WMI calls against
// Wine's own WMI service (agent/hostops/wmi).
var windowsPackages = []string{
	"internal/testing/platform",
	"pipepath",
	"agent/apierr",
	"agent/audit",
	"agent/confine",
	"agent/gate",
	"agent/guard",
	"agent/hostops/disk",
	"agent/hostops/filesystem",
	"agent/hostops/iscsi",
	"agent/hostops/smb",
	"agent/hostops/system",
	"agent/hostops/volume",
	"agent/hostops/win32",
	"agent/hostops/wmi",
	"agent/identity",
	"agent/methods",
	"agent/server",
	"test/wine/cmd/hostbench",
}

// TestWindowsPackages builds the tests of windowsPackages for Windows and
// runs them under Wine; a test that fails there fails here, and the tests
// that skip there say why.
func TestWindowsPackages(t *testing.T) {
	p := need(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	exes := filepath.Join(p.dir, "tests")
	for _, pkg := range windowsPackages {
		t.Run(strings.ReplaceAll(pkg, "/", "_"), func(t *testing.T) {
			exe := filepath.Join(exes, strings.ReplaceAll(pkg, "/", "_")+".test.exe")
			build := exec.Command("go", "test", "-c", "-o", exe, "./"+pkg)
			build.Dir = root
			build.Env = p.goEnv
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("building the Windows tests of %s: %v\n%s", pkg, err, out)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			cmd := p.command(ctx, exe, "-test.v", "-test.short")
			cmd.Dir = filepath.Join(root, pkg) // tests read testdata relative to their package
			// The control plane runs on Linux only: its tests skip here,
			// which CI=true would turn into failures; they run on Linux.
			cmd.Env = append(withoutCI(p.env), "PIPEGUARD_UNDER_WINE=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s under Wine: %v\n%s", pkg, err, failures(string(out)))
			}
			passed := strings.Count(string(out), "--- PASS: ")
			if passed == 0 {
				t.Fatalf("%s: no test passed under Wine\n%s", pkg, out)
			}
			var skipped []string
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "--- SKIP: ") {
					skipped = append(skipped, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "--- SKIP: ")))
				}
			}
			t.Logf("%s: %d passed under Wine, %d skipped %v", pkg, passed, len(skipped), skipped)
		})
	}
}

// failures keeps the lines of test output that tell what failed: all but
// the runs, passes and skips.
func failures(out string) string {
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- PASS") || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "\n")
}

// withoutCI returns env without its CI variable.
func withoutCI(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "CI=") {
			out = append(out, kv)
		}
	}
	return out
}
