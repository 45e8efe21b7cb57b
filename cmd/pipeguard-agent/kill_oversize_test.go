package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/review"
	"github.com/pipeguard/pipeguard/agent/guard"
	"github.com/pipeguard/pipeguard/agent/server"
)

const mib = 1 << 20

// The largest inputs a caller's call can carry past the agent's transport
// bounds (server.MaxHeaderListBytes, server.MaxRequestBytes), each far
// over what a record keeps of one string (audit.MaxRecordString).
const (
	bigUserAgent = 14 << 10
	bigPath      = 100 << 10
)

// oversizedClient is a filesystem client on its own connection with user
// agent ua ("" for the default).
func oversizedClient(t *testing.T, sockets, ua string) (fsv1.FilesystemClient, func()) {
	t.Helper()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if ua != "" {
		opts = append(opts, grpc.WithUserAgent(ua))
	}
	conn, err := grpc.NewClient("unix://"+server.SocketPath(sockets, "filesystem", "v1"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return fsv1.NewFilesystemClient(conn), func() { conn.Close() }
}

// answered reports whether err is an answer of the agent (success or a
// status it chose), not a call that never got one.
func answered(err error) bool {
	if err == nil {
		return true
	}
	s, _ := status.FromError(err)
	return s.Code() != codes.Unavailable && s.Code() != codes.Canceled && s.Code() != codes.DeadlineExceeded && s.Code() != codes.Unknown
}

// oversizedLoad runs clients against the agent, some with the largest
// user agents and paths the transport lets through, until enough calls are answered, then kills the
// agent with SIGKILL. It returns the audit IDs of the answered calls.
func oversizedLoad(t *testing.T, cmd *exec.Cmd, exited <-chan error, stderr *strings.Builder, sockets, kubelet string) map[string]string {
	t.Helper()
	var (
		mu     sync.Mutex
		ids    = map[string]string{} // audit ID -> what the call was
		huge   int
		wg     sync.WaitGroup
		stop   = make(chan struct{})
		enough = make(chan struct{})
		once   sync.Once
	)
	bigUA := strings.Repeat("U", bigUserAgent)
	bigPath := kubelet + "/pods/" + strings.Repeat("p", bigPath)
	for w := range 6 {
		oversized := w < 2
		ua := ""
		if oversized {
			ua = bigUA
		}
		wg.Go(func() {
			c, done := oversizedClient(t, sockets, ua)
			defer done()
			ctx := metadata.AppendToOutgoingContext(context.Background(), guard.AuditIDRequestHeader, "1")
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var hdr, trl metadata.MD
				what := fmt.Sprintf("worker %d call %d", w, i)
				var err error
				switch {
				case oversized && i%2 == 0:
					_, err = c.Mkdir(ctx, &fsv1.MkdirRequest{Path: bigPath}, grpc.Header(&hdr), grpc.Trailer(&trl))
					what += " (oversized user agent and path)"
				case i%2 == 0:
					_, err = c.Mkdir(ctx, &fsv1.MkdirRequest{Path: fmt.Sprintf("%s/pods/w%d/%d", kubelet, w, i)}, grpc.Header(&hdr), grpc.Trailer(&trl))
				default:
					_, err = c.PathExists(ctx, &fsv1.PathExistsRequest{Path: kubelet}, grpc.Header(&hdr), grpc.Trailer(&trl))
				}
				if !answered(err) {
					return // the agent is gone
				}
				id := append(hdr.Get(guard.AuditIDHeader), trl.Get(guard.AuditIDHeader)...)
				if len(id) == 0 && !oversized {
					t.Errorf("%s answered (%v) without an audit ID header", what, err)
					return
				}
				mu.Lock()
				if len(id) > 0 {
					// A call whose headers the server refused before the
					// guard saw it has no audit ID and no record.
					ids[id[0]] = what
				}
				if oversized {
					huge++
				}
				n, h := len(ids), huge
				mu.Unlock()
				if n >= 600 && h >= 6 {
					once.Do(func() { close(enough) })
				}
			}
		})
	}
	select {
	case <-enough:
	case err := <-exited:
		t.Fatalf("the agent exited under oversized load: %v\n%s", err, stderr.String())
	}
	// The agent's peak resident memory, against the DaemonSet's 512 MiB.
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "VmHWM:") {
				kb, _ := strconv.Atoi(strings.Fields(l)[1])
				t.Logf("agent peak RSS under oversized load: %d MiB", kb>>10)
				if kb > 512<<10 {
					t.Errorf("agent peak RSS %d MiB, over the 512 MiB the DaemonSet allows", kb>>10)
				}
			}
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	close(stop)
	wg.Wait()
	return ids
}

