package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/review"
	"github.com/pipeguard/pipeguard/agent/guard"
	"github.com/pipeguard/pipeguard/agent/server"
)

// agentProcess runs the test binary as pipeguard-agent with args and waits
// until it listens.
func agentProcess(t *testing.T, args ...string) (*exec.Cmd, <-chan error, *strings.Builder) {
	t.Helper()
	// No probe listener: agents of parallel tests would share its port.
	cmd := exec.Command(os.Args[0], append([]string{"--health-probe-bind-address=0"}, args...)...)
	cmd.Env = append(os.Environ(), asAgentEnv+"=1")
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	stderr := &strings.Builder{}
	listening := make(chan struct{})
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(pipe)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			stderr.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), `"msg":"listening"`) {
				once.Do(func() { close(listening) })
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
	return cmd, exited, stderr
}

// TestKill9UnderLoad kills the agent with SIGKILL while concurrent clients
// create directories and check paths, then checks that every request a
// client saw succeed has its records, that the log verifies (a torn final
// line is reported, not fatal), and that a restarted agent continues the
// chain.
func TestKill9UnderLoad(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix sockets and SIGKILL")
	}
	dir := t.TempDir()
	sockets, kubelet, auditPath := filepath.Join(dir, "sockets"), filepath.Join(dir, "kubelet"), filepath.Join(dir, "audit", "audit.log")
	os.MkdirAll(kubelet, 0o755)
	args := []string{"--socket-dir", sockets, "--kubelet-path", kubelet, "--metrics-bind-address", "0",
		"--audit-log-path", auditPath, "--audit-log-maxsize", "1"}
	cmd, exited, stderr := agentProcess(t, args...)

	succeeded, failed := killUnderLoad(t, cmd, exited, sockets, kubelet)
	files := checkRecords(t, auditPath, succeeded)
	rep, err := review.Verify(review.Source{Paths: files})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("verify after kill -9: %v", rep.Problems)
	}
	t.Logf("kill -9 after %d successful calls (%d files, %d records, %d calls failed as the agent died); notices: %v",
		len(succeeded), len(rep.Files), rep.Records, failed, rep.Notices)

	// A restarted agent continues the chain.
	cmd, exited, stderr = agentProcess(t, args...)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-exited; err != nil {
		t.Fatalf("restarted agent: %v\n%s", err, stderr.String())
	}
	files, _ = audit.Files(auditPath)
	rep, _ = review.Verify(review.Source{Paths: files})
	if !rep.OK() {
		t.Fatalf("verify after restart: %v", rep.Problems)
	}
}

// killUnderLoad runs 8 clients that alternate Mkdir and PathExists against
// the agent, kills it with SIGKILL once 3000 calls have succeeded, and
// returns the audit ID and method of every call a client saw succeed and
// the number of calls that failed as the agent died.
func killUnderLoad(t *testing.T, cmd *exec.Cmd, exited <-chan error, sockets, kubelet string) (map[string]string, int) {
	t.Helper()
	var (
		mu        sync.Mutex
		succeeded = map[string]string{} // audit ID -> method
		failed    int
		wg        sync.WaitGroup
	)
	enough := make(chan struct{})
	var enoughOnce sync.Once
	for w := range 8 {
		wg.Go(func() {
			conn, err := grpc.NewClient("unix://"+server.SocketPath(sockets, "filesystem", "v1"), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			c := fsv1.NewFilesystemClient(conn)
			// Ask for each call's audit ID (the audit-id response header).
			ctx := metadata.AppendToOutgoingContext(context.Background(), guard.AuditIDRequestHeader, "1")
			for i := 0; ; i++ {
				var md metadata.MD
				var err error
				method := "Mkdir"
				if i%2 == 0 {
					_, err = c.Mkdir(ctx, &fsv1.MkdirRequest{Path: fmt.Sprintf("%s/pods/w%d/%d", kubelet, w, i)}, grpc.Header(&md))
				} else {
					method = "PathExists"
					_, err = c.PathExists(ctx, &fsv1.PathExistsRequest{Path: kubelet}, grpc.Header(&md))
				}
				mu.Lock()
				if err != nil {
					failed++
				} else if ids := md.Get(guard.AuditIDHeader); len(ids) == 1 {
					succeeded[ids[0]] = method
				}
				n, f := len(succeeded), failed
				mu.Unlock()
				if n >= 3000 {
					enoughOnce.Do(func() { close(enough) })
				}
				if f > 0 {
					return // the agent is gone
				}
			}
		})
	}
	select {
	case <-enough:
	case err := <-exited:
		t.Fatalf("the agent exited under load: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	wg.Wait()
	if len(succeeded) == 0 {
		t.Fatal("no call succeeded")
	}
	return succeeded, failed
}

// checkRecords checks that every call in succeeded (audit ID -> method)
// has exactly one completed record in the log at auditPath, and a mutating
// call also its write-ahead record; it returns the log's files.
func checkRecords(t *testing.T, auditPath string, succeeded map[string]string) []string {
	t.Helper()
	files, err := audit.Files(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	stages := map[string]map[audit.Stage]int{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		audit.Scan(fh, f, func(r audit.Record) error {
			if r.Err == nil && !r.Event.IsCheckpoint() {
				if stages[r.Event.AuditID] == nil {
					stages[r.Event.AuditID] = map[audit.Stage]int{}
				}
				stages[r.Event.AuditID][r.Event.Stage]++
			}
			return nil
		})
		fh.Close()
	}
	for id, method := range succeeded {
		s := stages[id]
		if s[audit.StageResponseComplete] != 1 || method == "Mkdir" && s[audit.StageRequestReceived] != 1 {
			t.Fatalf("%s %s succeeded but its records are %v", method, id, s)
		}
	}
	return files
}
