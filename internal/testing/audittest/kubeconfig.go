// Package audittest holds what the tests of the audit log's packages
// share.
package audittest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// WebhookKubeconfig writes a kubeconfig whose current context sends the
// webhook backend's EventLists to url + "/audit", and returns its path.
func WebhookKubeconfig(t testing.TB, url string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "webhook.kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: receiver
  cluster: {server: %q}
users:
- name: agent
  user: {}
contexts:
- name: audit
  context: {cluster: receiver, user: agent}
current-context: audit
`, url+"/audit")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
