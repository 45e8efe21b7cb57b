package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// TestCommandOnControlPlane: pipeguard-webhook, run as its own process
// with the flags a local run passes, decides the API server's reviews,
// and exits 0 on SIGTERM. In a process of its own, the loggers it sets
// for the process (controller-runtime's, klog's) are its own.
func TestCommandOnControlPlane(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	env := testenv.Start(t, testenv.Options{
		Scheme:            s,
		CRDDirectoryPaths: []string{"../../config/crd/bases"},
		Webhooks:          testenv.WebhookOptions{Paths: []string{"../../config/webhook/manifests.yaml"}},
	})
	ws := env.WebhookServer()
	cmd := exec.Command(os.Args[0],
		"--kubeconfig", env.KubeconfigFile(t),
		"--webhook-host", ws.Host, "--webhook-port", strconv.Itoa(ws.Port), "--webhook-cert-path", ws.CertDir,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--drain-delay", "0s")
	cmd.Env = append(os.Environ(), asWebhookEnv+"=1")
	logFile, err := os.Create(t.TempDir() + "/webhook.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	logs := func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})

	ctx := context.Background()
	c, err := client.New(env.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}); err != nil {
		t.Fatal(err)
	}
	errExited := errors.New("the command exited")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "team-a"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "driver", Image: "driver",
				VolumeMounts: []corev1.VolumeMount{{Name: "pipe", MountPath: `\\.\pipe\csi-proxy-disk-v1`}}}},
			Volumes: []corev1.Volume{{Name: "pipe", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: `\\.\pipe\csi-proxy-disk-v1`}}}},
		},
	}
	// A poll under a deadline: the process starts its servers meanwhile.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-exited:
			exited <- err
			return false, errExited
		default:
		}
		err := c.Create(ctx, pod.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "protected-pipe-mount"), nil
	}); err != nil {
		if errors.Is(err, errExited) {
			err := <-exited
			exited <- err // for the cleanup, which waits for the exit
			t.Fatalf("the command exited (%v) before it served:\n%s", err, logs())
		}
		t.Fatalf("the API server never got a decision from the command's webhook: %v\n%s", err, logs())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Errorf("on SIGTERM: %v, want exit code 0\n%s", err, logs())
		}
	case <-time.After(time.Minute):
		t.Fatalf("the command did not exit within a minute of SIGTERM\n%s", logs())
	}
}
