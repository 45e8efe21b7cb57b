package app

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	diskv1 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1"
	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	sysv1alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/system/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/review"
	"github.com/pipeguard/pipeguard/agent/gate"
	"github.com/pipeguard/pipeguard/agent/guard"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

// sentCall is one call the test sends and what it must leave behind.
type sentCall struct {
	name string
	call func(...grpc.CallOption) error
	// rule is the rule that refuses the call; "" for a call that is
	// allowed and fails on the host.
	rule string
	code codes.Code
	msg  []string // parts of the answer's message
	// stages of the call's records.
	stages string
}

// TestRefusalsAreAuditedAsDenials refuses one request at each place a
// request can be refused: the agent policy, lexical confinement, symlink
// confinement found when the handler resolves the path, a path field sent
// empty, the allowed services and input validation. Each is one deny record
// with its rule, listed by the deny query and the summary, counted in the
// deny metric, and answered with a code and a message naming the rule. A
// host operation that ran and failed stays an allowed request.
func TestRefusalsAreAuditedAsDenials(t *testing.T) {
	dir := t.TempDir()
	pdir := filepath.Join(dir, "policies")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	policy, err := os.ReadFile(sampleAgentPolicy)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pdir, filepath.Base(sampleAgentPolicy)), policy, 0o644); err != nil {
		t.Fatal(err)
	}
	engine, err := gate.New(context.Background(), gate.Options{PolicyDir: pdir, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(dir, "audit", "audit.log")
	log, err := audit.Open(audit.Options{Path: auditPath, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	// A Linux agent resolves symlinks on the real filesystem; a Windows one,
	// over an in-memory WMI provider, serves the system group. Both record into
	// one log.
	guarded := func(o Options) *running {
		o.Guard = &guard.Options{Gate: engine, Audit: log}
		return start(t, o)
	}
	linux := guarded(Options{})
	conn := wmitest.New()
	windows := guarded(Options{GOOS: "windows", KubeletPath: `C:\var\lib\kubelet`, Filesystem: &fakeFS{}, WMI: conn,
		AllowedServices: []string{"csiproxy-helper"}})

	k := linux.kubelet
	outside := filepath.Join(filepath.Dir(k), "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(k, "escape")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fs := fsv1.NewFilesystemClient(linux.dial(t, "filesystem", "v1"))
	disk := diskv1.NewDiskClient(linux.dial(t, "disk", "v1"))
	sys := sysv1alpha1.NewSystemClient(windows.dial(t, "system", "v1alpha1"))

	const once, withWriteAhead = "[ResponseComplete]", "[RequestReceived ResponseComplete]"
	calls := []sentCall{
		{name: "agent policy", rule: "disk-volume-csi-only", code: codes.PermissionDenied, stages: once,
			msg: []string{"disk v1 PartitionDisk is allowed only to pods of namespace \"kube-system\"", "(rule disk-volume-csi-only)"},
			call: func(o ...grpc.CallOption) error {
				_, err := disk.PartitionDisk(ctx, &diskv1.PartitionDiskRequest{DiskNumber: 1}, o...)
				return err
			}},
		{name: "lexical traversal", rule: "confinement/traversal", code: codes.InvalidArgument, stages: once,
			msg: []string{`path: path "` + k + `/../outside" contains a ".." segment`, "(confinement rule traversal)"},
			call: func(o ...grpc.CallOption) error {
				_, err := fs.PathExists(ctx, &fsv1.PathExistsRequest{Path: k + "/../outside"}, o...)
				return err
			}},
		{name: "symlink escape found when resolving", rule: "confinement/symlink-escape", code: codes.PermissionDenied, stages: withWriteAhead,
			msg: []string{`path: path "` + k + `/escape/new" resolves through a symlink to "` + outside + `/new", outside the allowed roots`, "(confinement rule symlink-escape)"},
			call: func(o ...grpc.CallOption) error {
				_, err := fs.Mkdir(ctx, &fsv1.MkdirRequest{Path: k + "/escape/new"}, o...)
				return err
			}},
		{name: "empty path", rule: "confinement/empty", code: codes.InvalidArgument, stages: once,
			msg: []string{`path: path "" is empty`, "(confinement rule empty)"},
			call: func(o ...grpc.CallOption) error {
				_, err := fs.IsSymlink(ctx, &fsv1.IsSymlinkRequest{}, o...)
				return err
			}},
		{name: "service not allowed", rule: "allowed-services", code: codes.PermissionDenied, stages: withWriteAhead,
			msg: []string{`StartService of service "WinDefend" refused: it is not an allowed service (allowed: [csiproxy-helper]); to allow it, start the agent with --allowed-service=WinDefend (rule allowed-services)`},
			call: func(o ...grpc.CallOption) error {
				_, err := sys.StartService(ctx, &sysv1alpha1.StartServiceRequest{Name: "WinDefend"}, o...)
				return err
			}},
		{name: "empty service name", rule: "invalid-input", code: codes.InvalidArgument, stages: withWriteAhead,
			msg: []string{`name: "" is not a service name: use 1 to 256 letters, digits, spaces and _.$- (no wildcards) (rule invalid-input)`},
			call: func(o ...grpc.CallOption) error {
				_, err := sys.StartService(ctx, &sysv1alpha1.StartServiceRequest{}, o...)
				return err
			}},
		{name: "host failure", code: codes.Unknown, stages: withWriteAhead,
			msg: []string{"no such file or directory"},
			call: func(o ...grpc.CallOption) error {
				_, err := fs.Rmdir(ctx, &fsv1.RmdirRequest{Path: k + "/missing"}, o...)
				return err
			}},
	}

	ids := map[string]sentCall{} // audit ID -> call
	var denied []string          // audit IDs of the refused calls
	for _, c := range calls {
		var md metadata.MD
		err := c.call(grpc.Header(&md), askAuditID)
		for _, m := range c.msg {
			wantStatus(t, err, c.code, m)
		}
		got := md.Get(guard.AuditIDHeader)
		if len(got) != 1 {
			t.Fatalf("%s: audit-id header %v", c.name, got)
		}
		if c.rule != "" {
			denied = append(denied, got[0])
		}
		// The record's reason is the answer's message.
		c.msg = []string{status.Convert(err).Message()}
		ids[got[0]] = c
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); !os.IsNotExist(err) {
		t.Errorf("the refused Mkdir created %s/new: %v", outside, err)
	}
	if calls, queries := conn.Calls(), conn.Queries(); len(calls) != 0 || len(queries) != 0 {
		t.Errorf("refused calls reached WMI: calls %+v, queries %q", calls, queries)
	}

	// Each call's records: one deny record, the completion, for a refusal.
	files, err := audit.Files(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	src := review.Source{Paths: files}
	recs := map[string][]audit.Event{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		audit.Scan(fh, f, func(r audit.Record) error {
			if r.Err == nil && !r.Event.IsCheckpoint() {
				recs[r.Event.AuditID] = append(recs[r.Event.AuditID], r.Event)
			}
			return nil
		})
		fh.Close()
	}
	for id, c := range ids {
		var stages []string
		var denies []audit.Event
		for _, e := range recs[id] {
			stages = append(stages, string(e.Stage))
			if e.Annotation(audit.AnnotationDecision) == audit.DecisionDeny {
				denies = append(denies, e)
			}
		}
		if fmt.Sprint(stages) != c.stages {
			t.Errorf("%s: stages %v, want %s", c.name, stages, c.stages)
			continue
		}
		last := recs[id][len(recs[id])-1]
		if c.rule == "" {
			if len(denies) != 0 || last.Annotation(audit.AnnotationDecision) != audit.DecisionAllow || last.Annotation(audit.AnnotationGRPCCode) != c.code.String() {
				t.Errorf("%s: a host failure is recorded as %v", c.name, last.Annotations)
			}
			continue
		}
		if len(denies) != 1 || denies[0].Stage != audit.StageResponseComplete {
			t.Errorf("%s: %d deny records, want the completion only", c.name, len(denies))
			continue
		}
		d := denies[0]
		if d.Annotation(audit.AnnotationRule) != c.rule || d.Annotation(audit.AnnotationGRPCCode) != c.code.String() ||
			d.Annotation(audit.AnnotationReason) != c.msg[0] || d.ResponseStatus == nil || d.ResponseStatus.Message != c.msg[0] {
			t.Errorf("%s: deny record %v %+v, want rule %s, code %s, reason %q", c.name, d.Annotations, d.ResponseStatus, c.rule, c.code, c.msg[0])
		}
		if len(recs[id]) == 2 && recs[id][0].Annotation(audit.AnnotationDecision) != audit.DecisionAllow {
			t.Errorf("%s: write-ahead record %v", c.name, recs[id][0].Annotations)
		}
	}

	// pipeguard audit query --decision deny lists every refusal, and only them.
	reqs, err := review.Requests(src, review.Filter{Decision: audit.DecisionDeny})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, r := range reqs {
		listed = append(listed, r.Event.AuditID)
		if review.Outcome(r) != "DENY" {
			t.Errorf("%s: outcome %s", ids[r.Event.AuditID].name, review.Outcome(r))
		}
	}
	slices.Sort(listed)
	slices.Sort(denied)
	if !slices.Equal(listed, denied) {
		t.Errorf("query --decision deny lists %v, want %v", listed, denied)
	}
	var table bytes.Buffer
	if err := review.WriteTable(&table, reqs); err != nil {
		t.Fatal(err)
	}
	// pipeguard audit summary counts them, each under its rule.
	all, err := review.Requests(src, review.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	sum := review.Summarize(all, 0)
	if sum.Total != len(calls) || sum.Denied != len(denied) || sum.Allowed != len(calls)-len(denied) {
		t.Errorf("summary: %d requests, %d denied, %d allowed", sum.Total, sum.Denied, sum.Allowed)
	}
	topDenied := map[string]int{}
	for _, r := range sum.TopDenied {
		topDenied[r.Rule] += r.Count
	}
	// The deny metric counts each, by rule, on both agents.
	metric := denials(t, linux.agent.registry, windows.agent.registry)
	for _, id := range denied {
		c := ids[id]
		if !strings.Contains(table.String(), "["+c.rule+"] ") {
			t.Errorf("%s: the deny query table has no [%s] row", c.name, c.rule)
		}
		if topDenied[c.rule] != 1 {
			t.Errorf("%s: summary's top denied counts rule %s %d times, want 1", c.name, c.rule, topDenied[c.rule])
		}
		if metric[c.rule] != 1 {
			t.Errorf("%s: deny metric for rule %s is %v, want 1", c.name, c.rule, metric[c.rule])
		}
	}
	if t.Failed() {
		t.Logf("pipeguard audit query --decision deny:\n%s", table.String())
	}
	if total := sumValues(metric); total != float64(len(denied)) {
		t.Errorf("deny metric counted %v denials, want %d: %v", total, len(denied), metric)
	}
	if rep := verifyLog(t, auditPath); !rep.OK() {
		t.Fatalf("verify: %v", rep.Problems)
	}
}

// denials reads pipeguard_agent_gate_decisions_total{decision="deny"} of
// the registries, by rule.
func denials(t *testing.T, regs ...*prometheus.Registry) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, reg := range regs {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "pipeguard_agent_gate_decisions_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["decision"] == audit.DecisionDeny {
					out[labels["rule"]] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

func sumValues(m map[string]float64) float64 {
	var n float64
	for _, v := range m {
		n += v
	}
	return n
}
