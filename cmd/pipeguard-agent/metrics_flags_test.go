package main

import (
	"strings"
	"testing"
)

func TestMetricsFlags(t *testing.T) {
	cases := map[string]struct {
		args       []string
		wantSecure bool
		wantAddr   string
		wantErr    string // exit code 2 with this on stderr
	}{
		"local run: plain HTTP on loopback": {wantAddr: "127.0.0.1:8888"},
		"in the cluster: secure by default": {args: []string{"--kubeconfig=in-cluster"}, wantSecure: true, wantAddr: "127.0.0.1:8888"},
		"the DaemonSet's flags":             {args: []string{"--kubeconfig=in-cluster", "--metrics-bind-address=:8888", "--metrics-secure=true"}, wantSecure: true, wantAddr: ":8888"},
		"in the cluster, secure turned off": {args: []string{"--kubeconfig=in-cluster", "--metrics-secure=false"}, wantAddr: "127.0.0.1:8888"},
		"a kubeconfig file: plain by default, secure on request": {
			args: []string{"--kubeconfig=/etc/agent.kubeconfig", "--metrics-secure"}, wantSecure: true, wantAddr: "127.0.0.1:8888"},
		"secure with a certificate directory": {
			args: []string{"--kubeconfig=in-cluster", "--metrics-cert-dir=/etc/metrics-cert"}, wantSecure: true, wantAddr: "127.0.0.1:8888"},
		"secure needs a kubeconfig": {args: []string{"--metrics-secure"},
			wantErr: "--metrics-secure needs --kubeconfig: the API server reviews the token of every scrape; set --kubeconfig, or --metrics-secure=false"},
		"metrics off need nothing": {args: []string{"--metrics-secure", "--metrics-bind-address=0"}, wantSecure: true, wantAddr: "0"},
		"a certificate directory needs secure": {args: []string{"--metrics-cert-dir=/etc/metrics-cert"},
			wantErr: "--metrics-cert-dir is used only with --metrics-secure"},
		"a certificate directory with secure turned off": {args: []string{"--kubeconfig=in-cluster", "--metrics-secure=false", "--metrics-cert-dir=/x"},
			wantErr: "--metrics-cert-dir is used only with --metrics-secure"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stderr strings.Builder
			cfg, code, ok := parseFlags(append([]string{"--audit-log-path", t.TempDir() + "/audit.log"}, tc.args...), &stderr)
			if tc.wantErr != "" {
				if ok || code != 2 || !strings.Contains(stderr.String(), tc.wantErr) {
					t.Fatalf("ok %v code %d stderr %q, want code 2 and %q", ok, code, stderr.String(), tc.wantErr)
				}
				return
			}
			if !ok {
				t.Fatalf("refused: code %d, stderr %q", code, stderr.String())
			}
			if cfg.Agent.MetricsSecure != tc.wantSecure || cfg.Agent.MetricsBindAddress != tc.wantAddr {
				t.Fatalf("secure %v at %q, want %v at %q", cfg.Agent.MetricsSecure, cfg.Agent.MetricsBindAddress, tc.wantSecure, tc.wantAddr)
			}
		})
	}
}
