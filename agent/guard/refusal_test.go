package guard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/apierr"
	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/confine"
	"github.com/pipeguard/pipeguard/agent/identity"
)

// TestHandlerRefusalsAreDenials runs handlers that refuse after the gate,
// as the group servers do, and one whose host operation fails: a refusal is
// answered with its code and a message naming its rule, and its completion
// record is the request's one deny record, counted by rule; the host
// failure stays allowed.
func TestHandlerRefusalsAreDenials(t *testing.T) {
	g, path := newTestGuard(t)
	caller := &identity.Caller{Source: identity.SourcePeer, PID: 4242, UID: 1000, GID: 2000}
	escape := &confine.Refusal{Rule: confine.RuleSymlinkEscape, Field: "path", Path: "/var/lib/kubelet/pods/l",
		Reason: `resolves through a symlink to "/etc", outside the allowed roots [/var/lib/kubelet]`}
	cases := []struct {
		name, method string
		req          any
		err          error
		decision     string
		rule         string
		code         codes.Code
		msg          string
		stages       []audit.Stage
	}{
		{"symlink escape on a read", "PathExists", &fsv1.PathExistsRequest{Path: "/var/lib/kubelet/pods/l"}, escape,
			audit.DecisionDeny, "confinement/symlink-escape", codes.PermissionDenied, escape.Error(),
			[]audit.Stage{audit.StageResponseComplete}},
		{"invalid input on a mutating call", "Mkdir", &fsv1.MkdirRequest{Path: "/var/lib/kubelet/pods/x"},
			fmt.Errorf("mkdir: %w", apierr.Invalidf("name", "is empty")),
			audit.DecisionDeny, apierr.RuleInvalidInput, codes.InvalidArgument, "mkdir: name: is empty (rule invalid-input)",
			[]audit.Stage{audit.StageRequestReceived, audit.StageResponseComplete}},
		{"refusal already in its gRPC shape", "Mkdir", &fsv1.MkdirRequest{Path: "/var/lib/kubelet/pods/y"},
			apierr.Status(&apierr.Denied{Rule: "allowed-services", Msg: "service x is not allowed"}),
			audit.DecisionDeny, "allowed-services", codes.PermissionDenied, "service x is not allowed (rule allowed-services)",
			[]audit.Stage{audit.StageRequestReceived, audit.StageResponseComplete}},
		{"host failure", "Mkdir", &fsv1.MkdirRequest{Path: "/var/lib/kubelet/pods/z"}, status.Error(codes.Unknown, "mkdir failed: disk full"),
			audit.DecisionAllow, "", codes.Unknown, "mkdir failed: disk full",
			[]audit.Stage{audit.StageRequestReceived, audit.StageResponseComplete}},
	}
	ids := make([]string, len(cases))
	for i, tc := range cases {
		ctx := callContext(caller, metadata.Pairs(AuditIDRequestHeader, "1"))
		handler := func(context.Context, any) (any, error) { return nil, tc.err }
		_, err := g.Unary(ctx, tc.req, &grpc.UnaryServerInfo{FullMethod: "/v1.Filesystem/" + tc.method}, handler)
		if s := status.Convert(err); s.Code() != tc.code || s.Message() != tc.msg {
			t.Errorf("%s: answered %v %q, want %v %q", tc.name, s.Code(), s.Message(), tc.code, tc.msg)
		}
		if tc.rule != "" {
			var ref apierr.Refusal
			if !errors.As(err, &ref) || ref.RefusalRule() != tc.rule {
				t.Errorf("%s: the answer is not a refusal by rule %s: %v", tc.name, tc.rule, err)
			}
		}
		ids[i] = grpc.ServerTransportStreamFromContext(ctx).(*headerStream).header.Get(AuditIDHeader)[0]
	}

	recs := map[string][]audit.Event{}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	audit.Scan(f, path, func(r audit.Record) error {
		if r.Err == nil && !r.Event.IsCheckpoint() {
			recs[r.Event.AuditID] = append(recs[r.Event.AuditID], r.Event)
		}
		return nil
	})
	for i, tc := range cases {
		rs := recs[ids[i]]
		if len(rs) != len(tc.stages) {
			t.Errorf("%s: %d records, want %d", tc.name, len(rs), len(tc.stages))
			continue
		}
		for j, e := range rs {
			want := audit.DecisionAllow
			if j == len(rs)-1 {
				want = tc.decision
			}
			if e.Stage != tc.stages[j] || e.Annotation(audit.AnnotationDecision) != want {
				t.Errorf("%s: record %d is %s %s, want %s %s", tc.name, j, e.Stage, e.Annotation(audit.AnnotationDecision), tc.stages[j], want)
			}
		}
		last := rs[len(rs)-1]
		if last.Annotation(audit.AnnotationRule) != tc.rule || last.Annotation(audit.AnnotationGRPCCode) != tc.code.String() ||
			last.ResponseStatus == nil || last.ResponseStatus.Message != tc.msg {
			t.Errorf("%s: completion %v %+v", tc.name, last.Annotations, last.ResponseStatus)
		}
		if tc.rule != "" && last.Annotation(audit.AnnotationReason) != tc.msg {
			t.Errorf("%s: reason %q, want %q", tc.name, last.Annotation(audit.AnnotationReason), tc.msg)
		}
	}

	for _, rule := range []string{"confinement/symlink-escape", apierr.RuleInvalidInput, "allowed-services"} {
		if n := counter(t, g, "filesystem", audit.DecisionDeny, rule); n != 1 {
			t.Errorf("deny metric for rule %s is %v, want 1", rule, n)
		}
	}
	if n := counter(t, g, "filesystem", audit.DecisionAllow, ""); n != 1 {
		t.Errorf("allow metric is %v, want 1 (the host failure)", n)
	}
}

