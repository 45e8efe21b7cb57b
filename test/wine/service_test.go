//go:build wine && linux

package wine

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestServiceMode installs the agent as a Windows service, as docs/install.md
// does for nodes without HostProcess containers, starts it through the
// service control manager, calls it through its pipes, stops it, and
// verifies the log it wrote.
func TestServiceMode(t *testing.T) {
	p := need(t)
	dir := `C:\pipeguard\service`
	if err := os.MkdirAll(p.path(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := `C:\pipeguard\bin\pipeguard-agent.exe --windows-service --kubelet-path C:\var\lib\kubelet` +
		` --audit-log-path ` + dir + `\audit.log --metrics-bind-address 0 --log-file ` + dir + `\agent.log`
	wineCmd := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := p.command(ctx, args[0], args[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	wineCmd("sc.exe", "create", "pipeguard-agent", "binPath=", bin, "start=", "demand")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = p.command(ctx, "net.exe", "stop", "pipeguard-agent").Run()
		_ = p.command(ctx, "sc.exe", "delete", "pipeguard-agent").Run()
	})
	wineCmd("net.exe", "start", "pipeguard-agent")
	inside, _ := kubelet(p, `pods`)
	var r []result
	for deadline := time.Now().Add(time.Minute); ; {
		r = calls(t, p, call{"filesystem/v1", "PathExists", map[string]any{"path": inside}})
		if r[0].Code != "Dial" || time.Now().After(deadline) {
			break
		}
		// Poll under the deadline while the service's pipe does not exist yet; the pause only spares the CPU.
		time.Sleep(200 * time.Millisecond)
	}
	if r[0].Code != "OK" || !strings.Contains(string(r[0].Response), "true") {
		t.Fatalf("PathExists through the service's pipe: %s %q %s", r[0].Code, r[0].Message, r[0].Response)
	}
	wineCmd("net.exe", "stop", "pipeguard-agent")
	// Wine's net.exe can return while the service is still stopping: wait
	// for the service's own word that it is done, and its stop checkpoint.
	var log, data []byte
	for deadline := time.Now().Add(30 * time.Second); ; {
		var err error
		if log, err = os.ReadFile(p.path(dir + `\agent.log`)); err != nil {
			t.Fatal(err)
		}
		if data, err = os.ReadFile(p.path(dir + `\audit.log`)); err != nil {
			t.Fatal(err)
		}
		done := strings.Contains(string(log), `"msg":"shut down cleanly"`) && strings.Contains(string(data), `"pipeguard.io/checkpoint":"stop"`)
		if done || time.Now().After(deadline) {
			break
		}
		// Poll under the deadline for the service's own word; the pause only spares the CPU.
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{`"msg":"listening"`, `"msg":"shut down cleanly"`} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the service's log lacks %s:\n%s", want, log)
		}
	}
	for _, want := range []string{`"pipeguard.io/checkpoint":"start"`, `PathExists`, `"pipeguard.io/checkpoint":"stop"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the service's audit log lacks %s:\n%s", want, data)
		}
	}
	if out, code := verify(t, p, dir+`\audit.log`); code != 0 {
		t.Errorf("pipeguard.exe audit verify of the service's log: exit %d\n%s", code, out)
	}
}
