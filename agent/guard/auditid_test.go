package guard

import (
	"context"
	"fmt"
	"strings"
	"testing"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/identity"
)

// asking is ctx with the request metadata that asks for the audit ID.
func asking(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, AuditIDRequestHeader, "1")
}

// askCredentials asks for the audit ID as per-call credentials, the way a
// dial option or call option can add metadata to every call.
type askCredentials map[string]string

func (a askCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return a, nil
}
func (askCredentials) RequireTransportSecurity() bool { return false }

// noAuditID fails if a header or trailer key is the audit ID header in any
// letter case.
func noAuditID(t *testing.T, name string, mds ...metadata.MD) {
	t.Helper()
	for _, md := range mds {
		for k, v := range md {
			if strings.EqualFold(k, AuditIDHeader) {
				t.Errorf("%s: the client did not ask and got %s: %v", name, k, v)
			}
		}
	}
}

// oneAuditID returns the one audit ID in header, failing unless there is
// exactly one.
func oneAuditID(t *testing.T, name string, header metadata.MD) string {
	t.Helper()
	ids := header.Get(AuditIDHeader)
	if len(ids) != 1 || ids[0] == "" {
		t.Fatalf("%s: the client asked and got audit-id %q (header %v)", name, ids, header)
	}
	return ids[0]
}

// wantAnswer fails unless err has code and exactly msg.
func wantAnswer(t *testing.T, name string, err error, code codes.Code, msg string) {
	t.Helper()
	if s := status.Convert(err); s.Code() != code || s.Message() != msg {
		t.Errorf("%s: answered %v %q, want %v %q", name, s.Code(), s.Message(), code, msg)
	}
}

// TestAuditIDOnlyWhenAsked makes every kind of call through a real gRPC
// server twice, once asking for the audit ID and once not: a client that
// asks gets one audit-id header whose value is the audit ID of the call's
// records; one that does not gets no audit-id header or trailer, whether
// the call succeeds, is denied by the guard or refused by its handler, or
// fails on the host, unary or streaming. Every call, asked or not, has its
// records in the log, and no audit ID of the log reaches a client that did
// not ask.
func TestAuditIDOnlyWhenAsked(t *testing.T) {
	g, path := newTestGuard(t)
	conn, _ := serveGuarded(t, g)
	given := map[string]guardedCall{} // audit ID -> the asking call given it
	var seen []metadata.MD            // what the clients that did not ask got
	for _, tc := range guardedCalls {
		var header, trailers metadata.MD
		err := tc.call(asking(context.Background()), conn, grpc.Header(&header), grpc.Trailer(&trailers))
		wantAnswer(t, tc.name+", asking", err, tc.code, tc.msg)
		given[oneAuditID(t, tc.name+", asking", header)] = tc
		noAuditID(t, tc.name+", asking (trailers)", trailers)

		header, trailers = nil, nil
		err = tc.call(context.Background(), conn, grpc.Header(&header), grpc.Trailer(&trailers))
		wantAnswer(t, tc.name+", not asking", err, tc.code, tc.msg)
		noAuditID(t, tc.name+", not asking", header, trailers)
		seen = append(seen, header, trailers)
	}

	byID := map[string][]audit.Event{}
	for _, ev := range requestRecords(t, path) {
		byID[ev.AuditID] = append(byID[ev.AuditID], ev)
	}
	if len(byID) != 2*len(guardedCalls) {
		t.Fatalf("%d audit IDs in the log, want one for each of the %d calls", len(byID), 2*len(guardedCalls))
	}
	unasked := map[string]int{} // verb and stages -> calls
	for _, tc := range guardedCalls {
		unasked[fmt.Sprintf("%s, %d records", tc.verb, tc.stages)]++
	}
	for id, recs := range byID {
		tc, ok := given[id]
		if !ok {
			unasked[fmt.Sprintf("%s, %d records", recs[0].Verb, len(recs))]--
			for _, md := range seen {
				for k, vs := range md {
					for _, v := range vs {
						if strings.Contains(v, id) {
							t.Errorf("a client that did not ask got audit ID %s in %s", id, k)
						}
					}
				}
			}
			continue
		}
		if len(recs) != tc.stages {
			t.Errorf("%s: %d records under its audit ID %s, want %d", tc.name, len(recs), id, tc.stages)
		}
		for _, ev := range recs {
			if ev.Verb != tc.verb {
				t.Errorf("%s: record of audit ID %s is a %s", tc.name, id, ev.Verb)
			}
		}
		if last := recs[len(recs)-1]; last.Annotation(audit.AnnotationGRPCCode) != tc.code.String() {
			t.Errorf("%s: completion of audit ID %s says %s, want %s", tc.name, id, last.Annotation(audit.AnnotationGRPCCode), tc.code)
		}
	}
	for k, n := range unasked {
		if n != 0 {
			t.Errorf("calls that did not ask, as %q: %d more made than recorded", k, n)
		}
	}
}

