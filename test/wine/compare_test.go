//go:build wine && linux

package wine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/compare"
)

// pipeguard-agent compare under Wine: the fixture agent (cmd/fixtureagent)
// compares its own answers over a Win32 fixture with those of
// csiproxy.exe (cmd/csiproxy), a stand-in CSI Proxy built from the client
// library's server interfaces, serving CSI Proxy's pipe names and
// answering as pipeguard does over the same fixture, changed by -diff.

// compareFixture is the host both sides answer for: two disks, a volume on
// each, the second mounted at a staging folder under the kubelet directory.
func compareFixture(kubelet string) map[string]any {
	return map[string]any{
		"disks": []map[string]any{
			{"number": 0, "scsi": map[string]any{"port": 0, "path": 0, "target": 0, "lun": 0}, "page83": map[string]any{"ascii": "Wine OS disk"}, "serial": "WINE0", "size": 64 << 30},
			{"number": 1, "scsi": map[string]any{"port": 1, "path": 0, "target": 2, "lun": 3}, "page83": map[string]any{"ascii": "Google pvc-1"}, "serial": "pvc-1", "size": 10 << 30},
		},
		"volumes": []map[string]any{
			{"id": `\\?\Volume{aaaaaaaa-0000-0000-0000-000000000001}\`, "extents": []map[string]any{{"disk": 0, "offset": 1 << 20, "length": 63 << 30}}, "partition": 1, "fileSystem": "NTFS", "total": 63 << 30, "free": 30 << 30},
			{"id": `\\?\Volume{aaaaaaaa-0000-0000-0000-000000000002}\`, "extents": []map[string]any{{"disk": 1, "offset": 1 << 20, "length": 9 << 30}}, "partition": 1, "fileSystem": "", "total": 9 << 30, "free": 9 << 30},
		},
		"mountPoints": map[string]string{kubelet + `\plugins\kubernetes.io\csi\pd\h\globalmount`: `\\?\Volume{aaaaaaaa-0000-0000-0000-000000000002}\`},
	}
}

// buildStandin builds csiproxy.exe.
func buildStandin(t *testing.T, p *prefix) string {
	t.Helper()
	exe := p.exe("csiproxy")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-trimpath", "-o", exe, "./test/wine/cmd/csiproxy")
	build.Dir = root
	build.Env = p.goEnv
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building csiproxy.exe: %v\n%s", err, out)
	}
	return exe
}

// startStandin runs csiproxy.exe until the test ends, and waits until it
// listens.
func startStandin(t *testing.T, p *prefix, exe string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := p.command(ctx, exe, args...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	deadline := time.After(time.Minute)
	for !strings.Contains(out.String(), "listening") {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("csiproxy.exe exited: %v\n%s", err, out.String())
		case <-deadline:
			t.Fatalf("csiproxy.exe did not listen:\n%s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// runCompare runs the fixture build's compare and returns its exit code
// and output.
func runCompare(t *testing.T, p *prefix, exe, fixture string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := p.command(ctx, exe, append([]string{"compare"}, args...)...)
	cmd.Env = append(cmd.Env, "PIPEGUARD_WIN32_FIXTURE="+fixture)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("pipeguard-agent compare: %v\n%s", err, stderr.String())
	return 0, "", ""
}

// TestCompare: with CSI Proxy absent compare exits 2 saying so; against a
// CSI Proxy answering as pipeguard does it exits 0; against each kind of
// difference it exits 1 and names it. CSI Proxy is called with the
// allowed read-only methods only.
func TestCompare(t *testing.T) {
	p := need(t)
	agentExe := fixtureAgent(t, p)
	standin := buildStandin(t, p)
	dir := `C:\pipeguard\` + t.Name()
	kubelet := dir + `\kubelet`
	staging := kubelet + `\plugins\kubernetes.io\csi\pd\h\globalmount`
	if err := os.MkdirAll(p.path(staging), 0o755); err != nil {
		t.Fatal(err)
	}
	fixture := dir + `\win32.json`
	data, _ := json.Marshal(compareFixture(kubelet))
	if err := os.WriteFile(p.path(fixture), data, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--kubelet-path", kubelet, "--timeout", "3s", "--service", "RpcSs", "--service", "PlugPlay", "--service", "csiproxy"}

	t.Run("no CSI Proxy", func(t *testing.T) {
		code, out, errOut := runCompare(t, p, agentExe, fixture, args...)
		want := `pipeguard-agent compare: no CSI Proxy on \\.\pipe\csi-proxy-disk-v1: is CSI Proxy running? (sc.exe query csiproxy, or its DaemonSet's pods on this node)`
		if code != 2 || out != "" || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errOut, want)
		}
	})

	allowed := map[string]bool{}
	for g, ms := range compare.Allowed {
		for _, m := range ms {
			allowed["/"+compare.Versions[g]+"."+strings.ToUpper(g[:1])+g[1:]+"/"+m] = true
		}
	}
	for _, tc := range []struct{ diff, want string }{
		{"", "pipeguard answers as CSI Proxy does"},
		{"stats-small", "pipeguard answers as CSI Proxy does"},
		{"missing-disk", "disk 1: only pipeguard answers it"},
		{"lun", ", LUN 9, pipeguard adapter"},
		{"page83", "disk 1 page83: CSI Proxy other Google pvc-1, pipeguard Google pvc-1"},
		{"serial", "disk 0 serialNumber: CSI Proxy other WINE0, pipeguard WINE0"},
		{"volumes", `\\?\Volume{00000000-0000-0000-0000-00000000beef}\: only CSI Proxy answers it`},
		{"formatted", "formatted: CSI Proxy false, pipeguard true"},
		{"stats", "usedBytes: CSI Proxy 46170898432, pipeguard 35433480192"},
		{"bios", `serialNumber: CSI Proxy other serial, pipeguard ""`},
		{"service", "status: CSI Proxy "},
		{"error", "fails on CSI Proxy only: Unknown: wmi: no Win32_BIOS"},
		{"hang", "fails on CSI Proxy only: no answer within 3s (--timeout)"},
		{"huge", "entries; compare reads at most 1024"},
		{"hang-all", "CSI Proxy stopped answering: 3 calls in a row had no answer within 3s; it was asked nothing more"},
	} {
		name := tc.diff
		if name == "" {
			name = "identical"
		}
		t.Run(name, func(t *testing.T) {
			log := dir + `\calls-` + name + `.log`
			startStandin(t, p, standin, "-fixture", fixture, "-kubelet-path", kubelet, "-diff", tc.diff, "-log", log)
			code, out, errOut := runCompare(t, p, agentExe, fixture, args...)
			wantCode := 1
			switch {
			case strings.HasPrefix(tc.want, "pipeguard answers"):
				wantCode = 0
			case tc.diff == "hang-all":
				wantCode = 2
				if !strings.Contains(errOut, "pipeguard-agent compare: CSI Proxy could not be reached for 13 of 16 calls (first: disk.GetDiskStats disk 1): is CSI Proxy running?") {
					t.Errorf("stderr: %s", errOut)
				}
			}
			if code != wantCode || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want %d and %q in the output:\n%s\n%s", code, wantCode, tc.want, out, errOut)
			}
			if !strings.Contains(out, "volume.GetVolumeIDFromTargetPath  "+staging) {
				t.Errorf("the staging folder was not compared:\n%s", out)
			}
			if name == "identical" {
				t.Logf("compare's table:\n%s", out)
			}
			calls, err := os.ReadFile(p.path(log))
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(bytes.NewReader(calls))
			n := 0
			for sc.Scan() {
				n++
				if !allowed[sc.Text()] {
					t.Errorf("CSI Proxy was called with %s", sc.Text())
				}
			}
			if n == 0 {
				t.Error("CSI Proxy was not called")
			}
		})
	}
	if t.Failed() {
		return
	}
	// JSON: the same report, whole.
	startStandin(t, p, standin, "-fixture", fixture, "-kubelet-path", kubelet)
	code, out, _ := runCompare(t, p, agentExe, fixture, append(args, "-o", "json")...)
	var r compare.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || !r.Identical || r.Calls < 10 {
		t.Errorf("exit %d, %v: %s", code, err, out)
	}
	rpcs := map[string]bool{}
	for _, row := range r.Rows {
		rpcs[row.RPC] = true
	}
	var want []string
	for g, ms := range compare.Allowed {
		for _, m := range ms {
			want = append(want, g+"."+m)
		}
	}
	slices.Sort(want)
	for _, rpc := range want {
		if !rpcs[rpc] {
			t.Errorf("no %s in the report", rpc)
		}
	}
	fmt.Fprintf(os.Stderr, "compare: %d calls compared under Wine\n", r.Calls)
}