// TestGuardDenialsNameTheirRule checks that a denial decided by the guard
// itself is a refusal whose message names its rule.
func TestGuardDenialsNameTheirRule(t *testing.T) {
	g, _ := newTestGuard(t)
	ctx := grpc.NewContextWithServerTransportStream(context.Background(), &headerStream{})
	_, err := g.Unary(ctx, &fsv1.PathExistsRequest{Path: "/var/lib/kubelet"}, &grpc.UnaryServerInfo{FullMethod: "/v1.Filesystem/PathExists"},
		func(context.Context, any) (any, error) { t.Fatal("the handler ran"); return nil, nil })
	var ref apierr.Refusal
	if s := status.Convert(err); s.Code() != codes.Unauthenticated || !errors.As(err, &ref) || ref.RefusalRule() != RuleIdentity ||
		s.Message() != "internal error: the connection carries no caller identity, so the request cannot be attributed; the request was not run (rule caller-identity)" {
		t.Fatalf("answered %v %q", s.Code(), s.Message())
	}
}

func counter(t *testing.T, g *Guard, group, decision, rule string) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.decisions.WithLabelValues(group, decision, rule).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// fakeStream is a server stream carrying only its context.
type fakeStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s fakeStream) Context() context.Context { return s.ctx }

// TestStreamRefusalsAreDenials checks the streaming interceptor keeps the
// guarantees of the unary one: a call refused before its handler is one
// deny record and never reaches the handler, and a handler's refusal is
// the deny completion after its write-ahead record.
func TestStreamRefusalsAreDenials(t *testing.T) {
	g, path := newTestGuard(t)
	info := &grpc.StreamServerInfo{FullMethod: "/v1.Filesystem/Watch", IsServerStream: true}
	caller := &identity.Caller{Source: identity.SourcePeer, PID: 4242, UID: 1000, GID: 2000}
	refusal := &apierr.Denied{Rule: "allowed-services", Msg: "service x is not allowed"}
	cases := []struct {
		name    string
		ctx     context.Context
		handler grpc.StreamHandler
		rule    string
		code    codes.Code
		stages  []audit.Stage
	}{
		{"no caller identity", grpc.NewContextWithServerTransportStream(metadata.NewIncomingContext(context.Background(), metadata.Pairs(AuditIDRequestHeader, "1")), &headerStream{}),
			func(any, grpc.ServerStream) error { t.Error("the handler ran without a caller identity"); return nil },
			RuleIdentity, codes.Unauthenticated, []audit.Stage{audit.StageResponseComplete}},
		{"handler refusal", callContext(caller, metadata.Pairs(AuditIDRequestHeader, "1")),
			func(any, grpc.ServerStream) error { return fmt.Errorf("watch: %w", refusal) },
			"allowed-services", codes.PermissionDenied, []audit.Stage{audit.StageRequestReceived, audit.StageResponseComplete}},
	}
	ids := make([]string, len(cases))
	for i, tc := range cases {
		err := g.Stream(nil, fakeStream{ctx: tc.ctx}, info, tc.handler)
		var ref apierr.Refusal
		if s := status.Convert(err); s.Code() != tc.code || !errors.As(err, &ref) || ref.RefusalRule() != tc.rule {
			t.Errorf("%s: answered %v %q, want a %v refusal by rule %s", tc.name, s.Code(), s.Message(), tc.code, tc.rule)
		}
		ids[i] = grpc.ServerTransportStreamFromContext(tc.ctx).(*headerStream).header.Get(AuditIDHeader)[0]
	}

	recs := map[string][]audit.Event{}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := audit.Scan(f, path, func(r audit.Record) error {
		if r.Err != nil {
			t.Errorf("record %v", r.Err)
		} else if !r.Event.IsCheckpoint() {
			recs[r.Event.AuditID] = append(recs[r.Event.AuditID], r.Event)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i, tc := range cases {
		rs := recs[ids[i]]
		if len(rs) != len(tc.stages) {
			t.Errorf("%s: %d records, want %d", tc.name, len(rs), len(tc.stages))
			continue
		}
		for j, e := range rs {
			want := audit.DecisionAllow
			if j == len(rs)-1 {
				want = audit.DecisionDeny
			}
			if e.Stage != tc.stages[j] || e.Annotation(audit.AnnotationDecision) != want {
				t.Errorf("%s: record %d is %s %s, want %s %s", tc.name, j, e.Stage, e.Annotation(audit.AnnotationDecision), tc.stages[j], want)
			}
		}
		if last := rs[len(rs)-1]; last.Annotation(audit.AnnotationRule) != tc.rule || last.Annotation(audit.AnnotationGRPCCode) != tc.code.String() {
			t.Errorf("%s: completion %v", tc.name, last.Annotations)
		}
	}
}
