//go:build benchtools

package main

import (
	"context"
	"encoding/json"
	"fmt"
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

// gatekeeperQuery prepares the ConstraintTemplate's violations for
// evaluation as Gatekeeper evaluates them, in rego v0.
func gatekeeperQuery(t *testing.T) rego.PreparedEvalQuery {
	query, err := rego.New(rego.Query("data.pipeguardcsiproxy.violation"), rego.SetRegoVersion(ast.RegoV0),
		rego.Module("template.rego", gatekeeperRego)).PrepareForEval(context.Background())
	if err != nil {
		t.Fatalf("the ConstraintTemplate's rego does not compile: %v", err)
	}
	return query
}

// The ConstraintTemplate's rego, evaluated as Gatekeeper evaluates it (rego
// v0, input.review the AdmissionRequest with the namespace object added),
// decides every kind of review of the mix as pipeguard does, in labelled
// and unlabelled namespaces, with a message naming the pipe.
func TestGatekeeperRegoDecidesTheMix(t *testing.T) {
	m, err := newMix(MixDeployed)
	if err != nil {
		t.Fatal(err)
	}
	ns := namespaces(smallNamespaces)
	query := gatekeeperQuery(t)
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

// The rule reads what pipeguard reads beyond the mix: init and ephemeral
// containers, the pod's HostProcess setting, privileged containers, other
// spellings of the pipe path, workloads and CronJobs.
func TestGatekeeperRegoCases(t *testing.T) {
	query := gatekeeperQuery(t)
	const csi, mounted = `\\\\.\\pipe\\csi-proxy-disk-v1`, `{"name":"c","volumeMounts":[{"name":"p","mountPath":"C:\\p"}]`
	for _, tc := range []struct {
		name, kind, path, spec, label string
		denied                        bool
	}{
		{"plain container", "Pod", csi, `"containers":[` + mounted + `}]`, "", true},
		{"init container", "Pod", csi, `"containers":[],"initContainers":[` + mounted + `}]`, "", true},
		{"ephemeral container", "Pod", csi, `"containers":[],"ephemeralContainers":[` + mounted + `}]`, "", true},
		{"forward slashes", "Pod", `//./PIPE/CSI-Proxy-smb-v1`, `"containers":[` + mounted + `}]`, "", true},
		{"other pipe", "Pod", `\\\\.\\pipe\\docker_engine`, `"containers":[` + mounted + `}]`, "", false},
		{"not mounted", "Pod", csi, `"containers":[{"name":"c"}]`, "", false},
		{"privileged", "Pod", csi, `"containers":[` + mounted + `,"securityContext":{"privileged":true}}]`, "", false},
		{"pod HostProcess", "Pod", csi, `"containers":[` + mounted + `}],"securityContext":{"windowsOptions":{"hostProcess":true}}`, "", false},
		{"labelled namespace", "Pod", csi, `"containers":[` + mounted + `}]`, "true", false},
		{"label not true", "Pod", csi, `"containers":[` + mounted + `}]`, "yes", true},
		{"daemonset", "DaemonSet", csi, `"containers":[` + mounted + `}]`, "", true},
		{"cronjob", "CronJob", csi, `"containers":[` + mounted + `}]`, "", true},
	} {
		var spec map[string]any
		if err := json.Unmarshal([]byte(`{"volumes":[{"name":"p","hostPath":{"path":"`+tc.path+`"}}],`+tc.spec+`}`), &spec); err != nil {
			t.Fatal(err)
		}
		object := map[string]any{"spec": spec}
		switch tc.kind {
		case "DaemonSet":
			object = map[string]any{"spec": map[string]any{"template": object}}
		case "CronJob":
			object = map[string]any{"spec": map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{"template": object}}}}
		}
		review := map[string]any{"kind": map[string]any{"kind": tc.kind}, "namespace": "ns", "object": object,
			"namespaceObject": map[string]any{"metadata": map[string]any{"name": "ns", "labels": map[string]any{"pipeguard.io/allow-csi-proxy": tc.label}}}}
		rs, err := query.Eval(context.Background(), rego.EvalInput(map[string]any{"review": review, "parameters": map[string]any{}}))
		if err != nil {
			t.Fatal(err)
		}
		if denied := len(rs) > 0 && len(rs[0].Expressions[0].Value.([]any)) > 0; denied != tc.denied {
			t.Errorf("%s: denied %v, want %v (%v)", tc.name, denied, tc.denied, rs)
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
	env, err := startGatekeeperEnv(ctx, bin, smallNamespaces, &log)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.stop(); err != nil {
			t.Error(err)
		}
	}()
	runs := [][2]string{{TargetGatekeeperGOGC, MixDeployed}}
	for _, mix := range mixes {
		runs = append(runs, [2]string{TargetGatekeeper, mix})
	}
	for _, run := range runs {
		r, err := Run(ctx, Options{Target: run[0], Mix: run[1], Duration: time.Second, gatekeeper: env})
		if err != nil {
			t.Fatalf("%s, %s mix: %v", run[0], run[1], err)
		}
		if r.Sent < 20 || r.Errors != 0 {
			t.Fatalf("%s, %s mix: sent %d, errors %d; want the whole mix answered without errors; first error: %s", run[0], run[1], r.Sent, r.Errors, r.FirstError)
		}
		if r.CPUPerReviewMs <= 0 || r.PeakRSSBytes <= 0 {
			t.Errorf("%s, %s mix: CPU %v ms/review, peak RSS %d; want Gatekeeper's", run[0], run[1], r.CPUPerReviewMs, r.PeakRSSBytes)
		}
	}
	if env.peer.Version == "" || env.peer.Rego != gatekeeperRego || len(env.peer.Args) == 0 {
		t.Errorf("peer %+v lacks the version, the rule or the command line", env.peer)
	}
}

// A webhook that does not decide the mix as pipeguard does, here the floor,
// is caught before it is measured, with the kind it got wrong.
func TestDecideEveryKindCatchesAWrongRule(t *testing.T) {
	m, err := newMix(MixDeployed)
	if err != nil {
		t.Fatal(err)
	}
	floor, err := startChild(context.Background(), TargetFloor)
	if err != nil {
		t.Fatal(err)
	}
	defer floor.Stop()
	c, err := newClient(floor.URL, floor.CAPEM, m, smallNamespaces, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	err = decideEveryKind(context.Background(), c, m)
	if err == nil || !strings.Contains(err.Error(), "-denied: ") || !strings.Contains(err.Error(), "allowed=true, want false") {
		t.Fatalf("error %v, want the denied kind that was allowed", err)
	}
}
