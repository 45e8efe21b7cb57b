package guard

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/pipeguard/pipeguard/agent/audit"
)

// kubeRecords reads every line of an audit file as kube-apiserver's own
// audit.k8s.io/v1 Event, strictly: a field kube-apiserver's type does not
// have, or a key given twice, fails the test. Each line must be one whole
// record.
func kubeRecords(t *testing.T, path string) []auditv1.Event {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var evs []auditv1.Event
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var ev auditv1.Event
		strict, err := sigsjson.UnmarshalStrict([]byte(line), &ev)
		if err != nil {
			t.Fatalf("%s:%d is not an audit.k8s.io/v1 Event: %v\n%s", path, i+1, err, line)
		}
		if len(strict) > 0 {
			t.Fatalf("%s:%d does not decode strictly as an audit.k8s.io/v1 Event: %v\n%s", path, i+1, strict, line)
		}
		evs = append(evs, ev)
	}
	return evs
}

// byAuditID groups the request records by audit ID, in log order, and
// checks the fields every record needs: stageTimestamp (Falco's k8saudit
// reads it), requestReceivedTimestamp and stage; checkpoints carry no
// authorization annotations.
func byAuditID(t *testing.T, evs []auditv1.Event) map[string][]auditv1.Event {
	t.Helper()
	out := map[string][]auditv1.Event{}
	for i, ev := range evs {
		if ev.StageTimestamp.IsZero() || ev.RequestReceivedTimestamp.IsZero() || ev.Stage == "" {
			t.Errorf("record %d (%s %s) lacks stage %q, stageTimestamp %v or requestReceivedTimestamp %v", i+1, ev.Verb, ev.AuditID, ev.Stage, ev.StageTimestamp, ev.RequestReceivedTimestamp)
		}
		if ev.StageTimestamp.Before(&ev.RequestReceivedTimestamp) {
			t.Errorf("record %d (%s): stageTimestamp %v before requestReceivedTimestamp %v", i+1, ev.Verb, ev.StageTimestamp, ev.RequestReceivedTimestamp)
		}
		if ev.Annotations[audit.AnnotationRecord] == audit.RecordCheckpoint {
			for _, k := range []string{kubeDecision, kubeReason} {
				if v, ok := ev.Annotations[k]; ok {
					t.Errorf("checkpoint record %d has %s %q; a checkpoint is no request and has no decision", i+1, k, v)
				}
			}
			continue
		}
		out[string(ev.AuditID)] = append(out[string(ev.AuditID)], ev)
	}
	return out
}

// wantRecord is what one record of a call says.
type wantRecord struct {
	stage    auditv1.Stage
	decision string // authorization.k8s.io/decision
	rule     string // the rule of a forbid
	code     int32  // responseStatus.code, 0 for none
}

// kube-apiserver's annotation keys and values (k8s.io/apiserver's
// endpoints/filters/authorization.go), spelled out so that the test
// checks the strings, not the constants the agent writes them with.
const (
	kubeDecision = "authorization.k8s.io/decision"
	kubeReason   = "authorization.k8s.io/reason"
	kubeAllow    = "allow"
	kubeForbid   = "forbid"
)

func (w wantRecord) reason() string {
	if w.decision == kubeAllow {
		return "pipeguard-agent: allowed by the agent policy"
	}
	return "pipeguard-agent: denied by rule " + w.rule
}

