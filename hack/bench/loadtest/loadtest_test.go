package main

import (
	"context"
	"fmt"
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

// Both targets answer every request of the mix, over the real server in a
// process of its own and in this one, with the decision its kind expects.
// Timing is not asserted.
func TestTargetsDecideTheMix(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	m, err := newMix()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, k := range m.kinds {
		want[k.name] = k.allowed
	}
	tests := map[string]Options{
		"pipeguard, default policy":            {Target: TargetPipeguard, Namespaces: 20},
		"pipeguard, many namespaces, policies": {Target: TargetPipeguard, Namespaces: 2000, Policies: 12},
		"pipeguard without decision cache":     {Target: TargetUncached, Namespaces: 20},
		"baseline":                             {Target: TargetBaseline, Namespaces: 20},
		"pipeguard in-process":                 {Target: TargetPipeguard, Namespaces: 20, InProcess: true},
		"baseline in-process":                  {Target: TargetBaseline, Namespaces: 20, InProcess: true},
	}
	for name, opts := range tests {
		t.Run(name, func(t *testing.T) {
			const n = 200
			// No request can be dropped: as many may be outstanding as are
			// sent, and the duration does not end the run first.
			opts.Rate, opts.Requests, opts.Duration, opts.MaxInFlight = 400, n, time.Minute, n
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r, err := Run(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			if r.Sent != n || r.Errors != 0 || r.Dropped != 0 {
				t.Fatalf("sent %d, errors %d %v, dropped %d; want %d sent and no errors or drops; first error: %s",
					r.Sent, r.Errors, r.ErrorKinds, r.Dropped, n, r.FirstError)
			}
			wantServer := "process"
			if opts.InProcess {
				wantServer = "in-process"
			}
			if r.Server != wantServer {
				t.Errorf("server %q, want %q", r.Server, wantServer)
			}
			if _, err := os.Stat("/proc/self/status"); err == nil && (r.RSSBytes <= 0 || r.PeakRSSBytes < r.RSSBytes) {
				t.Errorf("RSS %d, peak %d; want the serving process's", r.RSSBytes, r.PeakRSSBytes)
			}
			for kind, allowed := range want {
				d := r.Decisions[kind]
				switch {
				case d == nil:
					t.Errorf("%s: never sent", kind)
				case allowed && (d.Allowed == 0 || d.Denied > 0):
					t.Errorf("%s: %d allowed, %d denied; want all allowed", kind, d.Allowed, d.Denied)
				case !allowed && (d.Denied == 0 || d.Allowed > 0):
					t.Errorf("%s: %d allowed, %d denied; want all denied", kind, d.Allowed, d.Denied)
				}
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	tests := map[string]struct {
		args    []string
		runs    int
		wantErr bool
	}{
		"default":            {args: nil, runs: 1},
		"both, rates":        {args: []string{"--target", "both", "--rates", "500,1000"}, runs: 4},
		"all, rates":         {args: []string{"--target", "all", "--rates", "500,1000"}, runs: 6},
		"target list":        {args: []string{"--target", "pipeguard,pipeguard-uncached", "--rate", "1000"}, runs: 2},
		"rate and closed":    {args: []string{"--rate", "100", "--closed", "4,16"}, runs: 3},
		"bad target":         {args: []string{"--target", "opa"}, wantErr: true},
		"bad rates":          {args: []string{"--rates", "1000,x"}, wantErr: true},
		"too few ns":         {args: []string{"--namespaces", "1"}, wantErr: true},
		"rate over limit":    {args: []string{"--rate", "1000000"}, wantErr: true},
		"stray argument":     {args: []string{"now"}, wantErr: true},
		"in-process":         {args: []string{"--in-process", "--closed", "8"}, runs: 1},
		"steal retries":      {args: []string{"--steal-limit", "2.5", "--steal-retries", "4"}, runs: 1},
		"negative retries":   {args: []string{"--steal-retries", "-1"}, wantErr: true},
		"small first":        {args: []string{"--target", "pipeguard,pipeguard-uncached", "--namespaces", "10000", "--policies", "50", "--rate", "1000", "--closed", "16", "--small-first"}, runs: 8},
		"small first, small": {args: []string{"--small-first"}, wantErr: true},
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
			if got := len(cfg.runs()); got != tc.runs {
				t.Fatalf("%d runs, want %d", got, tc.runs)
			}
		})
	}
}

// With --small-first, each scale run comes right after the same run of the
// small case.
func TestSmallFirstOrder(t *testing.T) {
	cfg, err := parseFlags([]string{"--target", "pipeguard,pipeguard-uncached", "--namespaces", "10000", "--policies", "50", "--rate", "1000", "--closed", "16", "--small-first"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range cfg.runs() {
		got = append(got, fmt.Sprintf("%s %s %d/%d", o.Target, describe(o), o.Namespaces, o.Policies))
	}
	want := []string{
		"pipeguard 1000/s 20/0", "pipeguard 1000/s 10000/50",
		"pipeguard-uncached 1000/s 20/0", "pipeguard-uncached 1000/s 10000/50",
		"pipeguard closed x16 20/0", "pipeguard closed x16 10000/50",
		"pipeguard-uncached closed x16 20/0", "pipeguard-uncached closed x16 10000/50",
	}
	if !slices.Equal(got, want) {
		t.Errorf("runs\n%q\nwant\n%q", got, want)
	}
}

// A run made again keeps the measurement that lost the least CPU time to
// the hypervisor, and counts how often it was made.
func TestKeepLeastStolen(t *testing.T) {
	first := &Result{StealPercent: 12, P99: 9}
	r := keepLeastStolen(nil, first)
	if r != first || r.Remade != 0 {
		t.Fatalf("first measurement: got %+v, want it kept as it is", r)
	}
	r = keepLeastStolen(r, &Result{StealPercent: 3, P99: 2})
	if r.StealPercent != 3 || r.P99 != 2 || r.Remade != 1 {
		t.Fatalf("after a quieter second run: steal %v, p99 %v, remade %d; want 3, 2, 1", r.StealPercent, r.P99, r.Remade)
	}
	r = keepLeastStolen(r, &Result{StealPercent: 20, P99: 30})
	if r.StealPercent != 3 || r.P99 != 2 || r.Remade != 2 {
		t.Fatalf("after a noisier third run: steal %v, p99 %v, remade %d; want 3, 2, 2", r.StealPercent, r.P99, r.Remade)
	}
}

// The server process refuses a bad command line before it serves anything,
// with exit code 2 and the reason.
func TestServeRejectsBadFlags(t *testing.T) {
	for name, args := range map[string][]string{
		"bad target":     {"--target", "opa"},
		"too few ns":     {"--namespaces", "1"},
		"many policies":  {"--policies", "100000"},
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

// A server process stops, and Run reports it, when it cannot start: here
// because its command line is out of range.
func TestChildStartFailureIsReported(t *testing.T) {
	_, err := startChild(context.Background(), Options{Target: TargetPipeguard, Namespaces: 1})
	if err == nil || !strings.Contains(err.Error(), "--namespaces 1 is out of range") {
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

// The pacer never sends a request before it is due.
func TestPacerWaitsUntilDue(t *testing.T) {
	p := newPacer()
	defer p.stop()
	for _, wait := range []time.Duration{0, 50 * time.Microsecond, 2 * time.Millisecond} {
		due := time.Now().Add(wait)
		p.until(due)
		if early := time.Until(due); early > 0 {
			t.Errorf("waiting %v: returned %v before the due time", wait, early)
		}
	}
}
