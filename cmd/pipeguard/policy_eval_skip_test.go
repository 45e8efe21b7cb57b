package main

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/webhook"
)

const pipePod = `apiVersion: v1
kind: Pod
metadata: {name: sneaky, namespace: team-a}
spec:
  containers:
  - {name: shell, image: shell, volumeMounts: [{name: disk, mountPath: 'C:\disk'}]}
  volumes:
  - {name: disk, hostPath: {path: '\\.\pipe\csi-proxy-disk-v1'}}
`

var notReviewedLine = "    not reviewed: " + notReviewed + "\n"

// TestPolicyEvalSkip: an object admission does not review is SKIP with the
// reason, never ALLOW; a cluster-scoped object has no namespace; the
// summary counts every decision. Nothing skipped can hide a denial.
func TestPolicyEvalSkip(t *testing.T) {
	cases := map[string]struct {
		stdin      string
		wantCode   int
		wantStdout string
		wantStderr string // substring
	}{
		"kinds that are not reviewed, namespaced and cluster-scoped": {
			stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {pipe: '\\\\.\\pipe\\csi-proxy-disk-v1'}\n---\n" +
				"apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: smb.csi.k8s.io}\n---\n" +
				"apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: smb}\nprovisioner: smb.csi.k8s.io\n---\n" +
				"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: reader}\n---\n" +
				"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: team-b}\n",
			wantStdout: "SKIP ConfigMap default/settings\n" + notReviewedLine +
				"SKIP CSIDriver smb.csi.k8s.io\n" + notReviewedLine +
				"SKIP StorageClass smb\n" + notReviewedLine +
				"SKIP ClusterRole reader\n" + notReviewedLine +
				"SKIP Widget team-b/w\n" + notReviewedLine +
				"\nSummary: 0 denied, 0 warned, 0 allowed, 5 skipped\n",
		},
		"cluster-scoped objects that are reviewed or supply labels": {
			stdin: "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, namespace: ignored}\n---\n" +
				"apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv, namespace: ignored}\nspec: {hostPath: {path: 'C:\\data'}}\n",
			wantStdout: "SKIP Namespace team-a\n    not reviewed: a Namespace mounts no pipe; its labels apply to the objects evaluated in it\n" +
				"ALLOW PersistentVolume pv\n" +
				"\nSummary: 0 denied, 0 warned, 1 allowed, 1 skipped\n",
		},
		"a Kustomization": {
			stdin: "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [pod.yaml]\n",
			wantStdout: "SKIP Kustomization (<stdin>: document 1)\n" +
				"    not reviewed: a kustomize file, not an object the API server receives; evaluate what it builds with -k DIR\n" +
				"\nSummary: 0 denied, 0 warned, 0 allowed, 1 skipped\n",
		},
		"YAML that is no Kubernetes object": {
			stdin: "replicaCount: 2\nimage: {repository: driver}\n---\njust a string\n",
			wantStdout: "SKIP (<stdin>: document 1)\n    not a Kubernetes object: it has no apiVersion and kind\n" +
				"SKIP (<stdin>: document 2)\n    not a Kubernetes object: a YAML string, not a mapping with apiVersion and kind\n" +
				"\nSummary: 0 denied, 0 warned, 0 allowed, 2 skipped\n",
		},
		"a PipeAccessPolicy among the manifests": {
			stdin:    "apiVersion: pipeguard.io/v1alpha1\nkind: PipeAccessPolicy\nmetadata: {name: open}\nspec: {pipes: ['csi-proxy-*'], allow: {namespaces: [team-a]}}\n---\n" + pipePod,
			wantCode: 1,
			wantStdout: "SKIP PipeAccessPolicy open\n    not reviewed: a policy, not a workload; to evaluate with it, give it as a policy\n" +
				"DENY Pod team-a/sneaky\n",
		},
		// The skipped objects around it do not change the pod's decision
		// or the exit code.
		"a pipe pod among skipped objects, inside a List": {
			stdin:      "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n- " + strings.ReplaceAll(strings.TrimSuffix(pipePod, "\n"), "\n", "\n  ") + "\n- {apiVersion: kustomize.config.k8s.io/v1beta1, kind: Kustomization}\n",
			wantCode:   1,
			wantStdout: "SKIP ConfigMap default/c\n" + notReviewedLine + "DENY Pod team-a/sneaky\n",
		},
		// The kind is case-sensitive, as the API server reads it: "pod" is
		// no Pod it would create.
		"a lowercase kind": {
			stdin:      strings.Replace(pipePod, "kind: Pod", "kind: pod", 1),
			wantStdout: "SKIP pod team-a/sneaky\n" + notReviewedLine,
		},
		// Half an object is a mistake to fix, not something to skip.
		"apiVersion without kind": {
			stdin:      "apiVersion: v1\nmetadata: {name: a}\nspec: {volumes: [{name: v, hostPath: {path: '\\\\.\\pipe\\csi-proxy-disk-v1'}}]}\n",
			wantCode:   2,
			wantStderr: "pipeguard policy eval: <stdin>: document 1: not a Kubernetes object: apiVersion and kind are required\n",
		},
		"kind without apiVersion": {
			stdin:      strings.Replace(pipePod, "apiVersion: v1\n", "", 1),
			wantCode:   2,
			wantStderr: "not a Kubernetes object: apiVersion and kind are required",
		},
		"empty input": {
			stdin:      "# nothing\n",
			wantStdout: "\nSummary: 0 denied, 0 warned, 0 allowed, 0 skipped\n",
			wantStderr: "pipeguard policy eval: warning: the manifests hold no objects\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wantEval(t, tc.stdin, tc.wantCode, tc.wantStdout, tc.wantStderr)
		})
	}
}

