package testenv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AssetsEnv names the environment variable that holds the directory with the
// kube-apiserver, etcd and kubectl binaries.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// DefaultStartTimeout bounds the start of each control plane component when
// Options.StartTimeout is zero. It is generous because the API server starts
// more slowly on a loaded machine.
const DefaultStartTimeout = time.Minute

// Options configures the control plane started by [Start].
type Options struct {
	// CRDDirectoryPaths lists directories or files with CustomResourceDefinition
	// manifests to install. A path that does not exist fails the test.
	CRDDirectoryPaths []string

	// CRDs are CustomResourceDefinitions to install in addition to those read
	// from CRDDirectoryPaths.
	CRDs []*apiextensionsv1.CustomResourceDefinition

	// Webhooks are admission webhook configurations to install.
	Webhooks WebhookOptions

	// Scheme knows the types of Env.Client and decides which CRDs get
	// conversion webhooks. Nil means client-go's scheme (built-in types only).
	Scheme *k8sruntime.Scheme

	// APIServerArgs sets extra kube-apiserver flags, for example
	// {"enable-admission-plugins": {"NamespaceLifecycle"}}. Each entry
	// replaces the flag's default.
	APIServerArgs map[string][]string

	// StartTimeout bounds the start of each component; zero means
	// DefaultStartTimeout.
	StartTimeout time.Duration

	// AttachOutput copies the output of kube-apiserver and etcd to the test
	// process's stdout and stderr (KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT=true
	// does the same).
	AttachOutput bool
}

// WebhookOptions lists admission webhook configurations to install. Before
// installing them, the client config of every webhook is rewritten to call
// https://<host>:<port><path> on the local serving address that
// [Env.WebhookServer] reports, trusting its generated certificate; the
// service or URL in the manifests supplies only the path.
type WebhookOptions struct {
	// Paths lists directories or files with webhook configuration manifests.
	// A path that does not exist fails the test.
	Paths []string

	// ValidatingWebhooks are installed in addition to those read from Paths.
	ValidatingWebhooks []*admissionregistrationv1.ValidatingWebhookConfiguration

	// MutatingWebhooks are installed in addition to those read from Paths.
	MutatingWebhooks []*admissionregistrationv1.MutatingWebhookConfiguration
}

// WebhookServer is where the API server calls the installed webhooks.
type WebhookServer struct {
	Host string
	Port int
	// CertDir holds tls.crt and tls.key, a certificate for Host that the API
	// server trusts.
	CertDir string
}

// Env is a running control plane.
type Env struct {
	// Config reaches the API server as a cluster administrator.
	Config *rest.Config

	// Client is a controller-runtime client for Config that knows the types
	// of Options.Scheme.
	Client client.Client

	plane *plane
}

// AssetsDir returns the directory named by KUBEBUILDER_ASSETS, or an error
// saying why it cannot serve as the control plane's binaries.
func AssetsDir() (string, error) {
	dir := os.Getenv(AssetsEnv)
	if dir == "" {
		return "", fmt.Errorf("%s is not set", AssetsEnv)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", AssetsEnv, err)
	}
	for _, name := range [...]string{"kube-apiserver", "etcd", "kubectl"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("%s=%s has no %s", AssetsEnv, dir, name)
		case err != nil:
			return "", fmt.Errorf("%s: %w", AssetsEnv, err)
		case fi.IsDir() || (runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0):
			return "", fmt.Errorf("%s=%s: %s is not an executable file", AssetsEnv, dir, name)
		}
	}
	return dir, nil
}

// RequireAssets returns AssetsDir, or ends the test as Start does without a
// control plane: a skip that says how to get one, a failure when CI is true.
// It serves tests that run the control plane's binaries themselves.
func RequireAssets(t testing.TB) string {
	t.Helper()
	dir, err := AssetsDir()
	if err != nil {
		unavailable(t, err)
	}
	return dir
}

// unavailable ends a test that cannot get a control plane: a skip that says
// how to get one, or a failure when the environment variable CI is true, so
// that a pipeline cannot pass by skipping its integration tests.
func unavailable(t testing.TB, reason error) {
	t.Helper()
	msg := fmt.Sprintf("no control plane for this integration test: %v\n"+
		"build kube-apiserver, etcd and kubectl (make control-plane) and point %s at them;\n"+
		"hack/control-plane.sh builds them once and prints their directory:\n"+
		"\texport %s=\"$(hack/control-plane.sh)\"",
		reason, AssetsEnv, AssetsEnv)
	if inCI() {
		t.Fatal(msg + "\nCI is true: integration tests must run, never skip")
	}
	t.Skip(msg)
}

// inCI reports whether the environment variable CI holds a true value
// ("true", "1", ...), as continuous integration systems set it.
func inCI() bool {
	ci, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && ci
}
