//go:build linux

package identity

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLinuxPeerOnARealSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	c, release, err := Peer(server)
	if err != nil {
		t.Fatal(err)
	}
	if release != nil {
		t.Error("Linux holds nothing for the connection's life")
	}
	if c.PID != os.Getpid() || c.UID != int64(os.Getuid()) || c.GID != int64(os.Getgid()) || !c.PodMapped || c.Source != SourcePeer {
		t.Fatalf("caller %+v", c)
	}
	start, err := time.Parse(time.RFC3339Nano, c.ProcessStart)
	if err != nil || time.Since(start) < 0 || time.Since(start) > 24*time.Hour {
		t.Fatalf("process start %q: %v", c.ProcessStart, err)
	}
	if !strings.HasPrefix(c.Username(), "pipeguard:peer:uid:") {
		t.Fatalf("username %q", c.Username())
	}
	t.Logf("caller %+v", c)
}

// TestProcDescribe reads a procfs tree laid out as the kernel does.
func TestProcDescribe(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("stat", "cpu  1 2 3\nbtime 1740816000\nprocesses 9\n")
	// The command name holds spaces and a parenthesis; starttime (field 22) is 12345 ticks.
	write("77/stat", "77 (csi (node) x) S 1 77 77 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 12345 1000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n")
	write("77/cgroup", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"+podSys+".slice/cri-containerd-"+cid+".scope\n")
	c := &Caller{PID: 77}
	if err := (&Proc{Root: root}).Describe(c); err != nil {
		t.Fatal(err)
	}
	if c.ProcessStart != "2025-03-01T08:02:03.45Z" || c.ContainerID != cid || c.PodUID != podUID || c.Runtime != "containerd" {
		t.Fatalf("described %+v", c)
	}
	err := (&Proc{Root: root}).Describe(&Caller{PID: 78})
	if err == nil || !strings.Contains(err.Error(), "process 78:") {
		t.Fatalf("missing process: %v", err)
	}
}