// recordedIDs returns the audit IDs of the request records in the log.
func recordedIDs(t *testing.T, auditPath string) map[string]bool {
	t.Helper()
	files, err := audit.Files(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		audit.ScanFile(f, func(r audit.Record) error {
			if r.Err == nil && !r.Event.IsCheckpoint() {
				seen[r.Event.AuditID] = true
				if len(r.Raw) > audit.MaxRecordLine {
					t.Errorf("%s: record of %d bytes, more than MaxRecordLine", r.Where(), len(r.Raw))
				}
			}
			return nil
		})
	}
	return seen
}

// plantOldRecord appends to the log a record as an agent without record
// bounds wrote it, continuing the chain: a 20 MiB user agent.
func plantOldRecord(t *testing.T, auditPath string) {
	t.Helper()
	var seq uint64
	var h audit.Hash
	audit.ScanFile(auditPath, func(r audit.Record) error {
		if r.Err == nil {
			seq, h = r.Seq, audit.Link(r.Prev, r.Raw)
		}
		return nil
	})
	now := audit.MicroTime{Time: time.Now()}
	ev := audit.Event{Kind: audit.Kind, APIVersion: audit.APIVersion, Level: audit.LevelMetadata, AuditID: "planted",
		Stage: audit.StageResponseComplete, RequestURI: "/v1.Filesystem/PathExists", Verb: "PathExists",
		UserAgent: strings.Repeat("U", 20*mib), RequestReceivedTimestamp: now, StageTimestamp: now,
		Annotations: map[string]string{audit.AnnotationRecord: audit.RecordRequest, audit.AnnotationSeq: strconv.FormatUint(seq+1, 10), audit.AnnotationPrevHash: h.String()}}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(auditPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
}

// TestKill9WithOversizedInputs attacks the audit log with what an attacker
// holding one CSI pipe can send: concurrent calls with the largest user
// agents and paths the transport lets through among ordinary ones, a SIGKILL under that load, then a
// 20 MiB last record as an agent without record bounds wrote it, and then
// a last line that is not a record. Every answered call has its record,
// every record is at most MaxRecordLine, the agent starts and serves after
// each of them, and verification reports the invalid line as the one
// problem and says what the agent did with it.
func TestKill9WithOversizedInputs(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix sockets and SIGKILL")
	}
	dir := t.TempDir()
	sockets, kubelet, auditPath := filepath.Join(dir, "sockets"), filepath.Join(dir, "kubelet"), filepath.Join(dir, "audit", "audit.log")
	os.MkdirAll(kubelet, 0o755)
	args := []string{"--socket-dir", sockets, "--kubelet-path", kubelet, "--metrics-bind-address", "0",
		"--audit-log-path", auditPath, "--audit-log-maxsize", "1"}

	cmd, exited, stderr := agentProcess(t, args...)
	ids := oversizedLoad(t, cmd, exited, stderr, sockets, kubelet)
	seen := recordedIDs(t, auditPath)
	missing, oversized := 0, 0
	for id, what := range ids {
		if strings.Contains(what, "oversized") {
			oversized++
		}
		if !seen[id] {
			missing++
			t.Errorf("%s was answered (audit ID %s) but has no record", what, id)
		}
	}
	t.Logf("kill -9 after %d answered calls (%d with oversized user agents and paths), %d of them without a record", len(ids), oversized, missing)

	// A call with the largest user agent on a restarted agent, then a 20 MiB
	// last record as an older agent wrote it, then a line that is no
	// record: each time the agent starts and serves.
	serveOnce := func(ua string) {
		t.Helper()
		cmd, exited, stderr := agentProcess(t, args...)
		c, done := oversizedClient(t, sockets, ua)
		defer done()
		if _, err := c.PathExists(context.Background(), &fsv1.PathExistsRequest{Path: kubelet}); err != nil {
			t.Fatalf("PathExists on the restarted agent: %v\n%s", err, stderr.String())
		}
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
	serveOnce(strings.Repeat("U", bigUserAgent))
	plantOldRecord(t, auditPath)
	serveOnce("")
	f, err := os.OpenFile(auditPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("this line was edited by hand\n")
	f.Close()
	serveOnce("")

	files, _ := audit.Files(auditPath)
	rep, err := review.Verify(review.Source{Paths: files})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Msg, "line is not a valid audit record") {
		t.Fatalf("verify: ok %v, problems %v; want only the edited line", rep.OK(), rep.Problems)
	}
	explained := false
	for _, n := range rep.Notices {
		explained = explained || strings.Contains(n.Msg, "when the agent started it found") && strings.Contains(n.Msg, "continued the chain from the last valid record")
	}
	if !explained {
		t.Errorf("verify does not say what the agent did with the edited line: %v", rep.Notices)
	}
	t.Logf("verify: %d records in %d files; problem: %v", rep.Records, len(rep.Files), rep.Problems[0])
}
