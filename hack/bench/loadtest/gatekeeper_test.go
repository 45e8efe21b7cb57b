//go:build !windows

package main

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/pipeguard/pipeguard/internal/testenv"
)

// The ConstraintTemplate's rego, evaluated as Gatekeeper evaluates it (rego
// v0, input.review the AdmissionRequest with the namespace object added),
// decides every kind of review of the mix as pipeguard does, in labelled
// and unlabelled namespaces, with a message naming the pipe.
func TestGatekeeperRegoDecidesTheMix(t *testing.T) {
	m, err := newMix()
	if err != nil {
		t.Fatal(err)
	}
	ns := namespaces(smallNamespaces)
	query, err := rego.New(rego.Query("data.pipeguardcsiproxy.violation"), rego.SetRegoVersion(ast.RegoV0),
		rego.Module("template.rego", gatekeeperRego)).PrepareForEval(context.Background())
	if err != nil {
		t.Fatalf("the ConstraintTemplate's rego does not compile: %v", err)
	}
	seen := map[string]int{}
	for seq := range uint64(3 * len(m.slots)) {
		body, k := m.body(seq, smallNamespaces, "00000000-0000-4000-8000-000000000000")
		var review struct{ Request map[string]any }
		if err := json.Unmarshal(body, &review); err != nil {
			t.Fatal(err)
		}
		name := review.Request["namespace"].(string)
		review.Request["namespaceObject"] = map[string]any{"metadata": map[string]any{"name": name, "labels": ns[name]}}
		rs, err := query.Eval(context.Background(), rego.EvalInput(map[string]any{"review": review.Request, "parameters": map[string]any{}}))
		if err != nil {
			t.Fatalf("%s: %v", k.name, err)
		}
		var msgs []string
		for _, r := range rs {
			for _, v := range r.Expressions[0].Value.([]any) {
				msgs = append(msgs, fmt.Sprint(v.(map[string]any)["msg"]))
			}
		}
		seen[k.name]++
		switch {
		case k.allowed && len(msgs) > 0:
			t.Errorf("%s in %s: denied (%q), want allowed", k.name, name, msgs)
		case !k.allowed && len(msgs) == 0:
			t.Errorf("%s in %s: allowed, want denied", k.name, name)
		case !k.allowed && !strings.Contains(msgs[0], `\\.\pipe\csi-proxy-`):
			t.Errorf("%s: message %q does not name the pipe", k.name, msgs[0])
		}
	}
	if len(seen) != len(m.kinds) {
		t.Errorf("evaluated %d kinds of review, want %d", len(seen), len(m.kinds))
	}
}

