package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/server"
)

// When the test binary is started with this variable set, it is the agent.
const asAgentEnv = "PIPEGUARD_AGENT_TEST_AS_AGENT"

func TestMain(m *testing.M) {
	if os.Getenv(asAgentEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// TestContract runs the agent binary as operators and external checks do:
// pipeguard-agent --socket-dir DIR --kubelet-path K serves
// DIR/csi-proxy-filesystem-v1.sock, confines filesystem calls to K, and on
// SIGTERM exits 0 and removes its sockets.
func TestContract(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix sockets and SIGTERM")
	}
	dir := t.TempDir()
	sockets, kubelet := filepath.Join(dir, "sockets"), filepath.Join(dir, "kubelet")
	if err := os.MkdirAll(kubelet, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "--socket-dir", sockets, "--kubelet-path", kubelet, "--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--audit-log-path", filepath.Join(dir, "audit", "audit.log"))
	cmd.Env = append(os.Environ(), asAgentEnv+"=1")
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The agent logs "listening" once every socket is open.
	var stderr strings.Builder
	listening := make(chan struct{})
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), `"msg":"listening"`) {
				close(listening)
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { <-logDone; exited <- cmd.Wait() }()
	select {
	case <-listening:
	case err := <-exited:
		t.Fatalf("agent exited before listening: %v\n%s", err, stderr.String())
	}
	sock := server.SocketPath(sockets, "filesystem", "v1")

	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := fsv1.NewFilesystemClient(conn)
	ctx := context.Background()
	if _, err := c.Mkdir(ctx, &fsv1.MkdirRequest{Path: kubelet + "/pods/a"}); err != nil {
		t.Fatalf("Mkdir inside the kubelet path: %v", err)
	}
	_, err = c.Mkdir(ctx, &fsv1.MkdirRequest{Path: dir + "/elsewhere"})
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), "is outside the allowed roots") {
		t.Fatalf("Mkdir outside: %v", err)
	}
	for _, group := range []string{"disk-v1", "volume-v1", "smb-v1", "system-v1alpha1", "iscsi-v1alpha2", "filesystem-v1beta1"} {
		if _, err := os.Stat(filepath.Join(sockets, "csi-proxy-"+group+".sock")); err != nil {
			t.Errorf("socket for %s: %v", group, err)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Fatalf("agent exit after SIGTERM: %v\n%s", err, stderr.String())
	}
	if entries, _ := os.ReadDir(sockets); len(entries) != 0 {
		t.Fatalf("sockets left after SIGTERM: %v", entries)
	}
}