// TestAuditIDOnRefusedCalls makes calls the guard refuses because the audit
// log cannot be written: a client that asks still gets the audit ID it
// would have been recorded under; one that does not gets none.
func TestAuditIDOnRefusedCalls(t *testing.T) {
	g, _ := newTestGuard(t)
	if err := g.o.Audit.Close(); err != nil {
		t.Fatal(err)
	}
	conn, _ := serveGuarded(t, g)
	const msg = "the audit log cannot be written (audit log is closed); the request was not run because pipeguard-agent runs with Options.Failure=deny; free space or fix permissions on the audit log directory (rule audit-unavailable)"
	for _, tc := range []guardedCall{guardedCalls[0], guardedCalls[2], guardedCalls[4]} {
		var header, trailers metadata.MD
		err := tc.call(asking(context.Background()), conn, grpc.Header(&header), grpc.Trailer(&trailers))
		wantAnswer(t, tc.name+", asking", err, codes.Unavailable, msg)
		oneAuditID(t, tc.name+", asking", header)

		header, trailers = nil, nil
		err = tc.call(context.Background(), conn, grpc.Header(&header), grpc.Trailer(&trailers))
		wantAnswer(t, tc.name+", not asking", err, codes.Unavailable, msg)
		noAuditID(t, tc.name+", not asking", header, trailers)
	}
}

// TestAuditIDAskedInAnyCase asks with the key spelled in other letter
// cases, through every way a Go client adds metadata, with empty, repeated
// and huge values: each asks, and the handler sees the key lower-cased,
// as gRPC sends every metadata key. Look-alike keys, the response header's
// own name among them, do not ask, and their values are never echoed.
func TestAuditIDAskedInAnyCase(t *testing.T) {
	g, path := newTestGuard(t)
	conn, fs := serveGuarded(t, g)
	fsc := fsv1.NewFilesystemClient(conn)
	bg := context.Background()
	huge := strings.Repeat("x", 64<<10)
	read := &fsv1.PathExistsRequest{Path: "/var/lib/kubelet/pods"}
	cases := map[string]struct {
		ctx  context.Context
		opts []grpc.CallOption
		asks bool
	}{
		"upper case":             {ctx: metadata.AppendToOutgoingContext(bg, "PIPEGUARD-AUDIT-ID-REQUEST", "yes"), asks: true},
		"mixed case, empty":      {ctx: metadata.NewOutgoingContext(bg, metadata.Pairs("PipeGuard-Audit-Id-Request", "")), asks: true},
		"appended, mixed case":   {ctx: metadata.AppendToOutgoingContext(bg, "Pipeguard-Audit-ID-Request", "1"), asks: true},
		"call credentials":       {ctx: bg, opts: []grpc.CallOption{grpc.PerRPCCredentials(askCredentials{"PipeGuard-Audit-ID-Request": "1"})}, asks: true},
		"two values":             {ctx: metadata.AppendToOutgoingContext(bg, AuditIDRequestHeader, "a", AuditIDRequestHeader, "b"), asks: true},
		"huge value":             {ctx: metadata.AppendToOutgoingContext(bg, AuditIDRequestHeader, huge), asks: true},
		"the response header":    {ctx: metadata.AppendToOutgoingContext(bg, AuditIDHeader, "forged-id")},
		"prefix of the key":      {ctx: metadata.AppendToOutgoingContext(bg, "pipeguard-audit-id", "1")},
		"key with a suffix":      {ctx: metadata.AppendToOutgoingContext(bg, "pipeguard-audit-id-requests", "1")},
		"binary key":             {ctx: metadata.AppendToOutgoingContext(bg, AuditIDRequestHeader+"-bin", "1")},
		"key with a prefix":      {ctx: metadata.AppendToOutgoingContext(bg, "x-"+AuditIDRequestHeader, "1")},
		"key in the user agent":  {ctx: bg, opts: []grpc.CallOption{grpc.PerRPCCredentials(askCredentials{"user-agent": AuditIDRequestHeader})}},
		"key as another's value": {ctx: metadata.AppendToOutgoingContext(bg, "x-ask", AuditIDRequestHeader)},
	}
	// Metadata built without the metadata helpers keeps its letter case,
	// and the client library refuses to send it.
	_, err := fsc.PathExists(metadata.NewOutgoingContext(bg, metadata.MD{"PipeGuard-Audit-ID-Request": {"1"}}), read)
	wantAnswer(t, "key not lower-cased", err, codes.Internal, `header key "PipeGuard-Audit-ID-Request" contains illegal characters not in [0-9a-z-_.]`)

	given := map[string]string{}
	for name, tc := range cases {
		var header, trailers metadata.MD
		if _, err := fsc.PathExists(tc.ctx, read, append(tc.opts, grpc.Header(&header), grpc.Trailer(&trailers))...); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		noAuditID(t, name+" (trailers)", trailers)
		if !tc.asks {
			noAuditID(t, name, header)
			continue
		}
		id := oneAuditID(t, name, header)
		if len(id) > 64 {
			t.Errorf("%s: audit-id %.40q... is not an audit ID", name, id)
		}
		given[id] = name
		if !fs.sawKey(AuditIDRequestHeader) {
			t.Errorf("%s: the handler did not get the key lower-cased, as %q", name, AuditIDRequestHeader)
		}
	}
	recs := map[string]int{}
	for _, ev := range requestRecords(t, path) {
		recs[ev.AuditID]++
	}
	if len(recs) != len(cases) {
		t.Errorf("%d audit IDs in the log, want %d", len(recs), len(cases))
	}
	for id, name := range given {
		if recs[id] != 1 {
			t.Errorf("%s: audit ID %s has %d records, want 1", name, id, recs[id])
		}
	}
}

