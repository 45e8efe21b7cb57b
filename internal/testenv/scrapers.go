package testenv

import (
	"context"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
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
