package testenv

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ScraperNamespace is the namespace of the Scrapers' ServiceAccounts.
const ScraperNamespace = "monitoring"

// Scrapers are the identities a test of a secured /metrics endpoint
// scrapes with: ServiceAccounts of ScraperNamespace, with tokens from
// TokenRequest, as Prometheus would hold.
type Scrapers struct {
	// Reader is the token of "prometheus", bound to the reader role.
	Reader string
	// Stranger is the token of "stranger", bound to no role.
	Stranger string
	// Revoked is the token of a ServiceAccount deleted since it was
	// issued.
	Revoked string
	// TokenFor issues another token of ServiceAccount sa.
	TokenFor func(sa string, audiences ...string) string
}

// Scrapers creates reader (a ClusterRole such as config/prometheus'
// pipeguard-metrics-reader), the ServiceAccounts of ScraperNamespace and
// their tokens.
func (e *Env) Scrapers(t testing.TB, reader *rbacv1.ClusterRole) Scrapers {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(cs.RbacV1().ClusterRoles().Create(ctx, reader, metav1.CreateOptions{}))
	must(cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ScraperNamespace}}, metav1.CreateOptions{}))
	s := Scrapers{TokenFor: func(sa string, audiences ...string) string {
		t.Helper()
		tr, err := cs.CoreV1().ServiceAccounts(ScraperNamespace).CreateToken(ctx, sa, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: audiences}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("TokenRequest for %s: %v", sa, err)
		}
		return tr.Status.Token
	}}
	token := func(sa string) string {
		t.Helper()
		must(cs.CoreV1().ServiceAccounts(ScraperNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}))
		return s.TokenFor(sa)
	}
	s.Reader, s.Stranger = token("prometheus"), token("stranger")
	must(cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: reader.Name + "-prometheus"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ScraperNamespace, Name: "prometheus"}},
	}, metav1.CreateOptions{}))
	s.Revoked = token("deleted")
	if err := cs.CoreV1().ServiceAccounts(ScraperNamespace).Delete(ctx, "deleted", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	return s
}

// Scrape GETs url with token as its bearer token ("" sends none) and
// returns the status, header and body.
func Scrape(t testing.TB, client *http.Client, url, token string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// CheckRefusals holds a secured /metrics endpoint at url to the answers
// both pipeguard-webhook and pipeguard-agent give: no token 401 saying
// what to send; a token the API server does not authenticate (forged,
// junk, another audience, a deleted ServiceAccount's) 401 with
// error="invalid_token"; a ServiceAccount without the reader role 403
// naming the user and the role. No refusal carries a metric.
func (s Scrapers) CheckRefusals(t *testing.T, client *http.Client, url string) {
	t.Run("no token: 401 that says what to send", func(t *testing.T) {
		code, header, body := Scrape(t, client, url, "")
		if code != http.StatusUnauthorized || strings.Contains(body, "pipeguard_") {
			t.Fatalf("status %d, body %.200q", code, body)
		}
		if !strings.Contains(body, "no bearer token") || !strings.Contains(body, "Authorization: Bearer <token>") {
			t.Errorf("the refusal does not say what to send: %q", body)
		}
		if h := header.Get("WWW-Authenticate"); !strings.HasPrefix(h, "Bearer") {
			t.Errorf("WWW-Authenticate %q", h)
		}
	})
	t.Run("a token the API server does not authenticate: 401, not 500", func(t *testing.T) {
		for name, tok := range map[string]string{
			"forged signature":            s.Reader[:len(s.Reader)-4] + "AAAA",
			"not a token":                 "not-a-token",
			"issued for another audience": s.TokenFor("prometheus", "https://elsewhere.example"),
			"its ServiceAccount deleted":  s.Revoked,
		} {
			t.Run(name, func(t *testing.T) {
				code, header, body := Scrape(t, client, url, tok)
				if code != http.StatusUnauthorized || strings.Contains(body, "pipeguard_") {
					t.Fatalf("status %d, body %.200q", code, body)
				}
				if !strings.Contains(body, "Unauthorized: the API server did not authenticate the bearer token") {
					t.Errorf("the refusal does not say why: %q", body)
				}
				if h := header.Get("WWW-Authenticate"); !strings.Contains(h, `error="invalid_token"`) {
					t.Errorf("WWW-Authenticate %q", h)
				}
			})
		}
	})
	t.Run("a valid ServiceAccount token without pipeguard-metrics-reader: 403", func(t *testing.T) {
		code, _, body := Scrape(t, client, url, s.Stranger)
		if code != http.StatusForbidden || strings.Contains(body, "pipeguard_") {
			t.Fatalf("status %d, body %.200q", code, body)
		}
		if !strings.Contains(body, `Forbidden: user "system:serviceaccount:`+ScraperNamespace+`:stranger" may not get /metrics`) ||
			!strings.Contains(body, "ClusterRole pipeguard-metrics-reader") {
			t.Errorf("the refusal does not name the user and the role to bind: %q", body)
		}
	})
}

// CountTokenReviews returns a copy of cfg whose HTTP transport counts the
// TokenReviews sent through it: what reaches the API server.
func CountTokenReviews(cfg *rest.Config) (*rest.Config, *atomic.Int64) {
	var n atomic.Int64
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/tokenreviews") {
				n.Add(1)
			}
			return rt.RoundTrip(r)
		})
	}
	return cfg, &n
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
