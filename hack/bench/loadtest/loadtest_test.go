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
	ctrl "sigs.k8s.io/controller-runtime"
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
// floor allows everything). Timing is not asserted. The gatekeeper target
// has TestGatekeeperDecidesTheMix.
func TestTargetsDecideTheMix(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	m, err := newMix()
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range servedTargets() {
		t.Run(target, func(t *testing.T) {
			const n = 200
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r, err := Run(ctx, Options{Target: target, Workers: 4, Requests: n, Duration: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if r.Sent != n || r.Errors != 0 {
				t.Fatalf("sent %d, errors %d %v; want %d sent and no errors; first error: %s", r.Sent, r.Errors, r.ErrorKinds, n, r.FirstError)
			}
			if _, err := os.Stat("/proc/self/status"); err == nil && r.PeakRSSBytes <= 0 {
				t.Errorf("peak RSS %d; want the serving process's", r.PeakRSSBytes)
			}
			for _, k := range m.kinds {
				d := r.Decisions[k.name]
				allowed := k.allowed || target == TargetFloor
				switch {
				case d == nil:
					t.Errorf("%s: never sent", k.name)
				case allowed && (d.Allowed == 0 || d.Denied > 0):
					t.Errorf("%s: %d allowed, %d denied; want all allowed", k.name, d.Allowed, d.Denied)
				case !allowed && (d.Denied == 0 || d.Allowed > 0):
					t.Errorf("%s: %d allowed, %d denied; want all denied", k.name, d.Allowed, d.Denied)
				}
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
	tests := map[string]struct {
		args    []string
		targets []string
		wantErr bool
	}{
		"default":        {targets: allTargets},
		"target list":    {args: []string{"--targets", "floor,pipeguard"}, targets: []string{"floor", "pipeguard"}},
		"bad target":     {args: []string{"--targets", "opa"}, wantErr: true},
		"gatekeeper":     {args: []string{"--targets", "pipeguard,gatekeeper", "--gatekeeper", "/opt/gatekeeper"}, targets: []string{"pipeguard", "gatekeeper"}},
		"no rounds":      {args: []string{"--rounds", "0"}, wantErr: true},
		"too many":       {args: []string{"--workers", "100000"}, wantErr: true},
		"stray argument": {args: []string{"now"}, wantErr: true},
		"removed flag":   {args: []string{"--steal-limit", "1"}, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg, err := parseFlags(tc.args)
			if tc.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cfg.targets, tc.targets) {
				t.Fatalf("targets %q, want %q", cfg.targets, tc.targets)
			}
		})
	}
}

// The server process refuses a bad command line before it serves anything,
// with exit code 2 and the reason.
func TestServeRejectsBadFlags(t *testing.T) {
	for name, args := range map[string][]string{
		"bad target":     {"--target", "opa"},
		"stray argument": {"now"},
		"unknown flag":   {"--rate", "5"},
	} {
		t.Run(name, func(t *testing.T) {
			var out, errOut strings.Builder
			if code := serveMain(args, strings.NewReader(""), &out, &errOut); code != 2 {
				t.Fatalf("exit code %d, want 2", code)
			}
			if out.Len() > 0 || !strings.HasPrefix(errOut.String(), "loadtest serve: ") {
				t.Fatalf("stdout %q, stderr %q; want nothing served and the reason", out.String(), errOut.String())
			}
		})
	}
}

// A server process that cannot start is reported with its reason.
func TestChildStartFailureIsReported(t *testing.T) {
	_, err := startChild(context.Background(), "opa")
	if err == nil || !strings.Contains(err.Error(), `--target "opa" is unknown`) {
		t.Fatalf("error %v, want the server process's reason", err)
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
