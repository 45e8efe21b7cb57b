package app

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// apiServerClientCert writes what kube-apiserver needs to present cert
// to the webhooks it calls: a kubeconfig with the certificate for every
// webhook ("*"), and the admission configuration that names it. It
// returns the admission configuration's path.
func apiServerClientCert(t *testing.T, cert tls.Certificate) string {
	t.Helper()
	dir := t.TempDir()
	keyDER, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"client.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}),
		"client.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		"webhook-kubeconfig.yaml": fmt.Appendf(nil, `apiVersion: v1
kind: Config
users:
- name: "*"
  user:
    client-certificate: %s
    client-key: %s
`, filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")),
		"admission.yaml": fmt.Appendf(nil, `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %s
`, filepath.Join(dir, "webhook-kubeconfig.yaml")),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "admission.yaml")
}

// TestClientCAOnControlPlane: pipeguard-webhook with --client-ca-file
// answers the real kube-apiserver, configured (--admission-control-config-file)
// to present a client certificate of that CA, and decides as always, the
// bounds included; a client without a certificate, or with one of another
// CA, reaches the same port and gets no answer.
func TestClientCAOnControlPlane(t *testing.T) {
	clientCA, otherCA := newTestCA(t, "webhook client CA"), newTestCA(t, "another CA")
	caFile := filepath.Join(t.TempDir(), "client-ca.crt")
	if err := os.WriteFile(caFile, clientCA.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	env := testenv.Start(t, testenv.Options{
		Scheme:            s,
		CRDDirectoryPaths: []string{"../../../config/crd/bases"},
		Webhooks:          testenv.WebhookOptions{Paths: []string{"../../../config/webhook/manifests.yaml"}},
		APIServerArgs: map[string][]string{
			"admission-control-config-file": {apiServerClientCert(t, clientCA.issue(t, "kube-apiserver", false))},
		},
	})
	ws := env.WebhookServer()
	_, ctx := RunForTest(t, Options{
		Config: env.Config, Logger: testr.New(t),
		WebhookHost: ws.Host, WebhookPort: ws.Port, CertDir: ws.CertDir, ClientCAFile: caFile,
		MetricsAddr: "0", ProbeAddr: "0", Registry: prometheus.NewRegistry(),
	})
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}); err != nil {
		t.Fatal(err)
	}
	pod := func(volumes int) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "driver", Namespace: "team-a"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "driver", Image: "driver"}}}}
		for i := range volumes {
			name := "pipe-" + strconv.Itoa(i)
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: name,
				VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: `\\.\pipe\csi-proxy-disk-v1`}}})
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: name, MountPath: `C:\` + name})
		}
		return p
	}
	// The API server gets the webhook's decisions once it serves.
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = env.Client.Create(ctx, pod(1), client.DryRunAll)
		return last != nil && strings.Contains(last.Error(), "[protected-pipe-mount]"), nil
	}); err != nil {
		t.Fatalf("the API server, with its client certificate, never got a decision: %v (last: %v)", err, last)
	}
	err := env.Client.Create(ctx, pod(257), client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), `[too-many-host-paths] Pod "driver" has 257 hostPath volumes, more than the 256 pipeguard reviews`) {
		t.Errorf("a pod with 257 hostPath volumes: %v, want the too-many-host-paths denial", err)
	}

	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(ws.CertDir, "tls.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(caPEM)
	forged := otherCA.issue(t, "kube-apiserver", false)
	for name, certs := range map[string][]tls.Certificate{"no certificate": nil, "a certificate of another CA": {forged}} {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs}}}
		resp, err := c.Post(fmt.Sprintf("https://%s:%d%s?timeout=5s", ws.Host, ws.Port, Path), "application/json", strings.NewReader(`{}`))
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: HTTP %d from the webhook, want no answer", name, resp.StatusCode)
		}
	}
}
