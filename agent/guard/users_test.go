package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/review"
	"github.com/pipeguard/pipeguard/agent/confine"
	"github.com/pipeguard/pipeguard/agent/gate"
	"github.com/pipeguard/pipeguard/agent/identity"
)

// pods is a PodLookup whose pods can be added and changed while requests
// run.
type pods struct {
	mu sync.Mutex
	m  map[string]identity.PodInfo
}

func (p *pods) PodByUID(uid string) (identity.PodInfo, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i, ok := p.m[uid]
	return i, ok
}

func (p *pods) set(uid string, i identity.PodInfo) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]identity.PodInfo{}
	}
	p.m[uid] = i
}

// newPodGuard is newTestGuard with a pod lookup.
func newPodGuard(t *testing.T, lookup identity.PodLookup) (*Guard, string) {
	t.Helper()
	engine, err := gate.New(context.Background(), gate.Options{Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/audit.log"
	log, err := audit.Open(audit.Options{Path: path, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = log.Close() })
	conf, err := confine.New(confine.Options{Flavour: confine.Linux, Roots: []string{"/var/lib/kubelet"}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Confiner: conf, Gate: engine, Audit: log, Pods: lookup})
	if err != nil {
		t.Fatal(err)
	}
	return g, path
}

// requestRecords reads the request records of an audit file, checking that
// each is byte for byte what encoding/json writes for the event it holds.
func requestRecords(t *testing.T, path string) []audit.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []audit.Event
	if err := audit.Scan(f, path, func(r audit.Record) error {
		if r.Err != nil {
			t.Fatalf("%s:%d: %v", r.File, r.Line, r.Err)
		}
		want, err := json.Marshal(&r.Event)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.Raw, want) {
			t.Errorf("%s:%d is not what encoding/json writes:\n got %s\nwant %s", r.File, r.Line, r.Raw, want)
		}
		if !r.Event.IsCheckpoint() {
			recs = append(recs, r.Event)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestUserBlockFollowsCaller makes requests on one connection whose caller
// changes between them: its pod is found only after the first request, then
// its pod's details change, then a request sends a token the agent cannot
// verify, then the caller is found in no pod. Each record must name the
// caller as it was for that request, never a block encoded for an earlier
// one.
func TestUserBlockFollowsCaller(t *testing.T) {
	lookup := &pods{}
	g, path := newPodGuard(t, lookup)
	const podUID = "5f0b8e4a-0000-0000-0000-000000000001"
	conn := &identity.Caller{Source: identity.SourcePeer, PID: 4242, UID: 1000, GID: 2000, PodUID: podUID, PodMapped: true}
	other := &identity.Caller{Source: identity.SourcePeer, PID: 77, UID: 0, GID: 0}
	read := func(c *identity.Caller, md metadata.MD) {
		t.Helper()
		ctx := callContext(c, md)
		ok := func(context.Context, any) (any, error) { return &fsv1.PathExistsResponse{}, nil }
		if _, err := g.Unary(ctx, &fsv1.PathExistsRequest{Path: "/var/lib/kubelet/pods"}, &grpc.UnaryServerInfo{FullMethod: "/v1.Filesystem/PathExists"}, ok); err != nil {
			t.Fatal(err)
		}
	}
	read(conn, metadata.MD{})
	read(other, metadata.MD{})
	lookup.set(podUID, identity.PodInfo{UID: podUID, Name: "web-1", Namespace: "shop", ServiceAccount: "web"})
	read(conn, metadata.MD{})
	read(conn, metadata.MD{})
	lookup.set(podUID, identity.PodInfo{UID: podUID, Name: "web-1", Namespace: "shop", ServiceAccount: "web-v2"})
	read(conn, metadata.MD{})
	read(conn, metadata.Pairs("authorization", "Bearer x.y.z"))
	read(conn, metadata.MD{})
	conn.PodUID = "" // a connection of a new caller at the same address
	read(conn, metadata.MD{})

	recs := requestRecords(t, path)
	type want struct{ pod, ns, sa string }
	wants := []want{{}, {}, {"web-1", "shop", "web"}, {"web-1", "shop", "web"}, {"web-1", "shop", "web-v2"},
		{"web-1", "shop", "web-v2"}, {"web-1", "shop", "web-v2"}, {}}
	if len(recs) != len(wants) {
		t.Fatalf("%d records, want %d", len(recs), len(wants))
	}
	for i, w := range wants {
		u := recs[i].User
		if i == 1 {
			if u.ExtraValue(audit.ExtraPID) != "77" || u.Username != "pipeguard:peer:uid:0" {
				t.Errorf("record %d is the other connection's: %+v", i, u)
			}
			continue
		}
		got := want{u.ExtraValue(audit.ExtraPodName), u.ExtraValue(audit.ExtraNamespace), u.ExtraValue(audit.ExtraServiceAccount)}
		if got != w {
			t.Errorf("record %d: pod %+v, want %+v", i, got, w)
		}
		if u.ExtraValue(audit.ExtraPID) != "4242" {
			t.Errorf("record %d: pid %q", i, u.ExtraValue(audit.ExtraPID))
		}
		wantPodUID := podUID
		if i == len(wants)-1 {
			wantPodUID = ""
		}
		if u.ExtraValue(audit.ExtraPodUID) != wantPodUID {
			t.Errorf("record %d: pod uid %q, want %q", i, u.ExtraValue(audit.ExtraPodUID), wantPodUID)
		}
		wantToken := ""
		if i == 5 {
			wantToken = "sent but not verified: the agent has no Options.Tokens; identity is the peer's"
		}
		if tok := recs[i].Annotation(audit.AnnotationToken); tok != wantToken {
			t.Errorf("record %d: token annotation %q, want %q", i, tok, wantToken)
		}
	}
}

// TestUserCacheManyConnections uses more connections than the cache has
// slots, with callers whose details change, from several goroutines: every
// block handed out is the one userInfo makes for the caller at hand.
func TestUserCacheManyConnections(t *testing.T) {
	uc := newUserCache()
	conns := make([]*identity.Caller, 3*userSlots)
	for i := range conns {
		conns[i] = &identity.Caller{Source: identity.SourcePeer, PID: 1000 + i, UID: int64(i), GID: -1}
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for round := range 50 {
				for i, conn := range conns {
					c := conn.Clone()
					if (i+round+w)%3 == 0 {
						c.PodName, c.Namespace = fmt.Sprintf("pod-%d", round), "ns"
					}
					if (i+round)%5 == 0 {
						c.Notes = append(c.Notes, fmt.Sprintf("note %d", w))
					}
					if (i+w)%7 == 0 {
						c.Source, c.TokenUser = identity.SourceToken, "system:serviceaccount:ns:sa"
					}
					got := uc.get(conn, c).Info()
					want := userInfo(keyOf(c), c.Notes)
					if !reflect.DeepEqual(got, want) {
						t.Errorf("connection %d round %d: user %+v, want %+v", i, round, got, want)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// TestUserInfoMatchesCaller checks that the user block made from a caller's
// key names the caller as the caller's own methods do.
func TestUserInfoMatchesCaller(t *testing.T) {
	for _, c := range []*identity.Caller{
		{UID: -1, GID: -1},
		{Source: identity.SourcePeer, UID: 5, GID: 6, PID: 7},
		{Source: identity.SourcePeer, UID: -1, GID: -1, SID: "S-1-5-18", SIDSource: "client-token"},
		{Source: identity.SourceToken, UID: 0, GID: 0, TokenUser: "system:serviceaccount:a:b", Notes: []string{"n"}},
	} {
		u := userInfo(keyOf(c), c.Notes)
		if u.Username != c.Username() {
			t.Errorf("%+v: username %q, want %q", c, u.Username, c.Username())
		}
	}
}

// TestConcurrentCallsRecords makes reads and mutating calls from many
// connections at once, so that their records share writes: the chain
// verifies, every call has exactly its records (one for a read, the
// write-ahead and the completion for a mutating call) under the audit ID
// its client got, and no audit ID is used by two calls.
func TestConcurrentCallsRecords(t *testing.T) {
	g, path := newPodGuard(t, nil)
	const conns, calls = 16, 40
	var mu sync.Mutex
	want := map[string]string{} // audit ID → method
	var wg sync.WaitGroup
	for w := range conns {
		caller := &identity.Caller{Source: identity.SourcePeer, PID: 100 + w, UID: int64(w), GID: 0}
		wg.Go(func() {
			for i := range calls {
				method, req := "PathExists", any(&fsv1.PathExistsRequest{Path: "/var/lib/kubelet/pods"})
				if i%4 == 0 {
					method, req = "Mkdir", &fsv1.MkdirRequest{Path: fmt.Sprintf("/var/lib/kubelet/pods/%d-%d", w, i)}
				}
				ctx := callContext(caller, metadata.Pairs(AuditIDRequestHeader, "1"))
				ok := func(context.Context, any) (any, error) { return &fsv1.MkdirResponse{}, nil }
				if _, err := g.Unary(ctx, req, &grpc.UnaryServerInfo{FullMethod: "/v1.Filesystem/" + method}, ok); err != nil {
					t.Error(err)
					return
				}
				id := grpc.ServerTransportStreamFromContext(ctx).(*headerStream).header.Get(AuditIDHeader)[0]
				mu.Lock()
				if prev, dup := want[id]; dup {
					t.Errorf("audit ID %s given to a %s and a %s call", id, prev, method)
				}
				want[id] = method
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	rep, err := review.Verify(review.Source{Paths: []string{path}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) > 0 {
		t.Fatalf("chain after concurrent calls: %v", rep.Problems)
	}
	got := map[string][]audit.Stage{}
	for _, ev := range requestRecords(t, path) {
		got[ev.AuditID] = append(got[ev.AuditID], ev.Stage)
	}
	if len(got) != len(want) || len(want) != conns*calls {
		t.Fatalf("%d audit IDs in the log, %d calls made, want %d", len(got), len(want), conns*calls)
	}
	for id, method := range want {
		stages := got[id]
		wantStages := []audit.Stage{audit.StageResponseComplete}
		if method == "Mkdir" {
			wantStages = []audit.Stage{audit.StageRequestReceived, audit.StageResponseComplete}
		}
		if !reflect.DeepEqual(stages, wantStages) {
			t.Errorf("%s call %s: records %v, want %v", method, id, stages, wantStages)
		}
	}
}
