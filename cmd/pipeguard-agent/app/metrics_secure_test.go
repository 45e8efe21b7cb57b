package app

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/internal/metricsauth"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// configDir is the kustomize tree, seen from this package.
const configDir = "../../../config"

// scrape GETs /metrics at addr with the bearer token (none when empty) and
// returns the status code and body.
func scrape(t *testing.T, client *http.Client, url, token string) (int, string) {
	t.Helper()
	code, _, body := testenv.Scrape(t, client, url, token)
	return code, body
}

// insecureClient trusts any certificate, as the PodMonitor does with the
// agent's self-signed one.
func insecureClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the self-signed certificate of the agent
	}}
}

// clusterRoleFromFile reads the ClusterRole name from a multi-document
// manifest of config/, so that the test grants exactly what is shipped.
func clusterRoleFromFile(t *testing.T, path, name string) *rbacv1.ClusterRole {
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

// TestSecureMetricsAgainstAPIServer serves the agent's metrics with
// --metrics-secure against a real kube-apiserver. The agent runs with the
// permissions of config/agent/rbac.yaml; the scrapers are ServiceAccounts
// with tokens from TokenRequest, one bound to pipeguard-metrics-reader of
// config/prometheus, one not. The TokenReviews the agent sends are counted
// at its HTTP transport.
func TestSecureMetricsAgainstAPIServer(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
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

	// The agent: a user with the shipped ClusterRole pipeguard-agent.
	agentRole := clusterRoleFromFile(t, filepath.Join(configDir, "agent", "rbac.yaml"), "pipeguard-agent")
	must(cs.RbacV1().ClusterRoles().Create(ctx, agentRole, metav1.CreateOptions{}))
	bind("pipeguard-agent", agentRole.Name, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "pipeguard-agent-test"})
	agentUser := env.UserConfig(t, "pipeguard-agent-test")
	agentConfig, tokenReviews := testenv.CountTokenReviews(agentUser)

	// The scrapers.
	scrapers := env.Scrapers(t, clusterRoleFromFile(t, filepath.Join(configDir, "prometheus", "metrics_reader_role.yaml"), "pipeguard-metrics-reader"))
	prometheus := scrapers.Reader
	const ns = testenv.ScraperNamespace
	// Another role that grants get on other non-resource URLs only.
	must(cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "healthz-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/healthz", "/metrics/*"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{}))
	bind("healthz-reader-stranger", "healthz-reader", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "stranger"})

	r := start(t, Options{MetricsBindAddress: "127.0.0.1:0", MetricsSecure: true, MetricsAuth: agentConfig})
	addr := r.agent.MetricsAddress()
	if addr == "" {
		t.Fatal("the agent serves no metrics")
	}
	url := "https://" + addr + "/metrics"
	client := insecureClient()

	scrapers.CheckRefusals(t, client, url)
	t.Run("the same junk token 100 times: one TokenReview", func(t *testing.T) {
		before, began := tokenReviews.Load(), time.Now()
		for range 100 {
			if code, body := scrape(t, client, url, "junk-scraped-in-a-loop"); code != http.StatusUnauthorized {
				t.Fatalf("status %d, body %.200q", code, body)
			}
		}
		// One more per refusal TTL elapsed, on a machine slow enough for it.
		if n, most := tokenReviews.Load()-before, 1+int64(time.Since(began)/metricsauth.DefaultRefusalTTL); n < 1 || n > most {
			t.Fatalf("%d TokenReviews for 100 scrapes of one junk token, want 1", n)
		}
	})
	t.Run("the same junk token 100 times at once: one TokenReview", func(t *testing.T) {
		before := tokenReviews.Load()
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				for range 10 {
					req, _ := http.NewRequest(http.MethodGet, url, nil)
					req.Header.Set("Authorization", "Bearer junk-scraped-at-once")
					resp, err := client.Do(req)
					if err != nil {
						t.Errorf("GET: %v", err)
						return
					}
					_ = resp.Body.Close()
					if resp.StatusCode != http.StatusUnauthorized {
						t.Errorf("status %d", resp.StatusCode)
					}
				}
			})
		}
		wg.Wait()
		if n := tokenReviews.Load() - before; n != 1 {
			t.Fatalf("%d TokenReviews for 100 concurrent scrapes of one junk token, want 1", n)
		}
	})
	t.Run("many distinct junk tokens: the memory keeps its bound, the log its pace", func(t *testing.T) {
		// The filter itself, on a small cache and an unthrottled client, so
		// that ten times its size is quick to send.
		const size = 8
		cfg, reviews := testenv.CountTokenReviews(agentUser)
		cfg.QPS = -1
		var mu sync.Mutex
		var lines []string
		log := funcr.New(func(_, args string) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, args)
		}, funcr.Options{Verbosity: 1})
		auth, err := metricsauth.New(cfg, log, metricsauth.Options{Component: "pipeguard-agent", CacheSize: size})
		if err != nil {
			t.Fatal(err)
		}
		h := auth.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { t.Error("a junk token was let through") }))
		send := func(tok string) {
			t.Helper()
			w := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			h.ServeHTTP(w, req)
			if w.Code != http.StatusUnauthorized {
				t.Fatalf("status %d, body %.200q", w.Code, w.Body.String())
			}
		}
		began := time.Now()
		for i := range 10 * size {
			send(fmt.Sprintf("distinct-junk-%d", i))
			if n := auth.Remembered(); n > size {
				t.Fatalf("after %d tokens the cache holds %d answers, more than its size %d", i+1, n, size)
			}
		}
		if n := reviews.Load(); n != 10*size {
			t.Fatalf("%d TokenReviews for %d distinct tokens", n, 10*size)
		}
		send(fmt.Sprintf("distinct-junk-%d", 10*size-1)) // remembered
		send("distinct-junk-0")                          // evicted: reviewed again
		if n := reviews.Load(); n != 10*size+1 {
			t.Fatalf("%d TokenReviews, want %d", n, 10*size+1)
		}
		// A burst of 5, then one per 10 seconds.
		mu.Lock()
		defer mu.Unlock()
		if most := 6 + int(time.Since(began)/(10*time.Second)); len(lines) > most {
			t.Fatalf("%d log lines for %d refusals, want at most %d", len(lines), 10*size+1, most)
		}
		if len(lines) == 0 || !strings.Contains(lines[0], "scrape refused: token not authenticated") {
			t.Fatalf("log: %q", lines)
		}
	})
	t.Run("plain HTTP to the HTTPS endpoint gets no metrics", func(t *testing.T) {
		code, body := scrape(t, &http.Client{Timeout: 30 * time.Second}, "http://"+addr+"/metrics", prometheus)
		if code == http.StatusOK || strings.Contains(body, "pipeguard_") {
			t.Fatalf("status %d, body %.200q", code, body)
		}
	})
	t.Run("a token bound to pipeguard-metrics-reader: 200 with the agent's metrics", func(t *testing.T) {
		// One request, so that the request metrics have a series.
		fs := fsv1.NewFilesystemClient(r.dial(t, "filesystem", "v1"))
		if _, err := fs.PathExists(ctx, &fsv1.PathExistsRequest{Path: filepath.Join(r.kubelet, "pods")}); err != nil {
			t.Fatalf("PathExists: %v", err)
		}
		before, began := tokenReviews.Load(), time.Now()
		code, body := scrape(t, client, url, prometheus)
		if code != http.StatusOK {
			t.Fatalf("status %d, body %.300q", code, body)
		}
		for _, want := range []string{"pipeguard_build_info{", `pipeguard_agent_requests_total{code="OK",group="filesystem",method="PathExists",version="v1"} 1`, "# TYPE pipeguard_agent_request_duration_seconds histogram"} {
			if !strings.Contains(body, want) {
				t.Errorf("the metrics lack %q", want)
			}
		}
		for range 20 {
			if code, _ := scrape(t, client, url, prometheus); code != http.StatusOK {
				t.Fatalf("status %d", code)
			}
		}
		if n, most := tokenReviews.Load()-before, 1+int64(time.Since(began)/metricsauth.DefaultAuthnTTL); n < 1 || n > most {
			t.Fatalf("%d TokenReviews for 21 scrapes of one valid token, want 1", n)
		}
	})
	t.Run("only /metrics is served", func(t *testing.T) {
		if code, _ := scrape(t, client, "https://"+addr+"/debug/pprof/", prometheus); code != http.StatusNotFound {
			t.Fatalf("status %d, want 404: only /metrics is served", code)
		}
	})
	t.Run("an agent the API server refuses reviews to: 503, not 401", func(t *testing.T) {
		// A real failure of the review itself: the API server answers 403
		// to the agent's TokenReview.
		// A subtest's temp dir is too long a path for unix sockets.
		sockets, err := os.MkdirTemp("", "pgm")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(sockets) })
		r := start(t, Options{SocketDir: sockets, MetricsBindAddress: "127.0.0.1:0", MetricsSecure: true, MetricsAuth: env.UserConfig(t, "no-rights")})
		code, body := scrape(t, client, "https://"+r.agent.MetricsAddress()+"/metrics", prometheus)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "internal error: the API server could not be asked to review the token") {
			t.Fatalf("status %d, body %.300q; want 503 with an internal error", code, body)
		}
	})
}

