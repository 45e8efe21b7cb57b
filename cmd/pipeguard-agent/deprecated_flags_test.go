package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestPowerShellWorkersIsDeprecated: a DaemonSet that still passes
// --powershell-workers starts, with a warning that says the flag does
// nothing and to remove it; without the flag nothing is said.
func TestPowerShellWorkersIsDeprecated(t *testing.T) {
	for _, value := range []string{"2", "0", "-1"} {
		var stderr bytes.Buffer
		if _, code, ok := parseFlags([]string{"--powershell-workers", value}, &stderr); !ok {
			t.Fatalf("--powershell-workers %s: refused with code %d: %s", value, code, stderr.String())
		}
		want := "warning: --powershell-workers is deprecated and has no effect: the agent starts no PowerShell; remove the flag\n"
		if stderr.String() != want {
			t.Errorf("--powershell-workers %s: stderr %q, want %q", value, stderr.String(), want)
		}
	}
	var stderr bytes.Buffer
	if _, _, ok := parseFlags(nil, &stderr); !ok || strings.Contains(stderr.String(), "powershell") {
		t.Errorf("no flags: ok=%v, stderr %q", ok, stderr.String())
	}
}