// checkRecords checks the records of one call against want: stage,
// requestURI, both decision annotations, the reason, and the annotation
// keys, which are exactly those the agent writes.
func checkRecords(t *testing.T, name, uri string, got []auditv1.Event, want []wantRecord) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d: %+v", name, len(got), len(want), got)
	}
	for i, w := range want {
		ev := got[i]
		if ev.Stage != w.stage || ev.RequestURI != uri {
			t.Errorf("%s record %d: stage %q requestURI %q, want %q %q", name, i+1, ev.Stage, ev.RequestURI, w.stage, uri)
		}
		if d, r := ev.Annotations[kubeDecision], ev.Annotations[kubeReason]; d != w.decision || r != w.reason() {
			t.Errorf("%s record %d: %s %q, %s %q; want %q, %q", name, i+1, kubeDecision, d, kubeReason, r, w.decision, w.reason())
		}
		keys := []string{kubeDecision, kubeReason,
			audit.AnnotationDecision, audit.AnnotationPrevHash, audit.AnnotationRecord, audit.AnnotationSeq}
		pg := audit.DecisionAllow
		if w.decision == kubeForbid {
			pg = audit.DecisionDeny
			keys = append(keys, audit.AnnotationReason, audit.AnnotationRule)
			if r := ev.Annotations[audit.AnnotationRule]; r != w.rule {
				t.Errorf("%s record %d: %s %q, want %q", name, i+1, audit.AnnotationRule, r, w.rule)
			}
		}
		if w.stage == auditv1.StageResponseComplete {
			keys = append(keys, audit.AnnotationGRPCCode)
		}
		if d := ev.Annotations[audit.AnnotationDecision]; d != pg {
			t.Errorf("%s record %d: %s %q, want %q beside %s %q", name, i+1, audit.AnnotationDecision, d, pg, audit.AnnotationAuthorizationDecision, w.decision)
		}
		var gotKeys []string
		for k := range ev.Annotations {
			gotKeys = append(gotKeys, k)
		}
		slices.Sort(gotKeys)
		slices.Sort(keys)
		if !slices.Equal(gotKeys, keys) {
			t.Errorf("%s record %d: annotations %q, want exactly %q", name, i+1, gotKeys, keys)
		}
		var code int32
		if ev.ResponseStatus != nil {
			code = ev.ResponseStatus.Code
		}
		if code != w.code {
			t.Errorf("%s record %d: responseStatus.code %d, want %d", name, i+1, code, w.code)
		}
	}
}

// TestRecordsReadAsKubeAudit makes calls through a real gRPC server and
// decodes every record the log holds with kube-apiserver's audit types,
// strictly: an allowed read, a guard denial, a handler refusal after the
// write-ahead record, a host failure, and streams. Each record carries
// kube-apiserver's authorization annotations (allow with the agent's
// reason; forbid with the rule that refused), beside pipeguard.io/decision,
// the gRPC method the server received as requestURI, and stageTimestamp.
func TestRecordsReadAsKubeAudit(t *testing.T) {
	g, path := newTestGuard(t)
	conn, _ := serveGuarded(t, g)
	const (
		rc = auditv1.StageRequestReceived
		cp = auditv1.StageResponseComplete
	)
	allow, forbid := kubeAllow, kubeForbid
	want := map[string]struct {
		uri  string
		recs []wantRecord
	}{
		"allowed read":    {"/v1.Filesystem/PathExists", []wantRecord{{cp, allow, "", 200}}},
		"guard denial":    {"/v1.Filesystem/PathExists", []wantRecord{{cp, forbid, "confinement/outside-roots", 403}}},
		"handler refusal": {"/v1.Filesystem/Mkdir", []wantRecord{{rc, allow, "", 0}, {cp, forbid, "allowed-services", 403}}},
		"host failure":    {"/v1.Filesystem/Rmdir", []wantRecord{{rc, allow, "", 0}, {cp, allow, "", 500}}},
		"stream":          {"/v1.Watcher/Watch", []wantRecord{{rc, allow, "", 0}, {cp, allow, "", 200}}},
		"stream refusal":  {"/v1.Watcher/Watch", []wantRecord{{rc, allow, "", 0}, {cp, forbid, "allowed-services", 403}}},
		"stream failure":  {"/v1.Watcher/Watch", []wantRecord{{rc, allow, "", 0}, {cp, allow, "", 500}}},
	}
	ids := map[string]string{}
	for _, tc := range guardedCalls {
		var header metadata.MD
		err := tc.call(asking(context.Background()), conn, grpc.Header(&header))
		wantAnswer(t, tc.name, err, tc.code, tc.msg)
		ids[tc.name] = oneAuditID(t, tc.name, header)
	}
	if err := g.o.Audit.Close(); err != nil {
		t.Fatal(err)
	}
	recs := byAuditID(t, kubeRecords(t, path))
	for name, id := range ids {
		w, ok := want[name]
		if !ok {
			t.Fatalf("no expected records for call %q", name)
		}
		checkRecords(t, name, w.uri, recs[id], w.recs)
	}
}