// TestSecureMetricsNeedTheAPIServer: secure metrics without a connection
// to the API server would have no way to check tokens; New refuses them.
func TestSecureMetricsNeedTheAPIServer(t *testing.T) {
	o := Options{Log: logr.Discard(), KubeletPath: t.TempDir(), MetricsBindAddress: "127.0.0.1:0", MetricsSecure: true}
	if _, err := New(o); err == nil || !strings.Contains(err.Error(), "secure metrics (MetricsSecure) need a connection to the API server (MetricsAuth)") {
		t.Fatalf("New: %v", err)
	}
	o.MetricsSecure, o.MetricsCertDir = false, t.TempDir()
	if _, err := New(o); err == nil || !strings.Contains(err.Error(), "MetricsCertDir is set but MetricsSecure is not") {
		t.Fatalf("New: %v", err)
	}
	o.MetricsBindAddress = "0" // disabled: nothing to check
	if _, err := New(o); err != nil {
		t.Fatalf("New with metrics off: %v", err)
	}
}

// TestPlainMetrics is the local mode: plain HTTP, no authentication.
func TestPlainMetrics(t *testing.T) {
	r := start(t, Options{MetricsBindAddress: "127.0.0.1:0"})
	code, body := scrape(t, &http.Client{Timeout: 30 * time.Second}, "http://"+r.agent.MetricsAddress()+"/metrics", "")
	if code != http.StatusOK || !strings.Contains(body, "pipeguard_build_info{") {
		t.Fatalf("status %d, body %.300q", code, body)
	}
}

