//go:build benchtools

package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/pipeguard/pipeguard/hack/bench/internal/results"
	"github.com/pipeguard/pipeguard/internal/testenv"
)

// TestMain lets the test binary serve as the server process: Run re-runs
// the executable it is in with the serve subcommand.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == serveCommand {
		os.Exit(serveMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// Every served target answers every request of the mix, over the real
// server in a process of its own, with the decision its kind expects (the
// floor allows everything): send counts any other answer as an error.
// Timing is not asserted. The gatekeeper target has
// TestGatekeeperDecidesTheMix.
func TestTargetsDecideTheMix(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	for _, tg := range targets {
		if tg.peer {
			continue
		}
		t.Run(tg.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r, err := Run(ctx, Options{Target: tg.name, Duration: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if r.Sent < 20 || r.Errors != 0 {
				t.Fatalf("sent %d, errors %d; want the whole mix answered without errors; first error: %s", r.Sent, r.Errors, r.FirstError)
			}
			if _, err := os.Stat("/proc/self/status"); err == nil && r.PeakRSSBytes <= 0 {
				t.Errorf("peak RSS %d; want the serving process's", r.PeakRSSBytes)
			}
		})
	}
}

// The reviews are as large as those kube-apiserver sends: pods with
// managedFields and defaults are 4.5 to 7.2 KB.
func TestReviewsHaveTheSizeOfRealOnes(t *testing.T) {
	m, err := newMix()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range m.kinds {
		if n := len(k.body); n < 4500 || n > 7400 {
			t.Errorf("%s: %d bytes, want 4.5 to 7.2 KB", k.name, n)
		}
	}
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"--targets", "pipeguard,gatekeeper", "--gatekeeper", "/opt/gatekeeper"})
	if err != nil || !slices.Equal(cfg.targets, []string{"pipeguard", "gatekeeper"}) {
		t.Fatalf("%v, %+v", err, cfg)
	}
	if cfg, err := parseFlags(nil); err != nil || !slices.Equal(cfg.targets, allTargets) {
		t.Fatalf("defaults: %v, %+v", err, cfg)
	}
	for _, args := range [][]string{{"--targets", "opa"}, {"--rounds", "0"}, {"--duration", "0s"}, {"now"}, {"--workers", "8"}} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// The server process refuses a bad command line, the peers included,
// before it serves anything, with exit code 2 and the reason; the parent
// reports that reason.
func TestServeRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--target", "opa"}, {"--target", TargetGatekeeper}, {"now"}, {"--rate", "5"}} {
		var out, errOut strings.Builder
		if code := serveMain(args, strings.NewReader(""), &out, &errOut); code != 2 || out.Len() > 0 || !strings.HasPrefix(errOut.String(), "loadtest serve: ") {
			t.Errorf("%q: exit code %d, stdout %q, stderr %q; want 2, nothing served and the reason", args, code, out.String(), errOut.String())
		}
	}
	if _, err := startChild(context.Background(), "opa"); err == nil || !strings.Contains(err.Error(), `--target "opa" is unknown`) {
		t.Errorf("error %v, want the server process's reason", err)
	}
}

// The server processes collect garbage as pipeguard-webhook does when
// deployed with config/default.
func TestServerGOGCMatchesTheDeployment(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`- name: GOGC\s+value: "(\d+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatal("config/manager/manager.yaml sets no GOGC")
	}
	if string(m[1]) != serverGOGC {
		t.Errorf("config/manager sets GOGC %s, the load tool's servers run with %s", m[1], serverGOGC)
	}
}

// Through a real kube-apiserver, pipeguard and the ValidatingAdmissionPolicy
// both deny a CSI node pod in a namespace without the allowance (endToEnd
// waits for that before measuring) and every target's namespace admits the
// pods measured. Timing is not asserted.
func TestEndToEnd(t *testing.T) {
	if _, err := testenv.AssetsDir(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no control plane: %v", err)
		}
		t.Skipf("no control plane: %v; build one with hack/control-plane.sh and set %s", err, testenv.AssetsEnv)
	}
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var log strings.Builder
	runs, err := endToEnd(ctx, 1, 2, &log)
	if err != nil {
		t.Fatal(err)
	}
	// endToEnd stops pipeguard's server after the rounds and fails unless
	// its fail-closed webhook then refuses a CSI node pod but an ordinary
	// hostPath pod is still admitted: the API server never sent pipeguard a
	// review for that kind.
	if want := "pipeguard stopped: " + results.KindOrdinaryHostPath + " pods still admitted, hostpath pods refused"; !strings.Contains(log.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, log.String())
	}
	seen := map[string]bool{}
	for _, r := range runs {
		k := r.Target + " " + r.Kind
		if seen[k] || r.Pods != 2 || r.P50 <= 0 {
			t.Errorf("%+v: want one result of 2 pods for each target and kind", r)
		}
		seen[k] = true
	}
	if got, want := len(seen), len(e2eTargets)*len(results.PodKinds); got != want {
		t.Errorf("%d targets and kinds measured, want %d (every target, every kind of pod)", got, want)
	}
}

// pipeguard's webhook is registered with the matchConditions of the pods
// webhook in config/webhook/manifests.yaml, the prefilter included.
func TestEndToEndRegistersTheShippedConditions(t *testing.T) {
	conds, err := shippedPodConditions()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(conds, func(c admissionregistrationv1.MatchCondition) bool { return c.Name == "may-name-a-pipe" }) {
		t.Errorf("matchConditions %+v lack may-name-a-pipe", conds)
	}
	if got := webhookConfig(TargetPipeguard, "https://127.0.0.1", nil, conds).Webhooks[0].MatchConditions; !slices.Equal(got, conds) {
		t.Errorf("pipeguard's registration has matchConditions %+v, want %+v", got, conds)
	}
}
