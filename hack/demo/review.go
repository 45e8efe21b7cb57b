//go:build !windows

package main

// The audit review: pipeguard audit query, summary and verify on the
// agent's log, as a reviewer runs them, then verify of a copy with one
// record edited.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// tool is one pipeguard command and what it should answer.
type tool struct {
	title    string
	args     []string
	wantExit int
	// want are words the output must hold, each on one line with the
	// others of its group.
	want [][]string
}

func (a *agentDemo) runTool(t tool) bool {
	banner(t.title)
	fmt.Printf("$ pipeguard %s\n", strings.Join(t.args, " "))
	cmd := exec.Command(a.cliBin, t.args...)
	out, err := cmd.CombinedOutput()
	fmt.Print(string(out))
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		fmt.Printf("!! cannot run %s: %v\n", a.cliBin, err)
		return false
	}
	fmt.Printf("(exit %d)\n", code)
	ok := true
	if code != t.wantExit {
		fmt.Printf("!! expected exit %d\n", t.wantExit)
		ok = false
	}
	for _, words := range t.want {
		if !hasLineWith(string(out), words) {
			fmt.Printf("!! expected a line with %q\n", words)
			ok = false
		}
	}
	return ok
}

func hasLineWith(out string, words []string) bool {
	for _, line := range strings.Split(out, "\n") {
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			return true
		}
	}
	return false
}

// review runs the reviewer's commands and returns how many were not
// answered as expected.
func (a *agentDemo) review() (int, error) {
	anchor := []string{"--kubeconfig", a.kubeconfig, "--node", nodeName}
	failed := 0
	for _, t := range []tool{
		{title: "pipeguard audit query: one row per request, with the pod and ServiceAccount the agent attributed it to",
			args: []string{"audit", "query", a.auditLog},
			want: [][]string{{"Mkdir", "csi-smb-node", "csi-smb-node-sa"}, {"Rmdir", "intruder"}}},
		{title: "pipeguard audit summary: the requests per caller, method and decision",
			args: []string{"audit", "summary", a.auditLog}},
		{title: "pipeguard audit verify with the anchor Lease pipeguard-audit-" + nodeName + ": the chain is intact up to the head the agent published",
			args: append([]string{"audit", "verify", a.auditLog}, anchor...),
			want: [][]string{{"OK"}}},
	} {
		if !a.runTool(t) {
			failed++
		}
	}

	banner("A copy of the log with one field of one record changed: the intruder's refused Rmdir made to look like csi-smb-node's")
	edited, seq, err := editCopy(a.auditLog, filepath.Join(a.dir, "edited"))
	if err != nil {
		return failed, err
	}
	if !a.runTool(tool{title: "pipeguard audit verify of the edited copy: it names the changed record and exits 1",
		args: append([]string{"audit", "verify", edited}, anchor...), wantExit: 1,
		want: [][]string{{"FAIL", fmt.Sprintf("record seq %d", seq)}}}) {
		failed++
	}
	return failed, nil
}

// editCopy copies the log into dir and, in the copy, moves the last record
// of team-a/intruder's Rmdir (the refusal) to pod csi-smb-node: one field,
// pipeguard.io/pod-name. It returns the copy's path and the record's seq.
func editCopy(log, dir string) (string, int64, error) {
	b, err := os.ReadFile(log)
	if err != nil {
		return "", 0, fmt.Errorf("reading the audit log: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", 0, err
	}
	from, to := []byte(`"pipeguard.io/pod-name":["intruder"]`), []byte(`"pipeguard.io/pod-name":["csi-smb-node"]`)
	lines := bytes.SplitAfter(b, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		line := lines[i]
		if !bytes.Contains(line, from) || !bytes.Contains(line, []byte(`"verb":"Rmdir"`)) {
			continue
		}
		var rec struct {
			Stage       string            `json:"stage"`
			Annotations map[string]string `json:"annotations"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return "", 0, fmt.Errorf("audit log %s line %d: %w", log, i+1, err)
		}
		var seq int64
		if _, err := fmt.Sscan(rec.Annotations["pipeguard.io/seq"], &seq); err != nil {
			return "", 0, fmt.Errorf("audit log %s line %d has no pipeguard.io/seq annotation: %w", log, i+1, err)
		}
		lines[i] = bytes.Replace(line, from, to, 1)
		fmt.Printf("record seq %d (line %d, stage %s, decision %s): pod name \"intruder\" -> \"csi-smb-node\"\n",
			seq, i+1, rec.Stage, rec.Annotations["pipeguard.io/decision"])
		out := filepath.Join(dir, filepath.Base(log))
		if err := os.WriteFile(out, bytes.Join(lines, nil), 0o600); err != nil {
			return "", 0, err
		}
		fmt.Printf("edited copy: %s\n", out)
		return out, seq, nil
	}
	return "", 0, fmt.Errorf("audit log %s has no record of team-a/intruder's Rmdir to edit; the agent's log should hold one after the refused Rmdir", log)
}