// TestMetricsOff: "0" serves nothing.
func TestMetricsOff(t *testing.T) {
	r := start(t, Options{MetricsBindAddress: "0"})
	if addr := r.agent.MetricsAddress(); addr != "" {
		t.Fatalf("metrics served at %s", addr)
	}
}

// TestSecureMetricsCertDir serves the certificate of --metrics-cert-dir,
// which a client verifies with its CA; without a token it is still 401.
// The API server is never asked: a request without a token is refused
// before any review.
func TestSecureMetricsCertDir(t *testing.T) {
	dir := t.TempDir()
	pool := writeServingCert(t, dir)
	unreachable := &rest.Config{Host: "https://127.0.0.1:1"}
	r := start(t, Options{MetricsBindAddress: "127.0.0.1:0", MetricsSecure: true, MetricsAuth: unreachable, MetricsCertDir: dir})
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if code, body := scrape(t, client, "https://"+r.agent.MetricsAddress()+"/metrics", ""); code != http.StatusUnauthorized {
		t.Fatalf("status %d, body %.200q", code, body)
	}

	// A directory without the files: the endpoint is not served, the API is.
	r = start(t, Options{MetricsBindAddress: "127.0.0.1:0", MetricsSecure: true, MetricsAuth: unreachable, MetricsCertDir: t.TempDir()})
	if addr := r.agent.MetricsAddress(); addr != "" {
		t.Fatalf("metrics served at %s without a certificate", addr)
	}
}

// writeServingCert writes tls.crt and tls.key for 127.0.0.1 into dir and
// returns a pool with the CA that signed them.
func writeServingCert(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "metrics CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ = x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{metricsCertFile: {Type: "CERTIFICATE", Bytes: der}, metricsKeyFile: {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool
}
