package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/internal/metricsauth"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// roleFromFile reads the ClusterRole name from a multi-document manifest
// of config/, so that the test grants exactly what is shipped.
func roleFromFile(t *testing.T, path, name string) *rbacv1.ClusterRole {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		var r rbacv1.ClusterRole
		if err := yaml.Unmarshal(doc, &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if r.Kind == "ClusterRole" && r.Name == name {
			return &r
		}
	}
	t.Fatalf("%s has no ClusterRole %s", path, name)
	return nil
}

// freeAddr returns a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// TestSecureMetricsOnControlPlane runs pipeguard-webhook with
// --metrics-secure against a real kube-apiserver, with the permissions of
// config/rbac/role.yaml. The scrapers are ServiceAccounts with tokens from
// TokenRequest, one bound to pipeguard-metrics-reader of config/prometheus,
// one not.
func TestSecureMetricsOnControlPlane(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	ctrllog.SetLogger(testr.New(t))
	env := testenv.Start(t, testenv.Options{
		Scheme:            s,
		CRDDirectoryPaths: []string{"../../../config/crd/bases"},
		Webhooks:          testenv.WebhookOptions{Paths: []string{"../../../config/webhook/manifests.yaml"}},
	})
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	bind := func(name, role string, subject rbacv1.Subject) {
		t.Helper()
		must(cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{subject},
		}, metav1.CreateOptions{}))
	}

	// The webhook: a user with the shipped ClusterRole pipeguard-webhook.
	role := roleFromFile(t, "../../../config/rbac/role.yaml", "pipeguard-webhook")
	must(cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}))
	bind("pipeguard-webhook", role.Name, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "pipeguard-webhook-test"})
	webhookUser, tokenReviews := testenv.CountTokenReviews(env.UserConfig(t, "pipeguard-webhook-test"))

	// The scrapers.
	scrapers := env.Scrapers(t, roleFromFile(t, "../../../config/prometheus/metrics_reader_role.yaml", "pipeguard-metrics-reader"))
	prometheus := scrapers.Reader

	addr := freeAddr(t)
	ws := env.WebhookServer()
	runCtx, cancel := context.WithCancel(ctx)
	// The default registry: the one the metrics server serves.
	a, err := New(runCtx, Options{
		Config: webhookUser, Logger: testr.New(t),
		WebhookHost: ws.Host, WebhookPort: ws.Port, CertDir: ws.CertDir,
		MetricsAddr: addr, MetricsSecure: true, ProbeAddr: "0",
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	url := "https://" + addr + "/metrics"
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the self-signed certificate of the metrics server
	}}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		resp, err := client.Get(url)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return true, nil
	}); err != nil {
		t.Fatalf("the metrics server never answered at %s: %v", url, err)
	}

	scrapers.CheckRefusals(t, client, url)
	t.Run("the same junk token 100 times: one TokenReview", func(t *testing.T) {
		before, began := tokenReviews.Load(), time.Now()
		for range 100 {
			if code, _, body := testenv.Scrape(t, client, url, "junk-scraped-in-a-loop"); code != http.StatusUnauthorized {
				t.Fatalf("status %d, body %.200q", code, body)
			}
		}
		// One more per refusal TTL elapsed, on a machine slow enough for it.
		if n, most := tokenReviews.Load()-before, 1+int64(time.Since(began)/metricsauth.DefaultRefusalTTL); n < 1 || n > most {
			t.Fatalf("%d TokenReviews for 100 scrapes of one junk token, want 1", n)
		}
	})
	t.Run("plain HTTP to the HTTPS endpoint gets no metrics", func(t *testing.T) {
		code, _, body := testenv.Scrape(t, &http.Client{Timeout: 30 * time.Second}, "http://"+addr+"/metrics", prometheus)
		if code == http.StatusOK || strings.Contains(body, "pipeguard_") {
			t.Fatalf("status %d, body %.200q", code, body)
		}
	})
	t.Run("a token bound to pipeguard-metrics-reader: 200 with pipeguard's metrics", func(t *testing.T) {
		code, _, body := testenv.Scrape(t, client, url, prometheus)
		if code != http.StatusOK {
			t.Fatalf("status %d, body %.300q", code, body)
		}
		for _, want := range []string{"# TYPE pipeguard_policies_invalid gauge", "\npipeguard_policies_invalid 0\n", "# TYPE pipeguard_policies_loaded gauge"} {
			if !strings.Contains(body, want) {
				t.Errorf("the metrics lack %q", want)
			}
		}
	})
}

// TestSecureMetricsReviewFailure: when the webhook may not create
// TokenReviews, a scrape is 503 with an internal error, not 401: the
// scraper's token is not at fault.
func TestSecureMetricsReviewFailure(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	noRights := env.UserConfig(t, "no-rights")
	filter, err := secureMetricsFilter(noRights, mustHTTPClient(t, noRights))
	if err != nil {
		t.Fatal(err)
	}
	h, err := filter(logr.Discard(), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("a scrape was let through without a review")
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{"not-a-token", "junk." + fmt.Sprint(time.Now().UnixNano())} {
		w := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		h.ServeHTTP(w, req)
		if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "internal error: the API server could not be asked to review the token") {
			t.Fatalf("status %d, body %.300q; want 503 with an internal error", w.Code, w.Body.String())
		}
	}
}

func mustHTTPClient(t *testing.T, cfg *rest.Config) *http.Client {
	t.Helper()
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
