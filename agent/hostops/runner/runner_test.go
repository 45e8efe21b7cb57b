package runner

import (
	"context"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

func TestExecPassesEnvNotText(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses sh")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	hostile := `'; echo INJECTED; '$(echo INJECTED)`
	out, err := Exec{}.Run(context.Background(), Command{Program: "sh", Args: []string{"-c", `printf %s "$V"`}, Env: []string{Env("V", hostile)}})
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != hostile {
		t.Fatalf("output %q, want the value verbatim %q", out, hostile)
	}
}

func TestExecReportsStderr(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses sh")
	}
	_, err := Exec{}.Run(context.Background(), Command{Program: "sh", Args: []string{"-c", "echo boom >&2; exit 3"}})
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v, want it to carry stderr", err)
	}
}
