package identity_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/pipeguard/pipeguard/agent/identity"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// countingReviewer records the tokens sent to the real API server, in
// order.
type countingReviewer struct {
	identity.TokenReviewer
	mu   sync.Mutex
	sent []string
}

func (r *countingReviewer) Create(ctx context.Context, tr *authnv1.TokenReview, o metav1.CreateOptions) (*authnv1.TokenReview, error) {
	r.mu.Lock()
	r.sent = append(r.sent, tr.Spec.Token)
	r.mu.Unlock()
	return r.TokenReviewer.Create(ctx, tr, o)
}

func (r *countingReviewer) tokens() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.sent...)
}

// TestTokenBudgetAgainstAPIServer: a hostile caller sends 200 distinct
// junk tokens at once while a driver's real token is verified. The junk
// costs the real API server at most the hostile caller's burst of
// TokenReviews, the rest is refused locally, the driver's token is
// reviewed and accepted, resending it costs nothing, and the verifier's
// client has its own budget.
func TestTokenBudgetAgainstAPIServer(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	rc := identity.TokenReviewConfig(env.Config)
	if rc == env.Config || rc.QPS != identity.TokenReviewQPS || rc.Burst != identity.TokenReviewBurst {
		t.Fatalf("review client QPS %v burst %d: want its own %v/%d", rc.QPS, rc.Burst, identity.TokenReviewQPS, identity.TokenReviewBurst)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	const ns, sa, node = "csi", "csi-node", "node-a"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "csi-driver"},
		Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: sa, Containers: []corev1.Container{{Name: "driver", Image: "registry.k8s.io/pause:3.10"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		Audiences: []string{identity.DefaultTokenAudience}, BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	real := tr.Status.Token
	rev := &countingReviewer{TokenReviewer: cs.AuthenticationV1().TokenReviews()}
	// The clock stands still: no budget refills during the test.
	v, err := identity.NewTokenVerifier(identity.TokenOptions{Reviewer: rev, Audience: identity.DefaultTokenAudience, NodeName: node,
		Clock: clocktesting.NewFakeClock(time.Now())})
	if err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	throttled, rejected := 0, 0
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hostile := &identity.Caller{PID: 1000 + i, PodMapped: true, PodUID: "uid-hostile", UID: 0}
			err := v.Apply(ctx, hostile, fmt.Sprintf("junk.%d.token", i), nil)
			mu.Lock()
			defer mu.Unlock()
			var thr *identity.Throttled
			var rej *identity.Rejection
			switch {
			case errors.As(err, &thr) && strings.HasPrefix(thr.Msg, "pod uid uid-hostile sent more new ServiceAccount tokens than the agent reviews for one caller (5 at once, then 1 a second)"):
				throttled++
			case errors.As(err, &rej) && strings.HasPrefix(rej.Msg, "the API server rejected the ServiceAccount token ("):
				rejected++
			default:
				t.Errorf("junk token %d: %v", i, err)
			}
		}()
	}
	driver := &identity.Caller{PID: 42, PodMapped: true, PodUID: string(pod.UID), UID: 0}
	if err := v.Apply(ctx, driver, real, nil); err != nil {
		t.Fatalf("the driver's token: %v", err)
	}
	wg.Wait()
	if throttled != 200-identity.TokenReviewsPerCallerBurst || rejected != identity.TokenReviewsPerCallerBurst {
		t.Fatalf("%d junk tokens refused locally, %d reviewed; want %d and %d", throttled, rejected, 200-identity.TokenReviewsPerCallerBurst, identity.TokenReviewsPerCallerBurst)
	}
	// Once more, the same token: answered from the cache.
	again := &identity.Caller{PID: 43, PodMapped: true, PodUID: string(pod.UID), UID: 0}
	if err := v.Apply(ctx, again, real, nil); err != nil || again.TokenUser != "system:serviceaccount:csi:csi-node" {
		t.Fatalf("the driver's token again: %v (%+v)", err, again)
	}
	sent := rev.tokens()
	realN := 0
	for _, tok := range sent {
		if tok == real {
			realN++
		}
	}
	if len(sent) != identity.TokenReviewsPerCallerBurst+1 || realN != 1 {
		t.Fatalf("%d TokenReviews (%d of the driver's token), want %d junk and 1 driver's", len(sent), realN, identity.TokenReviewsPerCallerBurst)
	}
}
