package testenv

import (
	"errors"
	"testing"

	"k8s.io/client-go/rest"
)

// plane stands in for the envtest environment, which does not build for
// Windows (controller-runtime v0.25.2), so that integration tests compile
// there and skip at run time.
type plane struct{}

// Start cannot start a control plane on Windows: it skips the test, or fails
// it when the environment variable CI is true.
func Start(t testing.TB, _ Options) *Env {
	t.Helper()
	unavailable(t, errors.New("the control plane runs only on Linux and other Unix systems"))
	return nil
}

// WebhookServer is never reached on Windows, where Start returns no Env.
func (e *Env) WebhookServer() WebhookServer { return WebhookServer{} }

// UserConfig is never reached on Windows, where Start returns no Env.
func (e *Env) UserConfig(t testing.TB, _ string, _ ...string) *rest.Config {
	t.Helper()
	t.Fatal("testenv: no control plane on Windows")
	return nil
}

// KubeconfigFile is never reached on Windows, where Start returns no Env.
func (e *Env) KubeconfigFile(testing.TB) string { return "" }
