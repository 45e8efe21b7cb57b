//go:build benchtools

package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pipeguard/pipeguard/hack/bench/internal/results"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// TestMain lets the test binary serve as the server process: Run re-runs
// the executable it is in with the serve subcommand.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == serveCommand {
		os.Exit(serveMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// Every served target answers every request of each mix, over the real
// server in a process of its own, with the decision its kind expects (the
// floor allows everything). Timing is not asserted.
func TestTargetsDecideTheMix(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	for _, tg := range targets {
		for _, mix := range mixes {
			if tg.peer || tg.deployedOnly && mix != MixDeployed {
				continue
			}
			t.Run(tg.name+"/"+mix, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				r, err := Run(ctx, Options{Target: tg.name, Mix: mix, Duration: 300 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				if r.Sent < 20 || r.Errors != 0 || r.Mix != mix {
					t.Fatalf("%s mix: sent %d, errors %d, mix %q; want the whole mix answered without errors; first error: %s", mix, r.Sent, r.Errors, r.Mix, r.FirstError)
				}
				if _, err := os.Stat("/proc/self/status"); err == nil && r.PeakRSSBytes <= 0 {
					t.Errorf("peak RSS %d; want the serving process's", r.PeakRSSBytes)
				}
			})
		}
	}
}

// The reviews are as large as those kube-apiserver sends: pods with
// managedFields and defaults are 4.5 to 7.2 KB. In the pipes and denials
// mixes no two reviews share a ServiceAccount or a pipe volume's name, so no
// decision can be remembered from another review; each pod still names only
// volumes it has, and the names stay valid Kubernetes names.
func TestMixes(t *testing.T) {
	name := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	for _, mixName := range mixes {
		m, err := newMix(mixName)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]uint64{}
		for seq := range uint64(5 * len(m.slots)) {
			body, k := m.body(seq, smallNamespaces, uidPlaceholder)
			if n := len(k.body); n < 4500 || n > 7400 {
				t.Errorf("%s %s: %d bytes, want 4.5 to 7.2 KB", mixName, k.name, n)
			}
			var review struct {
				Request struct {
					Object struct {
						Spec struct {
							corev1.PodSpec
							Template struct{ Spec corev1.PodSpec } `json:"template"`
						} `json:"spec"`
					} `json:"object"`
				} `json:"request"`
			}
			if err := json.Unmarshal(body, &review); err != nil {
				t.Fatalf("%s %s: %v", mixName, k.name, err)
			}
			spec := review.Request.Object.Spec.PodSpec
			if len(spec.Containers) == 0 {
				spec = review.Request.Object.Spec.Template.Spec
			}
			volumes, facts := map[string]bool{}, []string{"serviceAccount " + spec.ServiceAccountName}
			for _, v := range spec.Volumes {
				if volumes[v.Name] = true; v.HostPath != nil && strings.HasPrefix(v.HostPath.Path, `\\.\pipe\`) {
					facts = append(facts, "volume "+v.Name)
				}
			}
			for _, c := range spec.Containers {
				for _, vm := range c.VolumeMounts {
					if !volumes[vm.Name] {
						t.Errorf("%s %s: container %s mounts volume %s, which the pod lacks", mixName, k.name, c.Name, vm.Name)
					}
				}
			}
			if mixName == MixDeployed {
				continue
			}
			if len(facts) < 5 {
				t.Errorf("%s %s: %d pipe volumes, want the CSI node pod's four", mixName, k.name, len(facts)-1)
			}
			for _, f := range facts {
				if !name.MatchString(strings.Fields(f)[1]) || len(f) > 63+len("serviceAccount ") {
					t.Errorf("%s %s: %s is not a valid name", mixName, k.name, f)
				}
				if prev, ok := seen[f]; ok {
					t.Errorf("%s: reviews %d and %d share %s", mixName, prev, seq, f)
				}
				seen[f] = seq
			}
		}
	}
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"--targets", "pipeguard,gatekeeper", "--gatekeeper", "/opt/gatekeeper"})
	if err != nil || !slices.Equal(cfg.targets, []string{"pipeguard", "gatekeeper"}) || cfg.gatekeeperBin != "/opt/gatekeeper" {
		t.Fatalf("%v, %+v", err, cfg)
	}
	if cfg, err := parseFlags(nil); err != nil || !slices.Equal(cfg.targets, allTargets) || !slices.Equal(cfg.mixes, mixes) || cfg.rounds != 10 {
		t.Fatalf("defaults: %v, %+v", err, cfg)
	}
	for args, want := range map[string]string{
		"--mixes pipes,cached": `--mixes: "cached" is unknown; use deployed, pipes, denials`, "--mixes=": `--mixes: "" is unknown; use deployed, pipes, denials`,
		"--targets opa": `--targets: "opa" is unknown; use floor, pipeguard, pipeguard-scale, gatekeeper, gatekeeper-gogc400`,
		"--rounds 0":    "--rounds 0 is out of range; use 1 to 100", "--duration 0s": "--duration 0s is out of range; use up to 10m",
		"now": `unexpected arguments ["now"]; every setting is a flag`, "--workers 8": "flag provided but not defined: -workers",
	} {
		if _, err := parseFlags(strings.Fields(args)); err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", args, err, want)
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

// e2e refuses a bad command line with exit code 2, and a missing Gatekeeper
// executable with exit code 1 and what to do, before it starts anything.
func TestEndToEndCommandLine(t *testing.T) {
	const usage = "--rounds must be positive, --targets a list of none, floor, pipeguard, validatingadmissionpolicy, gatekeeper with none among them, each once, and every setting is a flag"
	const missing = "the gatekeeper target runs Gatekeeper's executable /nonexistent/gatekeeper, which does not exist: build it with `make bench-gatekeeper` (or pass --gatekeeper), or leave gatekeeper out of --targets"
	for args, code := range map[string]int{"--targets floor,pipeguard": 2, "--targets none,opa": 2, "--targets none,none": 2, "--rounds 0": 2, "now": 2,
		"--targets none,gatekeeper --gatekeeper /nonexistent/gatekeeper": 1} {
		want := map[int]string{1: missing, 2: usage}[code]
		var out, errOut strings.Builder
		if got := e2eMain(strings.Fields(args), &out, &errOut); got != code || out.Len() > 0 || errOut.String() != "loadtest e2e: "+want+"\n" {
			t.Errorf("%s: exit code %d, stdout %q, stderr %q; want %d and %q", args, got, out.String(), errOut.String(), code, want)
		}
	}
}

// The server processes collect garbage as pipeguard-webhook does when
// deployed with config/default.
func TestServerGOGCMatchesTheDeployment(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "manager", "manager.yaml"))
	if m := regexp.MustCompile(`- name: GOGC\s+value: "(\d+)"`).FindSubmatch(b); err != nil || m == nil || string(m[1]) != serverGOGC {
		t.Errorf("config/manager/manager.yaml (%v) sets GOGC %q; the load tool's servers run with %s", err, m, serverGOGC)
	}
}

// Through a real kube-apiserver, every checking target denies each pod
// mounting a CSI Proxy pipe without an allowance with a 403 and its own
// message, and every target admits the other pods: endToEnd fails
// otherwise. Gatekeeper is left out only when its executable is absent.
func TestEndToEnd(t *testing.T) {
	if _, err := testenv.AssetsDir(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no control plane: %v", err)
		}
		t.Skipf("no control plane: %v; build one with hack/control-plane.sh and set %s", err, testenv.AssetsEnv)
	}
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	targets := e2eTargets
	gatekeeper, err := gatekeeperForTest()
	if err != nil {
		targets = slices.DeleteFunc(slices.Clone(targets), func(t string) bool { return t == TargetGatekeeper })
		t.Run(TargetGatekeeper, func(t *testing.T) { t.Skip(err) })
	}
	var log strings.Builder
	runs, err := endToEnd(ctx, targets, gatekeeper, 1, 2, &log)
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
		if k := r.Target + " " + r.Kind; seen[k] || r.Pods != 2 || r.P50 <= 0 {
			t.Errorf("%+v: want one result of 2 pods for each target and kind", r)
		} else {
			seen[k] = true
		}
	}
	if got, want := len(seen), len(targets)*len(e2eKinds); got != want {
		t.Errorf("%d targets and kinds measured, want %d (every target, every kind of pod)", got, want)
	}
}

// Each answer is checked: a checking target that admits a pod of the
// denied kind, or refuses it otherwise than with a 403 and its own message,
// is an error rather than a sample, as is refusing another kind. No two
// pods are alike, so no decision cache answers them.
func TestEndToEndChecksEveryAnswer(t *testing.T) {
	gkDenial := apierrors.NewForbidden(corev1.Resource("pods"), "p", errors.New("denied"))
	gkDenial.ErrStatus.Message = e2eDenials[TargetGatekeeper] + " …"
	for _, tc := range []struct {
		target, kind string
		answer       error
		words        string
	}{
		{TargetGatekeeper, results.KindDenied, gkDenial, ""},
		{TargetPipeguard, results.KindDenied, nil, "pipeguard admitted pod e2e-unallowed-pipeguard/denied-000007, which mounts a CSI Proxy pipe without an allowance; it must deny it"},
		{e2eVAP, results.KindDenied, gkDenial, "creating pod e2e-unallowed-validatingadmissionpolicy/denied-000007 (want ValidatingAdmissionPolicy 'bench-csi-proxy'"},
		{TargetGatekeeper, results.KindDenied, apierrors.NewInternalError(errors.New(e2eDenials[TargetGatekeeper])), `(want admission webhook "gatekeeper.bench.pipeguard.io" denied`},
		{TargetPipeguard, "hostpath", gkDenial, "creating pod e2e-pipeguard/hostpath-000007 (want admitted): "},
		{e2eNone, results.KindDenied, gkDenial, "creating pod e2e-unallowed-none/denied-000007 (want admitted)"},
	} {
		c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{Create: func(context.Context, crclient.WithWatch, crclient.Object, ...crclient.CreateOption) error {
			return tc.answer
		}}).Build()
		if _, err := e2eCreate(context.Background(), c, tc.target, tc.kind, 7); tc.words == "" && err != nil || tc.words != "" && (err == nil || !strings.Contains(err.Error(), tc.words)) {
			t.Errorf("%s, %s, answer %v: error %v, want %q", tc.target, tc.kind, tc.answer, err, tc.words)
		}
	}
	if a, b := e2ePod("hostpath", "ns", 1), e2ePod("hostpath", "ns", 2); a.Spec.Volumes[0].Name == b.Spec.Volumes[0].Name {
		t.Errorf("two pods share volume %s", a.Spec.Volumes[0].Name)
	}
}

// pipeguard's and Gatekeeper's webhooks are registered with the
// matchConditions of the pods webhook in config/webhook/manifests.yaml, the
// prefilter included; the floor's with none.
func TestEndToEndRegistersTheShippedConditions(t *testing.T) {
	conds, err := shippedPodConditions()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(conds, func(c admissionregistrationv1.MatchCondition) bool { return c.Name == "may-name-a-pipe" }) {
		t.Errorf("matchConditions %+v lack may-name-a-pipe", conds)
	}
	for target, want := range map[string][]admissionregistrationv1.MatchCondition{TargetPipeguard: conds, TargetGatekeeper: conds, TargetFloor: nil} {
		if got := webhookConfig(target, serving{URL: "https://127.0.0.1"}, conds).Webhooks[0].MatchConditions; !slices.Equal(got, want) {
			t.Errorf("%s's registration has matchConditions %+v, want %+v", target, got, want)
		}
	}
}
