package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

func request(i int, decision string) *Event {
	t := time.Date(2025, 3, 1, 12, 0, i%60, 0, time.UTC)
	return &Event{
		Kind: Kind, APIVersion: APIVersion, Level: LevelMetadata, AuditID: fmt.Sprintf("id-%d", i),
		Stage: StageResponseComplete, RequestURI: "/v1.Filesystem/Mkdir", Verb: "Mkdir",
		User:                     UserInfo{Username: "pipeguard:peer:uid:0", Extra: map[string][]string{ExtraPID: {"42"}}},
		ObjectRef:                &ObjectReference{Resource: "filesystem", APIVersion: "v1", Name: fmt.Sprintf("/k/%d", i)},
		RequestReceivedTimestamp: MicroTime{t}, StageTimestamp: MicroTime{t},
		Annotations: map[string]string{AnnotationRecord: RecordRequest, AnnotationDecision: decision},
	}
}

func openLog(t *testing.T, o Options) *Log {
	t.Helper()
	o.Log = logr.Discard()
	l, err := Open(o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

func write(t *testing.T, l *Log, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if err := l.Append(request(i, DecisionAllow), i%2 == 0); err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
	}
}

// failingFile fails writes after a number of bytes, as a full disk does.
type failingFile struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	room     int
	syncs    atomic.Int64
	syncFail bool
}

func (f *failingFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(p) > f.room {
		n := f.room
		f.buf.Write(p[:n])
		f.room = 0
		return n, errors.New("no space left on device")
	}
	f.room -= len(p)
	return f.buf.Write(p)
}
func (f *failingFile) Sync() error {
	f.syncs.Add(1)
	if f.syncFail {
		return errors.New("input/output error")
	}
	return nil
}
func (f *failingFile) Truncate(n int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buf.Truncate(int(n))
	return nil
}
func (f *failingFile) Close() error { return nil }

func TestWriteFailureLeavesNoPartialRecord(t *testing.T) {
	ff := &failingFile{room: 1500}
	l := openLog(t, Options{Path: filepath.Join(t.TempDir(), "audit.log"), OpenFile: func(string) (File, error) { return ff, nil }})
	var err error
	i := 0
	for ; err == nil; i++ {
		err = l.Append(request(i, DecisionAllow), false)
	}
	if !strings.Contains(err.Error(), "writing audit record to") || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("error: %v", err)
	}
	seq := l.Seq()
	rep := checkChain(t, "mem", bytes.NewReader(ff.buf.Bytes()))
	if !rep.OK() || rep.Last != seq {
		t.Fatalf("after a failed write: ok=%v last=%d seq=%d problems=%v", rep.OK(), rep.Last, seq, rep.Problems)
	}
}

func TestDurableAppendsShareSyncs(t *testing.T) {
	ff := &failingFile{room: 1 << 30}
	l := openLog(t, Options{Path: filepath.Join(t.TempDir(), "audit.log"), OpenFile: func(string) (File, error) { return ff, nil }})
	before := ff.syncs.Load()
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 50 {
				if err := l.Append(request(w*100+i, DecisionAllow), true); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n := ff.syncs.Load() - before; n > 800 || n == 0 {
		t.Fatalf("%d fsyncs for 800 durable appends", n)
	}
	t.Logf("%d fsyncs for 800 durable appends from 16 writers", ff.syncs.Load()-before)
	ff.syncFail = true
	if err := l.Append(request(1, DecisionAllow), true); err == nil || !strings.Contains(err.Error(), "syncing the audit log") {
		t.Fatalf("append with failing fsync: %v", err)
	}
}

func BenchmarkAppend(b *testing.B) {
	l, err := Open(Options{Path: filepath.Join(b.TempDir(), "audit.log"), Log: logr.Discard()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for i := 0; b.Loop(); i++ {
		if err := l.Append(request(i, DecisionAllow), false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordParts splits the cost of one record of a read call from a
// resolved pod, as the agent writes it at Metadata level, into the parts
// every record needs: encoding, chain hashing (SHA-256 over the previous
// hash and the line) and the write(2) that puts it in the file. Their sum
// is the least an audited request costs beyond an unaudited one.
func BenchmarkRecordParts(b *testing.B) {
	t := time.Date(2026, 11, 21, 12, 0, 0, 123456000, time.UTC)
	ev := &Event{
		Kind: Kind, APIVersion: APIVersion, Level: LevelMetadata, AuditID: "2cd3373b-8f2b-4ee5-9465-c9ddeacb26cb",
		Stage: StageResponseComplete, RequestURI: "/v1.Filesystem/PathExists", Verb: "PathExists",
		User: UserInfo{Username: "pipeguard:peer:uid:0", Extra: map[string][]string{
			ExtraPID: {"2738"}, ExtraProcessStart: {"2026-11-21T11:58:34.53Z"}, ExtraUID: {"0"}, ExtraGID: {"0"},
			ExtraContainerID: {"3f1c9a0e7b2d4c5f8a6e1d0b9c8f7e6d5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d"},
			ExtraPodUID:      {"8d2c6f4e-1a3b-4c5d-9e7f-0a1b2c3d4e5f"}, ExtraPodName: {"csi-smb-node-win-7xk2p"},
			ExtraNamespace: {"kube-system"}, ExtraServiceAccount: {"csi-smb-node-sa"}, ExtraSource: {"peer"},
		}},
		UserAgent:                "grpc-go/1.85.0",
		ObjectRef:                &ObjectReference{Resource: "filesystem", APIGroup: "csi-proxy", APIVersion: "v1", Name: "/var/lib/kubelet/pods/8d2c6f4e-1a3b-4c5d-9e7f-0a1b2c3d4e5f/volumes/kubernetes.io~csi/pvc-1/mount"},
		ResponseStatus:           &Status{Status: "Success", Reason: "OK", Code: 200},
		RequestReceivedTimestamp: MicroTime{t}, StageTimestamp: MicroTime{t.Add(90 * time.Microsecond)},
		Annotations: map[string]string{AnnotationRecord: RecordRequest, AnnotationDecision: DecisionAllow, AnnotationGRPCCode: "OK",
			AnnotationSeq: "123456", AnnotationPrevHash: Genesis().String()},
	}
	SetDecision(ev.Annotations, true, "")
	line, err := appendEvent(nil, ev)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		buf := make([]byte, 0, 2*len(line))
		for b.Loop() {
			buf, _ = appendEvent(buf[:0], ev)
		}
	})
	b.Run("hash", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		h := Genesis()
		for b.Loop() {
			h = Link(h, line)
		}
	})
	b.Run("write", func(b *testing.B) {
		f, err := os.OpenFile(filepath.Join(b.TempDir(), "audit.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		b.SetBytes(int64(len(line) + 1))
		line := append(line, '\n')
		for b.Loop() {
			if _, err := f.Write(line); err != nil {
				b.Fatal(err)
			}
		}
	})
}
