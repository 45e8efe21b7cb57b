package guard

import (
	"context"
	"os"
	"testing"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/identity"
)

// TestUnaryRecords checks the records of a read and of a mutating call made
// on one connection: the caller's details, each in its own extra key, the
// user agent, the stages, and the audit ID header the client asked for.
func TestUnaryRecords(t *testing.T) {
	g, path := newTestGuard(t)
	caller := &identity.Caller{Source: identity.SourcePeer, PID: 4242, UID: 1000, GID: 2000, ProcessStart: "2025-03-01T08:00:00.00Z",
		ContainerID: "c0ffee", Runtime: "containerd", PodUID: "5f0b8e4a-0000-0000-0000-000000000001", PodMapped: true,
		Notes: []string{"first note", "second note"}}
	ok := func(context.Context, any) (any, error) { return &fsv1.MkdirResponse{}, nil }
	var ids []string
	for _, m := range []struct {
		method string
		req    any
	}{{"PathExists", &fsv1.PathExistsRequest{Path: "/var/lib/kubelet/pods"}}, {"Mkdir", &fsv1.MkdirRequest{Path: "/var/lib/kubelet/pods/x"}}} {
		ctx := callContext(caller, metadata.Pairs("user-agent", "test-agent/1", AuditIDRequestHeader, "1"))
		if _, err := g.Unary(ctx, m.req, &grpc.UnaryServerInfo{FullMethod: "/v1.Filesystem/" + m.method}, ok); err != nil {
			t.Fatal(err)
		}
		hs := grpc.ServerTransportStreamFromContext(ctx).(*headerStream)
		id := hs.header.Get(AuditIDHeader)
		if len(id) != 1 || id[0] == "" {
			t.Fatalf("%s: audit-id header %v", m.method, hs.header)
		}
		ids = append(ids, id[0])
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []audit.Event
	if err := audit.Scan(f, path, func(r audit.Record) error {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if !r.Event.IsCheckpoint() {
			recs = append(recs, r.Event)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wantStages := []struct {
		id    string
		verb  string
		stage audit.Stage
	}{{ids[0], "PathExists", audit.StageResponseComplete}, {ids[1], "Mkdir", audit.StageRequestReceived}, {ids[1], "Mkdir", audit.StageResponseComplete}}
	if len(recs) != len(wantStages) {
		t.Fatalf("%d records, want %d", len(recs), len(wantStages))
	}
	wantExtra := map[string][]string{
		audit.ExtraPID: {"4242"}, audit.ExtraProcessStart: {"2025-03-01T08:00:00.00Z"}, audit.ExtraUID: {"1000"}, audit.ExtraGID: {"2000"},
		audit.ExtraContainerID: {"c0ffee"}, audit.ExtraPodUID: {"5f0b8e4a-0000-0000-0000-000000000001"}, audit.ExtraSource: {"peer"},
		audit.ExtraNote: {"first note", "second note"},
	}
	for i, w := range wantStages {
		ev := recs[i]
		if ev.AuditID != w.id || ev.Verb != w.verb || ev.Stage != w.stage {
			t.Errorf("record %d: %s %s %s, want %s %s %s", i, ev.AuditID, ev.Verb, ev.Stage, w.id, w.verb, w.stage)
		}
		if ev.User.Username != "pipeguard:peer:uid:1000" || ev.UserAgent != "test-agent/1" {
			t.Errorf("record %d: user %q, agent %q", i, ev.User.Username, ev.UserAgent)
		}
		if len(ev.User.Extra) != len(wantExtra) {
			t.Errorf("record %d: extra %v, want %v", i, ev.User.Extra, wantExtra)
		}
		for k, v := range wantExtra {
			got := ev.User.Extra[k]
			if len(got) != len(v) {
				t.Errorf("record %d: extra %s = %v, want %v", i, k, got, v)
				continue
			}
			for j := range v {
				if got[j] != v[j] {
					t.Errorf("record %d: extra %s = %v, want %v", i, k, got, v)
				}
			}
		}
		if ev.Annotation(audit.AnnotationDecision) != audit.DecisionAllow {
			t.Errorf("record %d: decision %q", i, ev.Annotation(audit.AnnotationDecision))
		}
	}
}
