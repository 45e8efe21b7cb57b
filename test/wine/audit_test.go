//go:build wine && linux

package wine

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestAuditLogVerifiesOnWindows stops the agent cleanly after some calls
// and verifies its log with pipeguard.exe: intact, it passes; with one
// record edited on the disk, it fails naming the broken record.
func TestAuditLogVerifiesOnWindows(t *testing.T) {
	p := need(t)
	a := startAgent(t, p)
	dir, _ := kubelet(p, `pods\0c1d\volumes\kubernetes.io~empty-dir\data\x`)
	calls(t, p,
		call{"filesystem/v1", "Mkdir", map[string]any{"path": dir}},
		call{"filesystem/v1", "PathExists", map[string]any{"path": dir}},
		call{"filesystem/v1", "Mkdir", map[string]any{"path": `C:\Windows\evil`}},
	)
	if err := a.stop(t); err != nil {
		t.Errorf("pipeguard-agent.exe did not stop cleanly on Ctrl+C: %v\n%s", err, a.log.String())
	}
	if !strings.Contains(a.log.String(), "shut down cleanly") {
		t.Errorf("the agent's log does not say it shut down cleanly:\n%s", a.log.String())
	}
	log := a.dir + `\audit.log`
	out, code := verify(t, p, log)
	if code != 0 {
		t.Fatalf("pipeguard.exe audit verify %s: exit %d, want 0\n%s", log, code, out)
	}
	data, err := os.ReadFile(p.path(log))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if len(lines) < 5 { // start, three requests, stop
		t.Fatalf("%d records, want the start and stop checkpoints and three requests", len(lines))
	}
	edited := bytes.Replace(lines[2], []byte(`Mkdir`), []byte(`Rmdir`), 1)
	if bytes.Equal(edited, lines[2]) {
		t.Fatalf("record 3 has no Mkdir to edit: %s", lines[2])
	}
	lines[2] = edited
	tampered := a.dir + `\tampered.log`
	if err := os.WriteFile(p.path(tampered), append(bytes.Join(lines, []byte("\n")), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = verify(t, p, tampered)
	if code == 0 {
		t.Fatalf("pipeguard.exe audit verify passed an edited log:\n%s", out)
	}
	if !strings.Contains(out, "tampered.log") {
		t.Errorf("verify's report does not name the file:\n%s", out)
	}
}

// verify runs pipeguard.exe audit verify on a log and returns its output
// and exit code.
func verify(t *testing.T, p *prefix, log string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := p.command(ctx, p.exe("pipeguard"), "audit", "verify", log)
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("running pipeguard.exe: %v", err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}
