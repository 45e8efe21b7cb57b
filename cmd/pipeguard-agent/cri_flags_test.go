package main

import (
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/agent/identity"
)

func TestCRIEndpointFlag(t *testing.T) {
	cases := map[string]struct {
		args     []string
		want     string
		wantCode int
		wantErr  string
	}{
		"containerd by default": {want: identity.DefaultCRIEndpoint},
		"none disables":         {args: []string{"--cri-endpoint=none"}, want: "none"},
		"empty disables":        {args: []string{"--cri-endpoint="}, want: ""},
		"another socket":        {args: []string{"--cri-endpoint=unix:///run/crio/crio.sock"}, want: "unix:///run/crio/crio.sock"},
		"a bare path is refused": {args: []string{"--cri-endpoint=/run/containerd/containerd.sock"}, wantCode: 2,
			wantErr: `--cri-endpoint: CRI endpoint "/run/containerd/containerd.sock": want unix:///path/to/socket or npipe:////./pipe/name, or none to disable`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stderr strings.Builder
			cfg, code, ok := parseFlags(tc.args, &stderr)
			if tc.wantErr != "" {
				if ok || code != tc.wantCode || !strings.Contains(stderr.String(), tc.wantErr) {
					t.Fatalf("ok %v code %d stderr %q, want code %d and %q", ok, code, stderr.String(), tc.wantCode, tc.wantErr)
				}
				return
			}
			if !ok || cfg.Guard.CRIEndpoint != tc.want {
				t.Fatalf("ok %v endpoint %q (stderr %q), want %q", ok, cfg.Guard.CRIEndpoint, stderr.String(), tc.want)
			}
		})
	}
}
