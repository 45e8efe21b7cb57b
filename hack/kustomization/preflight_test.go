package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeKubectl writes a kubectl stand-in that knows the CRDs in present,
// answers the others as the API server does (NotFound, exit 1), and logs
// its arguments; unreachable makes it fail as kubectl does without a
// cluster.
func fakeKubectl(t *testing.T, unreachable bool, present ...string) (bin, calls string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the kubectl stand-in is a shell script")
	}
	dir := t.TempDir()
	calls = filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho \"$@\" >> '" + calls + "'\n"
	if unreachable {
		script += "echo 'The connection to the server 127.0.0.1:6443 was refused - did you specify the right host or port?' >&2\nexit 1\n"
	} else {
		script += "case \"$3\" in\n"
		for _, crd := range present {
			script += "  " + crd + ") echo customresourcedefinition.apiextensions.k8s.io/$3; exit 0;;\n"
		}
		script += "esac\necho \"Error from server (NotFound): customresourcedefinitions.apiextensions.k8s.io \\\"$3\\\" not found\" >&2\nexit 1\n"
	}
	bin = filepath.Join(dir, "kubectl")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, calls
}

func TestPreflight(t *testing.T) {
	tests := map[string]struct {
		overlay     string
		unreachable bool
		present     []string
		want        []string // in the error; none: no error
		notWant     []string
	}{
		"prometheus without the Prometheus Operator": {
			overlay: "prometheus",
			want: []string{"OVERLAY=prometheus: the cluster lacks the CRDs servicemonitors.monitoring.coreos.com, prometheusrules.monitoring.coreos.com",
				"nothing was applied", "Prometheus Operator", "kubectl apply --server-side -f config/prometheus/metrics_service.yaml"},
		},
		"prometheus, for the webhook alone, needs no PodMonitors": {
			overlay: "prometheus", present: []string{"servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"},
		},
		"prometheus with an operator that has no PrometheusRules": {
			overlay: "prometheus", present: []string{"servicemonitors.monitoring.coreos.com", "podmonitors.monitoring.coreos.com"},
			want: []string{"the cluster lacks the CRDs prometheusrules.monitoring.coreos.com, which"},
		},
		"prometheus-agent without the Prometheus Operator": {
			overlay: "prometheus-agent",
			want: []string{"OVERLAY=prometheus-agent: the cluster lacks the CRDs servicemonitors.monitoring.coreos.com, podmonitors.monitoring.coreos.com, prometheusrules.monitoring.coreos.com",
				"nothing was applied", "Prometheus Operator"},
		},
		"prometheus-agent with an operator too old for PodMonitors": {
			overlay: "prometheus-agent", present: []string{"servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"},
			want:    []string{"the cluster lacks the CRDs podmonitors.monitoring.coreos.com, which"},
			notWant: []string{"servicemonitors.monitoring.coreos.com,"},
		},
		"prometheus with the Prometheus Operator": {
			overlay: "prometheus", present: []string{"servicemonitors.monitoring.coreos.com", "podmonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"},
		},
		"prometheus-agent with the Prometheus Operator": {
			overlay: "prometheus-agent", present: []string{"servicemonitors.monitoring.coreos.com", "podmonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"},
		},
		"cert-manager without cert-manager": {
			overlay: "cert-manager",
			want: []string{"OVERLAY=cert-manager: the cluster lacks the CRDs certificates.cert-manager.io, issuers.cert-manager.io",
				"cert-manager (https://cert-manager.io/docs/installation/)", "make deploy OVERLAY=default"},
		},
		"cert-manager with cert-manager": {
			overlay: "cert-manager", present: []string{"certificates.cert-manager.io", "issuers.cert-manager.io"},
		},
		"no cluster is not taken for a missing CRD": {
			overlay: "prometheus", unreachable: true,
			want:    []string{"cannot check that the cluster has CRD servicemonitors.monitoring.coreos.com", "connection to the server 127.0.0.1:6443 was refused"},
			notWant: []string{"lacks"},
		},
		"default needs nothing": {overlay: "default", unreachable: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			kubectl, _ := fakeKubectl(t, tc.unreachable, tc.present...)
			out := t.TempDir()
			err := write(options{Config: filepath.Join(repoRoot, "config"), Overlay: tc.overlay, Out: out,
				Img: "pipeguard:v1", AgentImg: "agent:v1", PreflightKubectl: kubectl})
			_, statErr := os.Stat(filepath.Join(out, "kustomization.yaml"))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("preflight failed: %v", err)
				}
				if statErr != nil {
					t.Fatalf("kustomization.yaml was not written: %v", statErr)
				}
				return
			}
			if err == nil {
				t.Fatal("preflight passed")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nhas %q", err, w)
				}
			}
			if statErr == nil {
				t.Error("kustomization.yaml was written although the preflight failed")
			}
		})
	}
}

// TestPreflightOnlyWhenAsked: make render has no cluster to ask.
func TestPreflightOnlyWhenAsked(t *testing.T) {
	kubectl, calls := fakeKubectl(t, true)
	if err := write(options{Config: filepath.Join(repoRoot, "config"), Overlay: "prometheus", Out: t.TempDir(),
		Img: "pipeguard:v1", AgentImg: "agent:v1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(calls); err == nil {
		t.Errorf("kubectl %s was run without --preflight-kubectl", kubectl)
	}
}
