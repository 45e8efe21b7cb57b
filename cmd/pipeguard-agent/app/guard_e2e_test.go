package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	diskv1 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1"
	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	iscsiv1alpha2 "github.com/kubernetes-csi/csi-proxy/client/api/iscsi/v1alpha2"
	smbv1 "github.com/kubernetes-csi/csi-proxy/client/api/smb/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/audit/review"
	"github.com/pipeguard/pipeguard/agent/gate"
	"github.com/pipeguard/pipeguard/agent/guard"
	"github.com/pipeguard/pipeguard/agent/identity"
	"github.com/pipeguard/pipeguard/agent/server"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

// guarded is an agent with gate and audit on, and its audit log path.
type guarded struct {
	*running
	auditPath string
	log       *audit.Log
}

// startGuarded starts an agent whose requests are gated by the shipped
// rules plus the files in policies, and audited into a temp dir through
// openFile (nil: real files).
func startGuarded(t testing.TB, o Options, g guard.Options, openFile func(string) (audit.File, error), policies ...string) *guarded {
	t.Helper()
	dir := t.TempDir()
	pdir := filepath.Join(dir, "policies")
	os.MkdirAll(pdir, 0o755)
	for _, p := range policies {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(pdir, filepath.Base(p)), b, 0o644)
	}
	engine, err := gate.New(context.Background(), gate.Options{PolicyDir: pdir, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "audit", "audit.log")
	log, err := audit.Open(audit.Options{Path: path, Log: logr.Discard(), OpenFile: openFile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	g.Gate, g.Audit = engine, log
	o.Guard = &g
	return &guarded{running: start(t, o), auditPath: path, log: log}
}

func (g *guarded) requests(t testing.TB) map[string][]audit.Record {
	t.Helper()
	files, err := audit.Files(g.auditPath)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]audit.Record{}
	for _, f := range files {
		fh, _ := os.Open(f)
		audit.Scan(fh, f, func(r audit.Record) error {
			if r.Err == nil && !r.Event.IsCheckpoint() {
				out[r.Event.AuditID] = append(out[r.Event.AuditID], r)
			}
			return nil
		})
		fh.Close()
	}
	return out
}

const sampleAgentPolicy = "../../../config/samples/agent/disk-volume-csi-only.rego"

// TestGuardEndToEnd sends allowed, confined-away and policy-denied calls
// through real sockets and checks each one's single record: the caller's
// pid and uid, the decision and rule, and the audit ID the client got.
func TestGuardEndToEnd(t *testing.T) {
	g := startGuarded(t, Options{}, guard.Options{}, nil, sampleAgentPolicy)
	ctx := context.Background()
	fs := fsv1.NewFilesystemClient(g.dial(t, "filesystem", "v1"))
	disk := diskv1.NewDiskClient(g.dial(t, "disk", "v1"))

	type sent struct {
		name, auditID, decision, rule, code string
		mutating                            bool
	}
	var calls []sent
	send := func(name string, mutating bool, decision, rule string, code codes.Code, msg string, f func(opts ...grpc.CallOption) error) {
		t.Helper()
		var md metadata.MD
		err := f(grpc.Header(&md), askAuditID)
		wantStatus(t, err, code, msg)
		ids := md.Get(guard.AuditIDHeader)
		if len(ids) != 1 {
			t.Fatalf("%s: audit-id header %v", name, ids)
		}
		calls = append(calls, sent{name, ids[0], decision, rule, code.String(), mutating})
	}
	inside := filepath.Join(g.kubelet, "pods", "a")
	send("mkdir inside", true, "allow", "", codes.OK, "", func(o ...grpc.CallOption) error {
		_, err := fs.Mkdir(ctx, &fsv1.MkdirRequest{Path: inside}, o...)
		return err
	})
	send("path exists", false, "allow", "", codes.OK, "", func(o ...grpc.CallOption) error {
		_, err := fs.PathExists(ctx, &fsv1.PathExistsRequest{Path: inside}, o...)
		return err
	})
	send("mkdir outside", true, "deny", "confinement/outside-roots", codes.PermissionDenied, "is outside the allowed roots", func(o ...grpc.CallOption) error {
		_, err := fs.Mkdir(ctx, &fsv1.MkdirRequest{Path: "/etc/pipeguard-test"}, o...)
		return err
	})
	send("disk from a host process", true, "deny", "disk-volume-csi-only", codes.PermissionDenied,
		"disk v1 PartitionDisk is allowed only to pods of namespace \"kube-system\" running as service account \"csi-azuredisk-node-sa\", and the caller is pipeguard:peer:uid:"+strconv.Itoa(os.Getuid())+" (pid "+strconv.Itoa(os.Getpid())+", not in a known pod)",
		func(o ...grpc.CallOption) error {
			_, err := disk.PartitionDisk(ctx, &diskv1.PartitionDiskRequest{DiskNumber: 1}, o...)
			return err
		})
	if _, err := os.Stat("/etc/pipeguard-test"); err == nil {
		t.Fatal("a confined-away Mkdir ran")
	}

	recs := g.requests(t)
	if len(recs) != len(calls) {
		t.Fatalf("%d requests in the log, %d sent", len(recs), len(calls))
	}
	for _, c := range calls {
		rs := recs[c.auditID]
		stages := []string{}
		for _, r := range rs {
			stages = append(stages, string(r.Event.Stage))
		}
		want := "[ResponseComplete]"
		if c.mutating && c.decision == "allow" {
			want = "[RequestReceived ResponseComplete]"
		}
		if fmt.Sprint(stages) != want {
			t.Fatalf("%s: stages %v, want %s", c.name, stages, want)
		}
		e := rs[len(rs)-1].Event
		u := e.User
		if u.ExtraValue(audit.ExtraPID) != strconv.Itoa(os.Getpid()) || u.ExtraValue(audit.ExtraUID) != strconv.Itoa(os.Getuid()) ||
			u.Username != "pipeguard:peer:uid:"+strconv.Itoa(os.Getuid()) || u.ExtraValue(audit.ExtraProcessStart) == "" || u.ExtraValue(audit.ExtraSource) != "peer" {
			t.Fatalf("%s: user %+v", c.name, u)
		}
		if e.Annotation(audit.AnnotationDecision) != c.decision || e.Annotation(audit.AnnotationRule) != c.rule || e.Annotation(audit.AnnotationGRPCCode) != c.code {
			t.Fatalf("%s: annotations %v", c.name, e.Annotations)
		}
		if e.Level != audit.LevelMetadata || e.RequestObject != nil {
			t.Fatalf("%s: Metadata level recorded the request body", c.name)
		}
	}
	rep := verifyLog(t, g.auditPath)
	if !rep.OK() {
		t.Fatalf("verify: %v", rep.Problems)
	}
}

func verifyLog(t testing.TB, path string) *review.Report {
	t.Helper()
	files, err := audit.Files(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := review.Verify(review.Source{Paths: files})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestSecretsNeverReachTheAuditLog sends SMB passwords and CHAP secrets at
// Request level, where request bodies are recorded, and searches every
// file the agent wrote and its log; the secrets reach WMI only as the
// methods' in-parameters, never in a query.
func TestSecretsNeverReachTheAuditLog(t *testing.T) {
	w := newHostWMI()
	portal := w.iscsi.AddPortal("10.0.0.5", 3260)
	w.iscsi.AddTarget(portal, "iqn.2000-01.com.example:t1")
	w.iscsi.AddTarget(portal, "iqn.2000-01.com.example:t2")
	var logMu sync.Mutex
	var logged strings.Builder
	agentLog := funcr.New(func(prefix, args string) {
		logMu.Lock()
		defer logMu.Unlock()
		logged.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 10})
	g := startGuarded(t, Options{GOOS: "windows", KubeletPath: `C:\var\lib\kubelet`, Filesystem: &fakeFS{}, WMI: w, Win32: win32test.New(), Log: agentLog},
		guard.Options{Level: audit.LevelRequest}, nil)
	ctx := context.Background()
	const password, chap, mutual = "Pa55-smb-9f3a", "chap-7c1e-secret", "mutual-0b2d-secret"
	_, err := smbv1.NewSmbClient(g.dial(t, "smb", "v1")).NewSmbGlobalMapping(ctx, &smbv1.NewSmbGlobalMappingRequest{
		RemotePath: `\\srv\share`, LocalPath: `C:\var\lib\kubelet\plugins\smb\pv\globalmount`, Username: `DOM\u`, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	iscsi := iscsiv1alpha2.NewIscsiClient(g.dial(t, "iscsi", "v1alpha2"))
	_, err = iscsi.ConnectTarget(ctx, &iscsiv1alpha2.ConnectTargetRequest{
		TargetPortal: &iscsiv1alpha2.TargetPortal{TargetAddress: "10.0.0.5", TargetPort: 3260}, Iqn: "iqn.2000-01.com.example:t1",
		AuthType: iscsiv1alpha2.AuthenticationType_ONE_WAY_CHAP, ChapUsername: "u", ChapSecret: chap})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := iscsi.SetMutualChapSecret(ctx, &iscsiv1alpha2.SetMutualChapSecretRequest{MutualChapSecret: mutual}); err != nil {
		t.Fatal(err)
	}
	// A host call that fails answers its code's meaning, never the secret
	// it carried.
	w.smb.Fail("Create", 1326)
	w.iscsi.Fail(wmitest.ClassISCSITarget, "Connect", wmitest.ISDSCAuthenticationFailure)
	_, err = smbv1.NewSmbClient(g.dial(t, "smb", "v1")).NewSmbGlobalMapping(ctx, &smbv1.NewSmbGlobalMappingRequest{
		RemotePath: `\\srv\other`, LocalPath: `C:\var\lib\kubelet\plugins\smb\pv2\globalmount`, Username: `DOM\u`, Password: password})
	wantStatus(t, err, codes.Unknown, "The user name or password is incorrect")
	_, err2 := iscsi.ConnectTarget(ctx, &iscsiv1alpha2.ConnectTargetRequest{
		TargetPortal: &iscsiv1alpha2.TargetPortal{TargetAddress: "10.0.0.5", TargetPort: 3260}, Iqn: "iqn.2000-01.com.example:t2",
		AuthType: iscsiv1alpha2.AuthenticationType_ONE_WAY_CHAP, ChapUsername: "u", ChapSecret: chap})
	wantStatus(t, err2, codes.Unknown, "Authentication failure")
	for _, e := range []error{err, err2} {
		if msg := status.Convert(e).Message(); strings.Contains(msg, password) || strings.Contains(msg, chap) {
			t.Errorf("the answer %q holds a secret", msg)
		}
	}
	// The secrets did reach the host, each as its method's in-parameter.
	in := map[string]map[string]any{}
	for _, c := range w.Calls() {
		in[c.Method] = c.In
	}
	if got := in["MSFT_SmbGlobalMapping.Create"]["Credential"]; got != `DOM\\u:`+password {
		t.Errorf("Create's Credential is %q, want the user name and the password", got)
	}
	if got := in["MSFT_iSCSITarget.Connect"]["ChapSecret"]; got != chap {
		t.Errorf("Connect's ChapSecret is %q, want the CHAP secret", got)
	}
	if got := w.iscsi.MutualCHAPSecret(); got != mutual {
		t.Errorf("the initiator's mutual CHAP secret is %q, want the one sent", got)
	}
	for _, q := range w.Queries() {
		for _, s := range []string{password, chap, mutual} {
			if strings.Contains(q, s) {
				t.Errorf("the query %q holds a secret", q)
			}
		}
	}
	logMu.Lock()
	agentLogged := logged.String()
	if !strings.Contains(agentLogged, "The user name or password is incorrect") || !strings.Contains(agentLogged, "Authentication failure") {
		t.Errorf("the agent's log does not record the failed host calls: %s", agentLogged)
	}
	logMu.Unlock()
	for _, s := range []string{password, chap, mutual} {
		if strings.Contains(agentLogged, s) {
			t.Errorf("the agent's log holds a secret: %s", agentLogged)
		}
	}
	g.log.Close()
	entries, _ := os.ReadDir(filepath.Dir(g.auditPath))
	var recorded bool
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(g.auditPath), e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{password, chap, mutual} {
			if strings.Contains(string(b), s) {
				t.Fatalf("%s holds a secret", e.Name())
			}
		}
		recorded = recorded || strings.Contains(string(b), `"password":"[redacted]"`) && strings.Contains(string(b), `"chap_secret":"[redacted]"`) &&
			strings.Contains(string(b), `"MutualChapSecret":"[redacted]"`) && strings.Contains(string(b), `"remote_path":"\\\\srv\\share"`)
	}
	if !recorded {
		t.Fatal("Request level did not record the redacted request bodies")
	}
}

// fullFile is an audit file on a full disk after room bytes.
type fullFile struct {
	mu   sync.Mutex
	f    *os.File
	room int
}

func (f *fullFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(p) > f.room {
		return 0, errors.New("no space left on device")
	}
	f.room -= len(p)
	return f.f.Write(p)
}
func (f *fullFile) Sync() error            { return f.f.Sync() }
func (f *fullFile) Truncate(n int64) error { return f.f.Truncate(n) }
func (f *fullFile) Close() error           { return f.f.Close() }
func (f *fullFile) setRoom(n int)          { f.mu.Lock(); f.room = n; f.mu.Unlock() }
func openFull(ff **fullFile) func(string) (audit.File, error) {
	return func(p string) (audit.File, error) {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		*ff = &fullFile{f: f, room: 1 << 20}
		return *ff, nil
	}
}

// TestAuditFailure fills the audit disk: under deny the request is refused
// with the reason and its host operation does not run; under allow it runs.
func TestAuditFailure(t *testing.T) {
	cases := map[string]struct {
		mode    guard.FailureMode
		code    codes.Code
		msg     string
		created bool
	}{
		"deny (default)": {code: codes.Unavailable, created: false,
			msg: "the audit log cannot be written (writing audit record to "},
		"allow": {mode: guard.FailAllow, code: codes.OK, created: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var ff *fullFile
			g := startGuarded(t, Options{}, guard.Options{Failure: tc.mode}, openFull(&ff))
			fs := fsv1.NewFilesystemClient(g.dial(t, "filesystem", "v1"))
			ff.setRoom(0)
			dir := filepath.Join(g.kubelet, "full")
			_, err := fs.Mkdir(context.Background(), &fsv1.MkdirRequest{Path: dir})
			wantStatus(t, err, tc.code, tc.msg)
			if tc.code != codes.OK {
				wantStatus(t, err, tc.code, "no space left on device); the request was not run because pipeguard-agent runs with --audit-failure=deny; free space or fix permissions on the audit log directory (rule audit-unavailable)")
			}
			if _, serr := os.Stat(dir); (serr == nil) != tc.created {
				t.Fatalf("directory created = %v, want %v", serr == nil, tc.created)
			}
			// A read has no write-ahead record: it is refused too under deny.
			_, err = fs.PathExists(context.Background(), &fsv1.PathExistsRequest{Path: g.kubelet})
			wantStatus(t, err, tc.code, tc.msg)
		})
	}
}

// TestSAToken sends a projected token with the client helper:
// without --kubeconfig it is noted and not used; with a verifier, a token
// that names a pod other than the caller's is refused.
func TestSAToken(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte("driver-token\n"), 0o600)
	dialWithToken := func(g *guarded) fsv1.FilesystemClient {
		conn, err := grpc.NewClient("unix://"+server.SocketPath(g.socketDir, "filesystem", "v1"),
			grpc.WithTransportCredentials(insecure.NewCredentials()), identity.WithServiceAccountToken(tokenFile))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return fsv1.NewFilesystemClient(conn)
	}

	t.Run("unverified", func(t *testing.T) {
		g := startGuarded(t, Options{}, guard.Options{}, nil)
		var md metadata.MD
		if _, err := dialWithToken(g).PathExists(context.Background(), &fsv1.PathExistsRequest{Path: g.kubelet}, grpc.Header(&md), askAuditID); err != nil {
			t.Fatal(err)
		}
		e := g.requests(t)[md.Get(guard.AuditIDHeader)[0]][0].Event
		if e.Annotation(audit.AnnotationToken) != "sent but not verified: the agent has no --kubeconfig; identity is the peer's" || e.User.ExtraValue(audit.ExtraSource) != "peer" {
			t.Fatalf("record %+v", e)
		}
	})
	t.Run("otherpod", func(t *testing.T) {
		cs := fake.NewClientset()
		cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
			tr := a.(k8stesting.CreateAction).GetObject().(*authnv1.TokenReview).DeepCopy()
			tr.Status = authnv1.TokenReviewStatus{Authenticated: true, Audiences: tr.Spec.Audiences, User: authnv1.UserInfo{
				Username: "system:serviceaccount:csi:csi-node",
				Extra: map[string]authnv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"csi-node-x"},
					"authentication.kubernetes.io/pod-uid": {"5f0b8e4a-1c2d-4e3f-8a9b-0c1d2e3f4a5b"}, "authentication.kubernetes.io/node-name": {"node-1"}}}}
			return true, tr, nil
		})
		v, err := identity.NewTokenVerifier(identity.TokenOptions{Reviewer: cs.AuthenticationV1().TokenReviews(), Audience: identity.DefaultTokenAudience, NodeName: "node-1"})
		if err != nil {
			t.Fatal(err)
		}
		g := startGuarded(t, Options{}, guard.Options{Tokens: v}, nil)
		var md metadata.MD
		_, err = dialWithToken(g).Mkdir(context.Background(), &fsv1.MkdirRequest{Path: filepath.Join(g.kubelet, "x")}, grpc.Header(&md), askAuditID)
		wantStatus(t, err, codes.Unauthenticated, "the token names pod csi/csi-node-x (uid 5f0b8e4a-1c2d-4e3f-8a9b-0c1d2e3f4a5b) but the calling process (pid "+strconv.Itoa(os.Getpid())+")")
		e := g.requests(t)[md.Get(guard.AuditIDHeader)[0]][0].Event
		if e.Annotation(audit.AnnotationRule) != guard.RuleToken || e.Annotation(audit.AnnotationDecision) != "deny" {
			t.Fatalf("record %+v", e.Annotations)
		}
		if _, err := os.Stat(filepath.Join(g.kubelet, "x")); err == nil {
			t.Fatal("the refused call ran")
		}
	})
	// A caller sending new junk tokens gets its share of TokenReviews,
	// then ResourceExhausted without one.
	t.Run("overbudget", func(t *testing.T) {
		var reviews atomic.Int32
		cs := fake.NewClientset()
		cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
			reviews.Add(1)
			tr := a.(k8stesting.CreateAction).GetObject().(*authnv1.TokenReview).DeepCopy()
			tr.Status = authnv1.TokenReviewStatus{Error: "invalid bearer token"}
			return true, tr, nil
		})
		v, err := identity.NewTokenVerifier(identity.TokenOptions{Reviewer: cs.AuthenticationV1().TokenReviews(), Audience: identity.DefaultTokenAudience, NodeName: "node-1",
			Clock: clocktesting.NewFakeClock(time.Now())})
		if err != nil {
			t.Fatal(err)
		}
		g := startGuarded(t, Options{}, guard.Options{Tokens: v}, nil)
		client := dialWithToken(g)
		for i := range identity.TokenReviewsPerCallerBurst + 1 {
			os.WriteFile(tokenFile, []byte("junk-"+strconv.Itoa(i)), 0o600)
			_, err := client.PathExists(context.Background(), &fsv1.PathExistsRequest{Path: g.kubelet})
			if i < identity.TokenReviewsPerCallerBurst {
				wantStatus(t, err, codes.Unauthenticated, "the API server rejected the ServiceAccount token (invalid bearer token)")
				continue
			}
			wantStatus(t, err, codes.ResourceExhausted, "user uid "+strconv.Itoa(os.Getuid())+" sent more new ServiceAccount tokens than the agent reviews for one caller (5 at once, then 1 a second); this token was not reviewed")
		}
		if reviews.Load() != identity.TokenReviewsPerCallerBurst {
			t.Fatalf("%d TokenReviews, want %d", reviews.Load(), identity.TokenReviewsPerCallerBurst)
		}
	})
}
