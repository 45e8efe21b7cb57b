//go:build wine && linux

package wine

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// TestCallerMappedToPodThroughCRI has the agent map a calling Windows
// process to its container and pod through a CRI runtime service on a
// named pipe, which answers as containerd does: the caller's process is a
// container's, so its records name the pod; a caller that is no
// container's keeps empty pod fields and a note saying why.
func TestCallerMappedToPodThroughCRI(t *testing.T) {
	p := need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// The driver's process, waiting for its calls.
	driver := p.command(ctx, p.exe("csiclient"))
	stdin, err := driver.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := driver.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := driver.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = driver.Wait() }()
	defer stdin.Close()
	lines := bufio.NewScanner(stdout)
	next := func() result {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("csiclient.exe ended: %v", lines.Err())
		}
		var r result
		if err := json.Unmarshal(lines.Bytes(), &r); err != nil {
			t.Fatalf("csiclient.exe output %q: %v", lines.Text(), err)
		}
		return r
	}
	io.WriteString(stdin, "pid\n")
	var pid struct{ PID int }
	if err := json.Unmarshal(next().Response, &pid); err != nil || pid.PID == 0 {
		t.Fatalf("csiclient.exe's pid: %v", err)
	}

	// The runtime: a pod whose container is that process.
	dir := `C:\pipeguard\cri`
	if err := os.MkdirAll(p.path(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	state := fmt.Sprintf(`{"pods":[{"sandboxID":"sb-1","name":"csi-azuredisk-node-x7k2p","namespace":"kube-system","uid":"5f0b8e4a-0000-4000-8000-000000000001",
		"containers":[{"id":"c0ffee01","name":"azuredisk","pid":%d}]}]}`, pid.PID)
	if err := os.WriteFile(p.path(dir+`\state.json`), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	cri := p.command(ctx, p.exe("fakecri"), "-endpoint", `npipe:////./pipe/pipeguard-test-cri`, "-state", dir+`\state.json`)
	criOut, err := cri.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cri.Cancel = func() error { return cri.Process.Kill() }
	if err := cri.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cri.Wait() }()
	if line, err := bufio.NewReader(criOut).ReadString('\n'); err != nil || !strings.HasPrefix(line, "serving") {
		t.Fatalf("fakecri.exe: %q, %v", line, err)
	}

	a := startAgent(t, p, "--cri-endpoint", `npipe:////./pipe/pipeguard-test-cri`, "--cri-timeout", "5s")
	kubeletDir, _ := kubelet(p, `pods`)
	pathExists := call{"filesystem/v1", "PathExists", map[string]any{"path": kubeletDir}}
	unmapped := func(who string, x map[string][]string) {
		t.Helper()
		for _, k := range []string{"pipeguard.io/pod-name", "pipeguard.io/namespace", "pipeguard.io/pod-uid", "pipeguard.io/container-id"} {
			if len(x[k]) > 0 {
				t.Errorf("%s: the record names %s = %q: a guess", who, k, x[k])
			}
		}
		if len(x["pipeguard.io/identity-note"]) == 0 {
			t.Errorf("%s: the record does not say why its pod is unknown: %v", who, x)
		}
	}

	// A process that is no container's.
	if r := calls(t, p, pathExists); r[0].Code != "OK" {
		t.Fatalf("PathExists from outside any container: %s %q", r[0].Code, r[0].Message)
	}
	recs := a.records(t)
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	y := recs[0].User.Extra
	unmapped("a process in no container", y)

	// The container's process. Identity is established per connection;
	// under Wine the runtime's first answers can outlast the bound, and
	// such a connection's records stay unmapped (and say why). The agent
	// asks the runtime again on a miss, at most every DefaultCRIRefresh:
	// a new connection after that asks again, and the one that gets an
	// answer names the pod.
	var x map[string][]string
	deadline := time.Now().Add(2 * time.Minute)
	for attempt := 1; x == nil; attempt++ {
		io.WriteString(stdin, "reconnect\n"+pathExists.String()+"\n")
		if r := next(); r.Code != "OK" {
			t.Fatalf("PathExists from the container: %s %q", r.Code, r.Message)
		}
		recs := a.records(t)
		last := recs[len(recs)-1].User.Extra
		if strings.Join(last["pipeguard.io/pid"], "") != fmt.Sprint(pid.PID) {
			t.Fatalf("the newest record is not the container's call: %v", last)
		}
		if len(last["pipeguard.io/pod-name"]) > 0 {
			x = last
			break
		}
		unmapped(fmt.Sprintf("the container's process, attempt %d", attempt), last)
		if time.Now().After(deadline) {
			break
		}
		// Poll under the deadline for a connection made after the refresh
		// window; the pause only spares the CPU.
		time.Sleep(200 * time.Millisecond)
	}
	if x == nil {
		t.Fatal("no connection of the container's process was mapped to its pod")
	}
	for k, want := range map[string]string{
		"pipeguard.io/pid":          fmt.Sprint(pid.PID),
		"pipeguard.io/pod-name":     "csi-azuredisk-node-x7k2p",
		"pipeguard.io/namespace":    "kube-system",
		"pipeguard.io/pod-uid":      "5f0b8e4a-0000-4000-8000-000000000001",
		"pipeguard.io/container-id": "c0ffee01",
	} {
		if got := strings.Join(x[k], ","); got != want {
			t.Errorf("the container's record: %s = %q, want %q (extra %v)", k, got, want, x)
		}
	}
	t.Logf("mapped: %v; unmapped note: %q", x, y["pipeguard.io/identity-note"])
}
