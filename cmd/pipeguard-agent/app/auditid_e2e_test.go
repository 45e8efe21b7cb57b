package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	diskv1 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1"
	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/guard"
)

// auditIDAsk asks for the audit-id response header on every call it is
// passed to, as per-call credentials can add metadata to any call.
type auditIDAsk struct{}

func (auditIDAsk) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{guard.AuditIDRequestHeader: "1"}, nil
}
func (auditIDAsk) RequireTransportSecurity() bool { return false }

// askAuditID is the call option with which a test's client asks for the
// audit ID of its call.
var askAuditID grpc.CallOption = grpc.PerRPCCredentials(auditIDAsk{})

// noAuditIDHeader fails if a header or trailer key is audit-id in any
// letter case.
func noAuditIDHeader(t *testing.T, name string, mds ...metadata.MD) {
	t.Helper()
	for _, md := range mds {
		for k, v := range md {
			if strings.EqualFold(k, guard.AuditIDHeader) {
				t.Errorf("%s: a client that did not ask got %s: %v", name, k, v)
			}
		}
	}
}

// TestAuditIDHeaderOnlyWhenAsked makes each call through the agent's real
// sockets twice, with the plain csi-proxy client API: once asking for the
// audit ID, once not, as unmodified csi-proxy clients do. A client that
// asks gets one audit-id header whose value is the audit ID of the call's
// records; one that does not gets no audit-id header or trailer, on an
// allowed call, a policy or confinement denial, a malformed request, a
// failed host operation, and a call refused because the audit log cannot
// be written. Every call is in the log either way.
func TestAuditIDHeaderOnlyWhenAsked(t *testing.T) {
	var ff *fullFile
	g := startGuarded(t, Options{}, guard.Options{}, openFull(&ff), sampleAgentPolicy)
	fs := fsv1.NewFilesystemClient(g.dial(t, "filesystem", "v1"))
	disk := diskv1.NewDiskClient(g.dial(t, "disk", "v1"))
	ctx := context.Background()
	k := g.kubelet
	type call struct {
		name, verb string
		code       codes.Code
		msg        string
		records    string
		do         func(o ...grpc.CallOption) error
	}
	calls := []call{
		{"mkdir inside", "Mkdir", codes.OK, "", "[RequestReceived ResponseComplete]", func(o ...grpc.CallOption) error {
			_, err := fs.Mkdir(ctx, &fsv1.MkdirRequest{Path: filepath.Join(k, "pods", "a")}, o...)
			return err
		}},
		{"path exists", "PathExists", codes.OK, "", "[ResponseComplete]", func(o ...grpc.CallOption) error {
			_, err := fs.PathExists(ctx, &fsv1.PathExistsRequest{Path: k}, o...)
			return err
		}},
		{"mkdir outside", "Mkdir", codes.PermissionDenied, "(confinement rule outside-roots)", "[ResponseComplete]", func(o ...grpc.CallOption) error {
			_, err := fs.Mkdir(ctx, &fsv1.MkdirRequest{Path: "/etc/pipeguard-test"}, o...)
			return err
		}},
		{"disk from a host process", "PartitionDisk", codes.PermissionDenied, "(rule disk-volume-csi-only)", "[ResponseComplete]", func(o ...grpc.CallOption) error {
			_, err := disk.PartitionDisk(ctx, &diskv1.PartitionDiskRequest{DiskNumber: 1}, o...)
			return err
		}},
		{"traversal", "PathExists", codes.InvalidArgument, "(confinement rule traversal)", "[ResponseComplete]", func(o ...grpc.CallOption) error {
			_, err := fs.PathExists(ctx, &fsv1.PathExistsRequest{Path: k + "/../outside"}, o...)
			return err
		}},
		{"host failure", "Rmdir", codes.Unknown, "no such file or directory", "[RequestReceived ResponseComplete]", func(o ...grpc.CallOption) error {
			_, err := fs.Rmdir(ctx, &fsv1.RmdirRequest{Path: filepath.Join(k, "missing")}, o...)
			return err
		}},
	}
	given := map[string]call{} // audit ID -> the asking call given it
	for _, c := range calls {
		var header, trailers metadata.MD
		err := c.do(askAuditID, grpc.Header(&header), grpc.Trailer(&trailers))
		wantStatus(t, err, c.code, c.msg)
		ids := header.Get(guard.AuditIDHeader)
		if len(ids) != 1 || ids[0] == "" {
			t.Fatalf("%s: the client asked and got audit-id %q", c.name, ids)
		}
		given[ids[0]] = c
		noAuditIDHeader(t, c.name+", asking (trailers)", trailers)

		header, trailers = nil, nil
		err = c.do(grpc.Header(&header), grpc.Trailer(&trailers))
		wantStatus(t, err, c.code, c.msg)
		noAuditIDHeader(t, c.name, header, trailers)
	}

	recs := g.requests(t)
	if len(recs) != 2*len(calls) {
		t.Fatalf("%d audit IDs in the log, want one for each of the %d calls", len(recs), 2*len(calls))
	}
	unasked := map[string]int{} // verb and stages -> calls not asking
	for _, c := range calls {
		unasked[c.verb+" "+c.records]++
	}
	for id, rs := range recs {
		var stages []string
		for _, r := range rs {
			stages = append(stages, string(r.Event.Stage))
		}
		got := rs[0].Event.Verb + " " + fmt.Sprint(stages)
		c, ok := given[id]
		if !ok {
			unasked[got]--
			continue
		}
		if want := c.verb + " " + c.records; got != want {
			t.Errorf("%s: the records of audit ID %s are %s, want %s", c.name, id, got, want)
		}
		if last := rs[len(rs)-1].Event; last.Annotation(audit.AnnotationGRPCCode) != c.code.String() {
			t.Errorf("%s: completion of %s says %v", c.name, id, last.Annotations)
		}
	}
	for k, n := range unasked {
		if n != 0 {
			t.Errorf("calls that did not ask, %s: %d more made than recorded", k, n)
		}
	}

	// The audit disk is full: the call is refused, and only the client
	// that asks learns the audit ID it would have had.
	ff.setRoom(0)
	const full = "no space left on device); the request was not run because pipeguard-agent runs with --audit-failure=deny; free space or fix permissions on the audit log directory (rule audit-unavailable)"
	var header, trailers metadata.MD
	_, err := fs.PathExists(ctx, &fsv1.PathExistsRequest{Path: k}, askAuditID, grpc.Header(&header))
	wantStatus(t, err, codes.Unavailable, full)
	if ids := header.Get(guard.AuditIDHeader); len(ids) != 1 || ids[0] == "" || given[ids[0]].name != "" {
		t.Errorf("refused call, asking: audit-id %q", ids)
	}
	header = nil
	_, err = fs.PathExists(ctx, &fsv1.PathExistsRequest{Path: k}, grpc.Header(&header), grpc.Trailer(&trailers))
	wantStatus(t, err, codes.Unavailable, full)
	noAuditIDHeader(t, "refused call", header, trailers)
	if _, err := os.Stat("/etc/pipeguard-test"); err == nil {
		t.Fatal("a confined-away Mkdir ran")
	}
}
