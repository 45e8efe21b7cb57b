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

	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// violations evaluates the ConstraintTemplate's rego as Gatekeeper does
// (rego v0, input.review the AdmissionRequest with the namespace object
// added) and returns its messages.
func violations(t *testing.T, review map[string]any) (msgs []string) {
	t.Helper()
	rs, err := rego.New(rego.Query("data.pipeguardcsiproxy.violation"), rego.SetRegoVersion(ast.RegoV0), rego.Module("template.rego", gatekeeperRego),
		rego.Input(map[string]any{"review": review, "parameters": map[string]any{}})).Eval(context.Background())
	if err != nil {
		t.Fatalf("evaluating the ConstraintTemplate's rego: %v", err)
	}
	for _, r := range rs {
		for _, v := range r.Expressions[0].Value.([]any) {
			msgs = append(msgs, fmt.Sprint(v.(map[string]any)["msg"]))
		}
	}
	return msgs
}

// The ConstraintTemplate's rego decides every kind of review of the mix as
// pipeguard does, in labelled and unlabelled namespaces, with a message
// naming the pipe.
func TestGatekeeperRegoDecidesTheMix(t *testing.T) {
	m, err := newMix(MixDeployed)
	if err != nil {
		t.Fatal(err)
	}
	ns := namespaces(smallNamespaces)
	seen := map[string]int{}
	for seq := range uint64(3 * len(m.slots)) {
		body, k := m.body(seq, smallNamespaces, "00000000-0000-4000-8000-000000000000")
		var review struct{ Request map[string]any }
		if err := json.Unmarshal(body, &review); err != nil {
			t.Fatal(err)
		}
		name := review.Request["namespace"].(string)
		review.Request["namespaceObject"] = map[string]any{"metadata": map[string]any{"name": name, "labels": ns[name]}}
		msgs := violations(t, review.Request)
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
// containers, the pod's HostProcess setting, privileged containers (no allowance), other
// spellings of the pipe path, workloads and CronJobs.
func TestGatekeeperRegoCases(t *testing.T) {
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
		{"privileged, which Windows ignores", "Pod", csi, `"containers":[` + mounted + `,"securityContext":{"privileged":true}}]`, "", true},
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
		msgs := violations(t, map[string]any{"kind": map[string]any{"kind": tc.kind}, "namespace": "ns", "object": object,
			"namespaceObject": map[string]any{"metadata": map[string]any{"name": "ns", "labels": map[string]any{"pipeguard.io/allow-csi-proxy": tc.label}}}})
		if denied := len(msgs) > 0; denied != tc.denied {
			t.Errorf("%s: denied %v, want %v (%q)", tc.name, denied, tc.denied, msgs)
		}
	}
}

// A missing or foreign executable is refused with what to do.
func TestGatekeeperVersionRejects(t *testing.T) {
	self, _ := os.Executable()
	for bin, want := range map[string]string{filepath.Join(t.TempDir(), "gatekeeper"): "which does not exist: build it with `make bench-gatekeeper`",
		self: "was not built from " + gatekeeperModule + " (hack/tools/gatekeeper builds it)"} {
		if _, err := gatekeeperVersion(bin); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", bin, err, want)
		}
	}
}

// gatekeeperForTest is the Gatekeeper executable built by make
// bench-gatekeeper, or why it cannot run: it is absent, or there is no
// control plane.
func gatekeeperForTest() (string, error) {
	bin, err := filepath.Abs(filepath.Join("..", "..", "..", "bin", "tools", "gatekeeper"))
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		return bin, fmt.Errorf("no Gatekeeper executable (build it with make bench-gatekeeper): %w", err)
	}
	if _, err := testenv.AssetsDir(); err != nil {
		return bin, fmt.Errorf("no control plane: %w; build one with hack/control-plane.sh and set %s", err, testenv.AssetsEnv)
	}
	return bin, nil
}

// Gatekeeper, run as its own executable on a local control plane, decides
// every request of the mix as pipeguard does. Timing is not asserted.
func TestGatekeeperDecidesTheMix(t *testing.T) {
	bin, err := gatekeeperForTest()
	if err != nil {
		t.Skip(err)
	}
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
	for _, run := range [][2]string{{TargetGatekeeperGOGC, MixDeployed}, {TargetGatekeeper, MixDeployed}, {TargetGatekeeper, MixPipes}, {TargetGatekeeper, MixDenials}} {
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
	// The command line, its ports and certificate directory left out.
	if args := strings.Join(env.peer.Args, " "); env.peer.Version == "" || env.peer.Rego != gatekeeperRego ||
		!strings.HasPrefix(args, "--operation=webhook --exempt-namespace=gatekeeper-system ") || !strings.Contains(args, " --port=… --cert-dir=… --disable-cert-rotation --health-addr=… --prometheus-port=… ") {
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
	c, err := newClient(floor.serving, m, smallNamespaces, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.http.CloseIdleConnections()
	err = decideEveryKind(context.Background(), c, m)
	if err == nil || !strings.Contains(err.Error(), "-denied: ") || !strings.Contains(err.Error(), "allowed=true, want false") {
		t.Fatalf("error %v, want the denied kind that was allowed", err)
	}
}
