package main

import (
	"net"
	"strings"
	"testing"
)

// TestProbeAddressDefaultsToLoopback checks that the unauthenticated
// probes listen on loopback unless the command line says otherwise, and
// that an explicit address is kept as given.
func TestProbeAddressDefaultsToLoopback(t *testing.T) {
	cases := map[string]struct {
		args     []string
		wantAddr string
		loopback bool
	}{
		"default":                {wantAddr: "127.0.0.1:8889", loopback: true},
		"the DaemonSet's flag":   {args: []string{"--health-probe-bind-address=127.0.0.1:8889"}, wantAddr: "127.0.0.1:8889", loopback: true},
		"every interface, asked": {args: []string{"--health-probe-bind-address=:8889"}, wantAddr: ":8889"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stderr strings.Builder
			cfg, _, ok := parseFlags(append([]string{"--audit-log-path", t.TempDir() + "/audit.log"}, tc.args...), &stderr)
			if !ok {
				t.Fatalf("parseFlags: %s", stderr.String())
			}
			if cfg.Agent.HealthProbeAddr != tc.wantAddr {
				t.Fatalf("health probe address %q, want %q", cfg.Agent.HealthProbeAddr, tc.wantAddr)
			}
			host, _, err := net.SplitHostPort(cfg.Agent.HealthProbeAddr)
			if err != nil {
				t.Fatal(err)
			}
			ip := net.ParseIP(host)
			if got := ip != nil && ip.IsLoopback(); got != tc.loopback {
				t.Fatalf("health probe address %q on loopback: %v, want %v", cfg.Agent.HealthProbeAddr, got, tc.loopback)
			}
		})
	}
}