// TestCallerStringsForgeNoDecision sends paths made to break out of the
// JSON strings they are written in (quotes, braces, a newline, U+2028 and
// U+2029, an annotation of their own): the records still decode strictly
// as kube-apiserver's Events, one per line, with no key given twice; the
// decision and reason are the agent's, the annotation keys the agent's
// only, and the path comes back intact where the record names it.
func TestCallerStringsForgeNoDecision(t *testing.T) {
	g, path := newTestGuard(t)
	conn, _ := serveGuarded(t, g)
	client := fsv1.NewFilesystemClient(conn)
	const forged = `","authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"forged"}}`
	cases := []struct {
		name   string
		path   string
		mkdir  bool
		answer codes.Code
		uri    string
		recs   []wantRecord
	}{
		{"quotes outside the roots", "/etc/x" + forged, false, codes.PermissionDenied, "/v1.Filesystem/PathExists",
			[]wantRecord{{auditv1.StageResponseComplete, kubeForbid, "confinement/outside-roots", 403}}},
		{"a line of its own outside the roots", "/etc/x\"}\n{\"kind\":\"Event\",\"annotations\":{\"authorization.k8s.io/decision\":\"allow\"}}\u2028\u2029", false,
			codes.InvalidArgument, "/v1.Filesystem/PathExists",
			[]wantRecord{{auditv1.StageResponseComplete, kubeForbid, "confinement/characters", 400}}},
		{"quotes inside the roots, read", "/var/lib/kubelet/pods/a" + forged + "\u2028", false, codes.OK, "/v1.Filesystem/PathExists",
			[]wantRecord{{auditv1.StageResponseComplete, kubeAllow, "", 200}}},
		{"forbid forged inside the roots, refused by the handler", `/var/lib/kubelet/pods/b","authorization.k8s.io/decision":"allow` + "\u2029", true,
			codes.PermissionDenied, "/v1.Filesystem/Mkdir",
			[]wantRecord{{auditv1.StageRequestReceived, kubeAllow, "", 0}, {auditv1.StageResponseComplete, kubeForbid, "allowed-services", 403}}},
	}
	ids := make([]string, len(cases))
	for i, tc := range cases {
		var header metadata.MD
		var err error
		if tc.mkdir {
			_, err = client.Mkdir(asking(context.Background()), &fsv1.MkdirRequest{Path: tc.path}, grpc.Header(&header))
		} else {
			_, err = client.PathExists(asking(context.Background()), &fsv1.PathExistsRequest{Path: tc.path}, grpc.Header(&header))
		}
		if c := status.Code(err); c != tc.answer {
			t.Fatalf("%s: answered %v (%v), want %v", tc.name, c, err, tc.answer)
		}
		ids[i] = oneAuditID(t, tc.name, header)
	}
	if err := g.o.Audit.Close(); err != nil {
		t.Fatal(err)
	}
	evs := kubeRecords(t, path)
	recs := byAuditID(t, evs)
	n := 0
	for i, tc := range cases {
		got := recs[ids[i]]
		n += len(got)
		checkRecords(t, tc.name, tc.uri, got, tc.recs)
		for j, ev := range got {
			if ev.ObjectRef == nil || ev.ObjectRef.Name != tc.path {
				t.Errorf("%s record %d: objectRef %+v does not name the path %q as sent", tc.name, j+1, ev.ObjectRef, tc.path)
			}
			if tc.recs[j].decision == kubeForbid && tc.recs[j].rule != "allowed-services" &&
				!strings.Contains(ev.Annotations[audit.AnnotationReason], strconv.Quote(tc.path)) {
				t.Errorf("%s record %d: %s %q does not quote the path as sent (%%q)", tc.name, j+1, audit.AnnotationReason, ev.Annotations[audit.AnnotationReason])
			}
		}
	}
	// Two checkpoints (start, stop) and the calls' records: no line more.
	if len(evs) != n+2 {
		t.Errorf("the log holds %d records, want the calls' %d and 2 checkpoints", len(evs), n)
	}
}
