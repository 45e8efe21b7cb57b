package main

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestPolicyEvalClusterFlags runs policy eval --cluster with kubectl's
// flags against a real API server: -n shows one namespace's objects and no
// PersistentVolume, -A (or no -n) everything; --context, --as and
// --kubeconfig-cluster choose what kubectl's flags choose.
func TestPolicyEvalClusterFlags(t *testing.T) {
	env := startClusterWithCRD(t)
	ctx := context.Background()
	kubeconfig := env.KubeconfigFile(t)
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "csi", Labels: map[string]string{"pipeguard.io/allow-csi-proxy": "true"}}},
		clusterPipePod("team-a"), clusterPipePod("csi"),
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pipe-pv"}, Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: `\\.\pipe\csi-proxy-disk-v1`}},
		}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}

	// A kubeconfig whose current context points nowhere, beside the good one.
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	good := cfg.CurrentContext
	cfg.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.Contexts["broken"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: cfg.Contexts[good].AuthInfo}
	cfg.CurrentContext = "broken"
	twoContexts := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, twoContexts); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	writeFile(t, empty, "")

	const (
		denyA   = "DENY Pod team-a/node-plugin\n"
		allowC  = "ALLOW Pod csi/node-plugin\n"
		denyPV  = "DENY PersistentVolume pipe-pv\n"
		pvWords = `    [protected-pipe-pv] PersistentVolume "pipe-pv" points at \\.\pipe\csi-proxy-disk-v1 (hostPath)`
	)
	for name, tc := range map[string]cliCase{
		"-n csi: that namespace only, no PersistentVolume": {
			args: []string{"-n", "csi"}, wantCode: 0,
			wantStdout: allowC + "\nSummary: 0 denied, 0 warned, 1 allowed, 0 skipped\n",
		},
		"--namespace team-a": {
			args: []string{"--namespace", "team-a"}, wantCode: 1,
			stdoutHas: []string{denyA, "\nSummary: 1 denied, 0 warned, 0 allowed, 0 skipped\n"}, stdoutHasNot: []string{"csi/", "PersistentVolume"},
		},
		"-A: every namespace and the PersistentVolumes": {
			args: []string{"-A"}, wantCode: 1,
			stdoutHas: []string{denyA, allowC, denyPV + pvWords, "\nSummary: 2 denied, 0 warned, 1 allowed, 0 skipped\n"},
		},
		"no -n: the same": {
			args: nil, wantCode: 1,
			stdoutHas: []string{denyA, allowC, denyPV, "\nSummary: 2 denied, 0 warned, 1 allowed, 0 skipped\n"},
		},
		"-n and -o json": {
			args: []string{"-n", "csi", "-o", "json"}, wantCode: 0,
			stdoutHas: []string{`"decision": "allow"`, `"source": "cluster"`, "\"summary\": {\n    \"denied\": 0,\n    \"warned\": 0,\n    \"allowed\": 1,\n    \"skipped\": 0\n  }"},
		},
		"--as a user without rights": {
			args: []string{"--as", "nobody"}, wantCode: 2,
			stderrHas: []string{`is forbidden: User "nobody" cannot list resource`},
		},
		"--as a user in system:masters": {
			args: []string{"--as", "admin2", "--as-group", "system:masters", "-n", "csi"}, wantCode: 0,
			wantStdout: allowC + "\nSummary: 0 denied, 0 warned, 1 allowed, 0 skipped\n",
		},
		"--kubeconfig-cluster picks another cluster of the kubeconfig": {
			args: []string{"--kubeconfig", twoContexts, "--context", good, "--kubeconfig-cluster", "nowhere"}, wantCode: 2,
			stderrHas: []string{"127.0.0.1:1"},
		},
		"a current context that points nowhere": {
			args: []string{"--kubeconfig", twoContexts}, wantCode: 2,
			stderrHas: []string{"127.0.0.1:1"},
		},
		"--context picks the good one": {
			args: []string{"--kubeconfig", twoContexts, "--context", good, "-n", "csi"}, wantCode: 0,
			wantStdout: allowC + "\nSummary: 0 denied, 0 warned, 1 allowed, 0 skipped\n",
		},
		"--context that does not exist": {
			args: []string{"--kubeconfig", twoContexts, "--context", "nope"}, wantCode: 2,
			stderrHas: []string{`pipeguard policy eval: reading the kubeconfig: context "nope" does not exist`},
		},
		"a kubeconfig that names no cluster": {
			args: []string{"--kubeconfig", empty}, wantCode: 2,
			stderrHas: []string{"pipeguard policy eval: no cluster to read: set --kubeconfig, $KUBECONFIG, or run in a pod with a service account (in-cluster configuration); " + empty + " names no cluster\n"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"policy", "eval", "--cluster"}, tc.args...)
			if !slices.Contains(tc.args, "--kubeconfig") {
				args = append(args, "--kubeconfig", kubeconfig)
			}
			tc.args = args
			tc.check(t)
		})
	}
}

// clusterPipePod is a pod of namespace ns that mounts a CSI Proxy pipe
// from a container that is not privileged.
func clusterPipePod(ns string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "node-plugin"}, Spec: corev1.PodSpec{
		Volumes:    []corev1.Volume{{Name: "disk", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: `\\.\pipe\csi-proxy-disk-v1`}}}},
		Containers: []corev1.Container{{Name: "driver", Image: "driver", VolumeMounts: []corev1.VolumeMount{{Name: "disk", MountPath: `\\.\pipe\csi-proxy-disk-v1`}}}},
	}}
}
