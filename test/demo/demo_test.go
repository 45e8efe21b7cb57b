//go:build !windows

// Package demo runs `make demo`'s program as a smoke test: it builds what
// the demo runs, runs it with DEMO_EXIT=1 on the control plane of
// KUBEBUILDER_ASSETS, and checks the answers a user reads.
package demo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// TestDemo runs the demo end to end: the webhook samples, the agent's
// allowed and refused calls, and the audit review.
func TestDemo(t *testing.T) {
	assets := testenv.RequireAssets(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := buildDemo(t, root)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "demo"),
		"--webhook", filepath.Join(bin, "pipeguard-webhook"),
		"--agent", filepath.Join(bin, "pipeguard-agent"),
		"--pipeguard", filepath.Join(bin, "pipeguard"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "DEMO_EXIT=1", "KUBEBUILDER_ASSETS="+assets)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	t.Logf("the demo ran in %s", time.Since(start).Round(time.Second))
	if err != nil {
		t.Fatalf("the demo failed (%v), want exit 0; its output:\n%s", err, out.String())
	}
	got := out.String()

	// Each group of words must appear on one line, in this order.
	wants := []struct {
		what  string
		words []string
	}{
		{"the webhook samples", []string{"=== All webhook samples answered as expected"}},
		{"the SMB plugin's Mkdir", []string{"$ filesystem/v1 Mkdir", "from pod csi-smb/csi-smb-node, with its bound token"}},
		{"its answer", []string{"OK"}},
		{"the SMB plugin's CreateSymlink", []string{"$ filesystem/v1 CreateSymlink", "pods/", "kubernetes.io~csi/pv-smb/mount", "from pod csi-smb/csi-smb-node"}},
		{"its answer", []string{"OK"}},
		{"the refused Rmdir of the kubelet root", []string{"PermissionDenied: path: path", "is an allowed root itself", "(confinement rule root-target)"}},
		{"the refused Mkdir outside the roots", []string{`PermissionDenied: path: path "/etc/cron.d/pipeguard-demo" is outside the allowed roots`, "(confinement rule outside-roots)"}},
		{"the policy's refusal", []string{"PermissionDenied: disk v1 PartitionDisk is allowed only to pods of namespace", "the caller is pod team-a/intruder", "(rule disk-volume-csi-only)"}},
		{"the refused stolen token", []string{"Unauthenticated: the token names pod csi-smb/csi-smb-node", "a pod must send its own token"}},
		{"the query row of the SMB plugin", []string{"ALLOW", "filesystem v1 Mkdir", "system:serviceaccount:csi-smb:csi-smb-node-sa", "csi-smb/csi-smb-node"}},
		{"the query row of the intruder", []string{"DENY", "PermissionDenied", "filesystem v1 Rmdir", "team-a/intruder", "[confinement/root-target]"}},
		{"the summary", []string{"6 requests", "2 allowed, 4 denied"}},
		{"verify with the anchor", []string{"OK: audit chain intact: "}},
		{"the anchor", []string{"OK: the anchor of node demo-node is in the chain"}},
		{"the edit", []string{"record seq", `pod name "intruder" -> "csi-smb-node"`}},
		{"verify of the edited copy", []string{"FAIL: ", "edited/audit.log", "was changed or replaced"}},
		{"its exit code", []string{"(exit 1)"}},
		{"the end", []string{"=== All samples answered as expected"}},
	}
	lines := strings.Split(got, "\n")
	at := 0
	for _, w := range wants {
		i := findLine(lines[at:], w.words)
		if i < 0 {
			t.Fatalf("after line %d of the demo's output, no line shows %s (want a line with %q); the output:\n%s", at, w.what, w.words, got)
		}
		at += i + 1
	}
	// The record verify names is the one the demo edited.
	edit := lines[findLine(lines, []string{`pod name "intruder" -> "csi-smb-node"`})]
	_, edit, _ = strings.Cut(edit, "record seq ")
	seq, _, _ := strings.Cut(edit, " ")
	if !strings.Contains(got, "record seq "+seq+" was changed or replaced") {
		t.Errorf("verify of the edited copy does not name record seq %s, the one the demo edited; the output:\n%s", seq, got)
	}
}

func findLine(lines []string, words []string) int {
	for i, line := range lines {
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			return i
		}
	}
	return -1
}

// buildDemo builds the four binaries the demo runs into a temporary
// directory, in one go build, and says what it builds and how long it took.
func buildDemo(t *testing.T, root string) string {
	t.Helper()
	bin := t.TempDir()
	pkgs := []string{"./cmd/pipeguard-webhook", "./cmd/pipeguard-agent", "./cmd/pipeguard", "./hack/demo"}
	t.Logf("building %s (cold: about 5-8 minutes on 2 CPUs; less once Go's build cache holds it)", strings.Join(pkgs, " "))
	start := time.Now()
	cmd := exec.Command("go", append([]string{"build", "-trimpath", "-o", bin + string(filepath.Separator)}, pkgs...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		t.Fatalf("go build of the demo's binaries failed in %s:\n%s", root, out)
	case err != nil:
		t.Fatalf("cannot run go to build the demo's binaries: %v; put go on PATH", err)
	}
	t.Logf("built the demo's binaries in %s", time.Since(start).Round(time.Second))
	return bin
}
