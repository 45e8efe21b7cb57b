package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestShippedAgentHoldsNoFixture: pipeguard-agent, for Linux and for
// Windows, links none of the test doubles (win32test, wmitest and the
// like) nor anything under test/, so nothing in it can answer its host
// calls from a fixture; the fixture agent of the tests under Wine is a
// command of its own (test/wine/cmd/fixtureagent).
func TestShippedAgentHoldsNoFixture(t *testing.T) {
	const module = "github.com/pipeguard/pipeguard/"
	for _, goos := range []string{"linux", "windows"} {
		cmd := exec.Command("go", "list", "-deps", ".")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("GOOS=%s go list -deps: %v", goos, err)
		}
		ours := 0
		for _, pkg := range strings.Fields(string(out)) {
			rel, ok := strings.CutPrefix(pkg, module)
			if !ok {
				continue
			}
			ours++
			if strings.HasSuffix(rel, "test") || strings.HasPrefix(rel, "test/") || strings.Contains(rel, "/testing/") {
				t.Errorf("GOOS=%s: pipeguard-agent links %s", goos, pkg)
			}
		}
		if ours < 10 {
			t.Errorf("GOOS=%s: pipeguard-agent links %d packages of the module: this check no longer sees them", goos, ours)
		}
	}
}