// TestAuditIDAskedInProcess calls the interceptors with metadata that no
// transport lower-cased: the key asks in any letter case, with or without a
// value, on unary and streaming calls; without it nothing is set.
func TestAuditIDAskedInProcess(t *testing.T) {
	g, _ := newTestGuard(t)
	caller := &identity.Caller{Source: identity.SourcePeer, PID: 4242, UID: 1000, GID: 2000}
	ok := func(context.Context, any) (any, error) { return &fsv1.PathExistsResponse{}, nil }
	info := &grpc.UnaryServerInfo{FullMethod: "/v1.Filesystem/PathExists"}
	sinfo := &grpc.StreamServerInfo{FullMethod: "/v1.Filesystem/Watch", IsServerStream: true}
	for name, tc := range map[string]struct {
		md   metadata.MD
		asks bool
	}{
		"lower case":    {metadata.MD{AuditIDRequestHeader: {"1"}}, true},
		"mixed case":    {metadata.MD{"PipeGuard-Audit-ID-Request": {"1"}}, true},
		"no value":      {metadata.MD{"PIPEGUARD-AUDIT-ID-REQUEST": nil}, true},
		"not asked":     {metadata.MD{"user-agent": {"csi-proxy-client"}}, false},
		"no metadata":   {nil, false},
		"response name": {metadata.MD{AuditIDHeader: {"forged-id"}}, false},
	} {
		for _, stream := range []bool{false, true} {
			ctx := callContext(caller, tc.md)
			if tc.md == nil {
				ctx = grpc.NewContextWithServerTransportStream(context.Background(), &headerStream{})
			}
			if stream {
				_ = g.Stream(nil, fakeStream{ctx: ctx}, sinfo, func(any, grpc.ServerStream) error { return nil })
			} else {
				_, _ = g.Unary(ctx, &fsv1.PathExistsRequest{Path: "/var/lib/kubelet/pods"}, info, ok)
			}
			header := grpc.ServerTransportStreamFromContext(ctx).(*headerStream).header
			if !tc.asks {
				if header != nil {
					t.Errorf("%s (stream %v): the client did not ask and got header %v", name, stream, header)
				}
				continue
			}
			if id := header.Get(AuditIDHeader); len(id) != 1 || id[0] == "" || id[0] == "1" {
				t.Errorf("%s (stream %v): header %v, want one audit ID", name, stream, header)
			}
		}
	}
}

// TestAuditIDNotAskedAllocatesNothing checks that finding that a client
// did not ask costs no allocation, with the metadata csi-proxy clients send.
func TestAuditIDNotAskedAllocatesNothing(t *testing.T) {
	ctx := metadata.NewIncomingContext(context.Background(), metadata.MD{
		":authority": {"localhost"}, "content-type": {"application/grpc"}, "user-agent": {"grpc-go/1.85.0"},
	})
	var asked bool
	if n := testing.AllocsPerRun(1000, func() { asked = asksAuditID(ctx) }); n != 0 || asked {
		t.Fatalf("asksAuditID: %v allocations, asked %v; want 0, false", n, asked)
	}
}
