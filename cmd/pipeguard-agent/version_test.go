package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pipeguard/pipeguard/internal/version"
)

// TestVersionFlag: pipeguard-agent --version prints the one line every
// pipeguard binary prints and exits 0, before it opens a log, a socket or
// an audit file.
func TestVersionFlag(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "--version", "--socket-dir", filepath.Join(dir, "sockets"), "--audit-log-path", filepath.Join(dir, "audit.log"))
	cmd.Env = append(os.Environ(), asAgentEnv+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pipeguard-agent --version: %v\nstderr: %s", err, stderr.String())
	}
	if want := "pipeguard-agent " + version.Get().String() + "\n"; stdout.String() != want || stderr.Len() != 0 {
		t.Fatalf("stdout %q, stderr %q; want %q and nothing on stderr", stdout.String(), stderr.String(), want)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("--version created %v", entries)
	}
}
