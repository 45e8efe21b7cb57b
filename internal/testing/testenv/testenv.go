//go:build !windows

package testenv

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// plane is the envtest environment behind an Env.
type plane = envtest.Environment

// Start starts kube-apiserver and etcd, installs the CRDs and webhook
// configurations of opts and returns the running control plane, which
// t.Cleanup stops. When the binaries are missing it skips the test, or fails
// it when the environment variable CI is true.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()

	dir, err := AssetsDir()
	if err != nil {
		unavailable(t, err)
	}

	scheme := opts.Scheme
	if scheme == nil {
		scheme = clientgoscheme.Scheme
	}
	startTimeout := opts.StartTimeout
	if startTimeout == 0 {
		startTimeout = DefaultStartTimeout
	}

	useExisting := false
	te := &envtest.Environment{
		// Always a private control plane: USE_EXISTING_CLUSTER must never
		// point tests that create and delete objects at a real cluster.
		UseExistingCluster:    &useExisting,
		BinaryAssetsDirectory: dir,
		Scheme:                scheme,
		CRDDirectoryPaths:     opts.CRDDirectoryPaths,
		CRDs:                  opts.CRDs,
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths:              opts.Webhooks.Paths,
			ValidatingWebhooks: opts.Webhooks.ValidatingWebhooks,
			MutatingWebhooks:   opts.Webhooks.MutatingWebhooks,
		},
		ControlPlaneStartTimeout: startTimeout,
		AttachControlPlaneOutput: opts.AttachOutput,
	}
	// Explicit paths, so that no other envtest lookup (TEST_ASSET_* variables,
	// /usr/local/kubebuilder) can substitute other binaries.
	te.ControlPlane.APIServer = &envtest.APIServer{Path: filepath.Join(dir, "kube-apiserver")}
	te.ControlPlane.Etcd = &envtest.Etcd{Path: filepath.Join(dir, "etcd")}
	te.ControlPlane.KubectlPath = filepath.Join(dir, "kubectl")
	for flag, values := range opts.APIServerArgs {
		te.ControlPlane.APIServer.Configure().Set(flag, values...)
	}

	started := time.Now()
	cfg, err := te.Start()
	if err != nil {
		// Stop whatever did start; the error that matters is Start's.
		_ = te.Stop()
		t.Fatalf("starting the control plane from %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := te.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	t.Logf("control plane from %s up in %s at %s", dir, time.Since(started).Round(time.Millisecond), cfg.Host)

	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("creating a client: %v", err)
	}
	return &Env{Config: cfg, Client: c, plane: te}
}

// WebhookServer reports where the API server calls the webhooks of
// Options.Webhooks; serve them there with the certificate in CertDir.
func (e *Env) WebhookServer() WebhookServer {
	w := e.plane.WebhookInstallOptions
	return WebhookServer{Host: w.LocalServingHost, Port: w.LocalServingPort, CertDir: w.LocalServingCertDir}
}

// UserConfig returns a config that authenticates as the named user in the
// given groups. The API server authorizes with RBAC, so the user may do only
// what RoleBindings and ClusterRoleBindings grant it.
func (e *Env) UserConfig(t testing.TB, name string, groups ...string) *rest.Config {
	t.Helper()
	u, err := e.plane.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		t.Fatalf("adding user %q: %v", name, err)
	}
	return u.Config()
}

// KubeconfigFile writes a kubeconfig for the cluster administrator into a
// directory of t's and returns its path, for running kubectl or a
// command against the control plane.
func (e *Env) KubeconfigFile(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, e.plane.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