// The rule reads what pipeguard reads beyond the mix: init containers, the
// pod's HostProcess setting, privileged containers, other spellings of the
// pipe path, and CronJobs.
func TestGatekeeperRegoCases(t *testing.T) {
	query, err := rego.New(rego.Query("data.pipeguardcsiproxy.violation"), rego.SetRegoVersion(ast.RegoV0),
		rego.Module("template.rego", gatekeeperRego)).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	spec := func(path, container, podSC string) map[string]any {
		var s map[string]any
		raw := `{"volumes":[{"name":"p","hostPath":{"path":` + path + `}}],` + container
		if podSC != "" {
			raw += `,"securityContext":` + podSC
		}
		if err := json.Unmarshal([]byte(raw+`}`), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	const mounted = `{"name":"c","volumeMounts":[{"name":"p","mountPath":"C:\\p"}]`
	tests := map[string]struct {
		kind   string
		object map[string]any
		labels map[string]any
		denied bool
	}{
		"plain container":     {"Pod", map[string]any{"spec": spec(`"\\\\.\\pipe\\csi-proxy-disk-v1"`, `"containers":[`+mounted+`}]`, "")}, nil, true},
		"init container":      {"Pod", map[string]any{"spec": spec(`"\\\\.\\pipe\\csi-proxy-disk-v1"`, `"containers":[],"initContainers":[`+mounted+`}]`, "")}, nil, true},
		"forward slashes":     {"Pod", map[string]any{"spec": spec(`"//./PIPE/CSI-Proxy-smb-v1"`, `"containers":[`+mounted+`}]`, "")}, nil, true},
		"other pipe":          {"Pod", map[string]any{"spec": spec(`"\\\\.\\pipe\\docker_engine"`, `"containers":[`+mounted+`}]`, "")}, nil, false},
		"not mounted":         {"Pod", map[string]any{"spec": spec(`"\\\\.\\pipe\\csi-proxy-disk-v1"`, `"containers":[{"name":"c"}]`, "")}, nil, false},
		"privileged":          {"Pod", map[string]any{"spec": spec(`"\\\\.\\pipe\\csi-proxy-disk-v1"`, `"containers":[`+mounted+`,"securityContext":{"privileged":true}}]`, "")}, nil, false},
		"pod HostProcess":     {"Pod", map[string]any{"spec": spec(`"\\\\.\\pipe\\csi-proxy-disk-v1"`, `"containers":[`+mounted+`}]`, `{"windowsOptions":{"hostProcess":true}}`)}, nil, false},
		"labelled namespace":  {"Pod", map[string]any{"spec": spec(`"\\\\.\\pipe\\csi-proxy-disk-v1"`, `"containers":[`+mounted+`}]`, "")}, map[string]any{"pipeguard.io/allow-csi-proxy": "true"}, false},
		"label not true":      {"Pod", map[string]any{"spec": spec(`"\\\\.\\pipe\\csi-proxy-disk-v1"`, `"containers":[`+mounted+`}]`, "")}, map[string]any{"pipeguard.io/allow-csi-proxy": "yes"}, true},
		"cronjob":             {"CronJob", map[string]any{"spec": map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": spec(`"\\\\.\\pipe\\csi-proxy-disk-v1"`, `"containers":[`+mounted+`}]`, "")}}}}}, nil, true},
		"daemonset":           {"DaemonSet", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": spec(`"\\\\.\\pipe\\csi-proxy-disk-v1"`, `"containers":[`+mounted+`}]`, "")}}}, nil, true},
		"daemonset, no spec":  {"DaemonSet", map[string]any{"spec": map[string]any{}}, nil, false},
		"ephemeral container": {"Pod", map[string]any{"spec": spec(`"\\\\.\\pipe\\csi-proxy-disk-v1"`, `"containers":[],"ephemeralContainers":[`+mounted+`}]`, "")}, nil, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			review := map[string]any{"kind": map[string]any{"kind": tc.kind}, "namespace": "ns", "object": tc.object,
				"namespaceObject": map[string]any{"metadata": map[string]any{"name": "ns", "labels": tc.labels}}}
			rs, err := query.Eval(context.Background(), rego.EvalInput(map[string]any{"review": review, "parameters": map[string]any{}}))
			if err != nil {
				t.Fatal(err)
			}
			denied := len(rs) > 0 && len(rs[0].Expressions[0].Value.([]any)) > 0
			if denied != tc.denied {
				t.Errorf("denied %v, want %v (%v)", denied, tc.denied, rs)
			}
		})
	}
}

func TestCustomResourceDefinitions(t *testing.T) {
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: configs.config.gatekeeper.sh
spec:
  group: config.gatekeeper.sh
  names: {kind: Config, plural: configs}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object}}
`
	other := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: gatekeeper-system\n"
	got, err := customResourceDefinitions([]byte(other + "---\n" + crd + "---\n" + other))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "configs.config.gatekeeper.sh" || got[0].Spec.Names.Kind != "Config" {
		t.Fatalf("got %+v, want the one CRD", got)
	}
	for name, manifest := range map[string]string{
		"no CRD":      other,
		"old version": strings.Replace(crd, "apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1", 1),
		"bad field":   crd + "  colour: blue\n",
		"not YAML":    "kind: [",
	} {
		if _, err := customResourceDefinitions([]byte(manifest)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// A missing or foreign executable is refused with what to do.
func TestGatekeeperVersionRejects(t *testing.T) {
	_, err := gatekeeperVersion(filepath.Join(t.TempDir(), "gatekeeper"))
	if err == nil || !strings.Contains(err.Error(), "make bench-gatekeeper") {
		t.Errorf("missing executable: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gatekeeperVersion(self); err == nil || !strings.Contains(err.Error(), "was not built from "+gatekeeperModule) {
		t.Errorf("foreign executable: %v", err)
	}
	notGo := filepath.Join(t.TempDir(), "script")
	os.WriteFile(notGo, []byte("#!/bin/sh\n"), 0o755)
	if _, err := gatekeeperVersion(notGo); err == nil || !strings.Contains(err.Error(), "not a Go executable") {
		t.Errorf("not a Go executable: %v", err)
	}
}

// The serve subcommand serves pipeguard's targets, not the peers.
func TestServeRefusesThePeer(t *testing.T) {
	if _, err := parseServeFlags([]string{"--target", TargetGatekeeper}); err == nil {
		t.Fatal("no error")
	}
}

// gatekeeperForTest is the Gatekeeper executable built by make
// bench-gatekeeper; tests that run it skip without it or a control plane.
func gatekeeperForTest(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", "..", "..", "bin", "tools", "gatekeeper"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no Gatekeeper executable at %s (build it with make bench-gatekeeper): %v", bin, err)
	}
	if _, err := testenv.AssetsDir(); err != nil {
		t.Skipf("no control plane: %v; build one with hack/control-plane.sh and set %s", err, testenv.AssetsEnv)
	}
	return bin
}

// Gatekeeper, run as its own executable on a local control plane, decides
// every request of the mix as pipeguard does. Timing is not asserted.
func TestGatekeeperDecidesTheMix(t *testing.T) {
	bin := gatekeeperForTest(t)
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var log strings.Builder
	env, err := startGatekeeperEnv(ctx, bin, "", smallNamespaces, &log)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.stop(); err != nil {
			t.Error(err)
		}
	}()
	const n = 200
	r, err := Run(ctx, Options{Target: TargetGatekeeper, Workers: 4, Requests: n, Duration: time.Minute, gatekeeper: env})
	if err != nil {
		t.Fatal(err)
	}
	if r.Sent != n || r.Errors != 0 {
		t.Fatalf("sent %d, errors %d %v; want %d sent and no errors; first error: %s", r.Sent, r.Errors, r.ErrorKinds, n, r.FirstError)
	}
	if r.CPUPerReviewMs <= 0 || r.PeakRSSBytes <= 0 {
		t.Errorf("CPU %v ms/review, peak RSS %d; want Gatekeeper's", r.CPUPerReviewMs, r.PeakRSSBytes)
	}
	if env.peer.Version == "" || env.peer.Rego != gatekeeperRego || len(env.peer.Args) == 0 {
		t.Errorf("peer %+v lacks the version, the rule or the command line", env.peer)
	}
}

// A webhook that does not decide the mix as pipeguard does is caught before
// it is measured, with the kind it got wrong.
func TestDecideEveryKindCatchesAWrongRule(t *testing.T) {
	m, err := newMix()
	if err != nil {
		t.Fatal(err)
	}
	allowAll := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review struct{ Request struct{ UID string } }
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":%q,"allowed":true}}`, review.Request.UID)
	}))
	defer allowAll.Close()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: allowAll.Certificate().Raw})
	c, err := newClient(allowAll.URL, caPEM, m, smallNamespaces, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	err = decideEveryKind(context.Background(), c, m)
	if err == nil || !strings.Contains(err.Error(), "-denied: ") || !strings.Contains(err.Error(), "allowed=true, want false") {
		t.Fatalf("error %v, want the denied kind that was allowed", err)
	}
}
