package testenv_test

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// TestControlPlane proves that the binaries in KUBEBUILDER_ASSETS make a
// working control plane: the API server stores and serves objects, reports a
// release version, enforces RBAC, and kubectl talks to it.
func TestControlPlane(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "testenv-",
		Labels:       map[string]string{"pipeguard.io/test": "testenv"},
	}}
	t.Run("namespace round trip", func(t *testing.T) {
		if err := env.Client.Create(ctx, ns); err != nil {
			t.Fatalf("create namespace: %v", err)
		}
		var got corev1.Namespace
		if err := env.Client.Get(ctx, client.ObjectKey{Name: ns.Name}, &got); err != nil {
			t.Fatalf("get namespace %s: %v", ns.Name, err)
		}
		if got.UID != ns.UID || got.Labels["pipeguard.io/test"] != "testenv" {
			t.Errorf("read back %s uid %s labels %v, want uid %s and the test label", got.Name, got.UID, got.Labels, ns.UID)
		}
	})

	t.Run("server version", func(t *testing.T) {
		dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
		if err != nil {
			t.Fatal(err)
		}
		v, err := dc.ServerVersion()
		if err != nil {
			t.Fatal(err)
		}
		// A build without version stamping reports v0.0.0, which clients
		// take for an unsupported version skew.
		if v.Major != "1" || !strings.HasPrefix(v.GitVersion, "v1.") {
			t.Errorf("API server reports version %q (major %q), want a v1.x release", v.GitVersion, v.Major)
		}
		t.Logf("API server %s", v.GitVersion)
	})

	t.Run("rbac", func(t *testing.T) {
		c, err := client.New(env.UserConfig(t, "testenv-nobody"), client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "testenv-"}})
		if !apierrors.IsForbidden(err) {
			t.Errorf("a user without grants created a namespace: err = %v, want Forbidden", err)
		}
	})

	t.Run("kubectl", func(t *testing.T) {
		if ns.Name == "" {
			t.Skip("no namespace was created")
		}
		dir, err := testenv.AssetsDir()
		if err != nil {
			t.Fatal(err)
		}
		kubeconfig := env.KubeconfigFile(t)
		kubectl := func(args ...string) []byte {
			t.Helper()
			cmd := exec.CommandContext(ctx, filepath.Join(dir, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
			out, err := cmd.Output()
			if err != nil {
				var stderr []byte
				if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
					stderr = ee.Stderr
				}
				t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
			}
			return out
		}

		if got := strings.TrimSpace(string(kubectl("get", "namespace", ns.Name, "-o", "name"))); got != "namespace/"+ns.Name {
			t.Errorf("kubectl get namespace printed %q, want %q", got, "namespace/"+ns.Name)
		}

		var v struct {
			Client struct{ GitVersion string } `json:"clientVersion"`
			Server struct{ GitVersion string } `json:"serverVersion"`
		}
		if err := json.Unmarshal(kubectl("version", "-o", "json"), &v); err != nil {
			t.Fatal(err)
		}
		if v.Client.GitVersion != v.Server.GitVersion || !strings.HasPrefix(v.Client.GitVersion, "v1.") {
			t.Errorf("kubectl %q against API server %q, want the same v1.x release", v.Client.GitVersion, v.Server.GitVersion)
		}
	})
}
