package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/internal/testing/samplepods"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// TestPolicyEvalCluster runs `pipeguard policy eval --cluster` against a
// real API server: the pipe pod in a namespace without the allowance is
// DENY with admission's words (exit 1), the same pod in a labelled
// namespace and a plain pod are ALLOW; labelling the namespace clears it.
func TestPolicyEvalCluster(t *testing.T) {
	env := startClusterWithCRD(t)
	ctx := context.Background()
	kubeconfig := env.KubeconfigFile(t)
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "csi", Labels: map[string]string{"pipeguard.io/allow-csi-proxy": "true"}}},
	} {
		if err := env.Client.Create(ctx, ns); err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatal(err)
		}
	}
	pipePod := func(ns string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "node-plugin"}, Spec: corev1.PodSpec{
			Volumes:    []corev1.Volume{{Name: "disk", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: `\\.\pipe\csi-proxy-disk-v1`}}}},
			Containers: []corev1.Container{{Name: "driver", Image: "driver", VolumeMounts: []corev1.VolumeMount{{Name: "disk", MountPath: `\\.\pipe\csi-proxy-disk-v1`}}}},
		}}
	}
	bad, allowed := pipePod("team-a"), pipePod("csi")
	plain := samplepods.Plain()
	plain.Namespace, plain.Name = "team-a", "web"
	for _, p := range []*corev1.Pod{bad, allowed, plain} {
		p.TypeMeta = metav1.TypeMeta{}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatalf("creating pod %s/%s: %v", p.Namespace, p.Name, err)
		}
	}
	run := func() (string, int) {
		var out, errb bytes.Buffer
		code := run([]string{"policy", "eval", "--cluster", "--kubeconfig", kubeconfig}, strings.NewReader(""), &out, &errb)
		return out.String() + errb.String(), code
	}
	out, code := run()
	if code != exitDenied {
		t.Fatalf("exit %d, want %d\n%s", code, exitDenied, out)
	}
	for _, want := range []string{"DENY Pod team-a/node-plugin", "ALLOW Pod csi/node-plugin", "ALLOW Pod team-a/web", `\\.\pipe\csi-proxy-disk-v1`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	ns := &corev1.Namespace{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "team-a"}, ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels = map[string]string{"pipeguard.io/allow-csi-proxy": "true"}
	if err := env.Client.Update(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if out, code := run(); code != exitOK || !strings.Contains(out, "ALLOW Pod team-a/node-plugin") {
		t.Fatalf("after labelling team-a: exit %d\n%s", code, out)
	}
}

// startClusterWithCRD starts a real API server with the PipeAccessPolicy
// CRD installed and a client that knows the built-in kinds and
// pipeguard's.
func startClusterWithCRD(t *testing.T) *testenv.Env {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return testenv.Start(t, testenv.Options{Scheme: scheme, CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}})
}
