package app_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/cmd/pipeguard-webhook/app"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// TestCommandOnControlPlane: pipeguard-webhook's command, started with
// the flags a local run passes, decides the API server's reviews, and
// exits 0 once its context ends.
func TestCommandOnControlPlane(t *testing.T) {
	s := scheme(t)
	env := testenv.Start(t, testenv.Options{
		Scheme:            s,
		CRDDirectoryPaths: []string{"../../../config/crd/bases"},
		Webhooks:          testenv.WebhookOptions{Paths: []string{"../../../config/webhook/manifests.yaml"}},
	})
	ws := env.WebhookServer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exited := make(chan int, 1)
	go func() {
		exited <- app.NewCommand(ctx).Execute([]string{
			"--kubeconfig", env.KubeconfigFile(t),
			"--webhook-host", ws.Host, "--webhook-port", strconv.Itoa(ws.Port), "--webhook-cert-path", ws.CertDir,
			"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--drain-delay", "0s",
		})
	}()

	c, err := client.New(env.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}); err != nil {
		t.Fatal(err)
	}
	errExited := errors.New("the command exited")
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case code := <-exited:
			exited <- code
			return false, errExited
		default:
		}
		err := c.Create(ctx, pipePod("probe", "team-a"), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "protected-pipe-mount"), nil
	}); err != nil {
		if errors.Is(err, errExited) {
			t.Fatalf("the command exited with %d before it served", <-exited)
		}
		t.Fatalf("the API server never got a decision from the command's webhook: %v", err)
	}
	cancel()
	select {
	case code := <-exited:
		if code != 0 {
			t.Errorf("exit code %d once its context ended, want 0", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("the command did not exit within a minute of its context's end")
	}
}