// TestPolicyEvalStructured: -o json and -o yaml carry the same results; a
// skipped object has its reason, a cluster-scoped one no namespace.
func TestPolicyEvalStructured(t *testing.T) {
	var docs [2]evalOutput
	for i, format := range []string{"json", "yaml"} {
		code, out, errOut := runCLI(t, "", "policy", "eval", "-f", "testdata/mixed.yaml", "-o", format)
		if code != exitDenied {
			t.Fatalf("-o %s: exit %d: %s", format, code, errOut)
		}
		if format == "json" && !json.Valid([]byte(out)) {
			t.Fatalf("-o json is not JSON:\n%s", out)
		}
		if err := yaml.UnmarshalStrict([]byte(out), &docs[i]); err != nil {
			t.Fatalf("-o %s: %v\n%s", format, err, out)
		}
	}
	if want := (evalSummary{Denied: 2, Allowed: 1, Skipped: 2}); docs[0].Summary != want || docs[1].Summary != want {
		t.Errorf("summaries %+v (json) and %+v (yaml), want %+v", docs[0].Summary, docs[1].Summary, want)
	}
	byFormat := [2][]evalResult{docs[0].Results, docs[1].Results}
	res := byFormat[0]
	if len(res) != 5 || len(byFormat[1]) != 5 {
		t.Fatalf("%d and %d results, want 5", len(res), len(byFormat[1]))
	}
	for i := range res {
		if res[i].Decision != byFormat[1][i].Decision || res[i].Reason != byFormat[1][i].Reason {
			t.Errorf("result %d: json %+v, yaml %+v", i, res[i], byFormat[1][i])
		}
	}
	ns, cm, pv := res[0], res[4], res[3]
	if ns.Decision != "skip" || ns.Namespace != "" || !strings.HasPrefix(ns.Reason, "not reviewed: a Namespace") {
		t.Errorf("Namespace: %+v", ns)
	}
	if cm.Decision != "skip" || cm.Namespace != "storage" || cm.Reason != "not reviewed: "+notReviewed {
		t.Errorf("ConfigMap: %+v", cm)
	}
	if pv.Decision != "deny" || pv.Namespace != "" {
		t.Errorf("PersistentVolume: %+v", pv)
	}
}

// TestReviewedKinds: the kinds the skip reason names are the kinds
// admission reviews.
func TestReviewedKinds(t *testing.T) {
	for _, gk := range reviewedKinds {
		if !webhook.Supported(gk) {
			t.Errorf("%s is listed as reviewed but webhook.Supported says no", gk)
		}
		if !strings.Contains(notReviewed, " "+gk.Kind) {
			t.Errorf("the skip reason does not name %s", gk)
		}
	}
	for _, gk := range []schema.GroupKind{{Kind: "ConfigMap"}, {Kind: "Namespace"}, {Group: "extensions", Kind: "DaemonSet"}, {Group: "storage.k8s.io", Kind: "CSIDriver"}} {
		if webhook.Supported(gk) {
			t.Errorf("%s is reviewed: add it to reviewedKinds and the skip reason", gk)
		}
	}
}

// wantEval runs policy eval on stdin and checks the exit code, the start of
// standard output and a part of standard error.
func wantEval(t *testing.T, stdin string, wantCode int, wantStdout, wantStderr string) {
	t.Helper()
	code, out, errOut := runCLI(t, stdin, "policy", "eval", "-f", "-")
	if code != wantCode {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, wantCode, out, errOut)
	}
	if !strings.HasPrefix(out, wantStdout) {
		t.Errorf("stdout:\n%s\nwant it to start with:\n%s", out, wantStdout)
	}
	if !strings.Contains(errOut, wantStderr) {
		t.Errorf("stderr:\n%s\nwant it to contain:\n%s", errOut, wantStderr)
	}
}
