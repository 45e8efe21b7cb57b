package identity

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// apiServer answers TokenReviews as the API server does for the tokens it
// knows, through client-go's fake clientset.
func apiServer(t *testing.T, reviews *atomic.Int32, pods ...runtime.Object) *fake.Clientset {
	t.Helper()
	cs := fake.NewClientset(pods...)
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		reviews.Add(1)
		tr := a.(k8stesting.CreateAction).GetObject().(*authnv1.TokenReview)
		out := tr.DeepCopy()
		extra := func(pod, uid, node string) map[string]authnv1.ExtraValue {
			m := map[string]authnv1.ExtraValue{extraPodName: {pod}, extraPodUID: {uid}}
			if node != "" {
				m[extraNodeName] = authnv1.ExtraValue{node}
			}
			return m
		}
		switch tr.Spec.Token {
		case "driver-token":
			out.Status = authnv1.TokenReviewStatus{Authenticated: true, Audiences: tr.Spec.Audiences,
				User: authnv1.UserInfo{Username: "system:serviceaccount:csi:csi-node", Extra: extra("csi-node-x", podUID, "node-1")}}
		case "other-node-token":
			out.Status = authnv1.TokenReviewStatus{Authenticated: true, Audiences: tr.Spec.Audiences,
				User: authnv1.UserInfo{Username: "system:serviceaccount:csi:csi-node", Extra: extra("csi-node-y", podUID, "node-2")}}
		case "no-node-token":
			out.Status = authnv1.TokenReviewStatus{Authenticated: true, Audiences: tr.Spec.Audiences,
				User: authnv1.UserInfo{Username: "system:serviceaccount:csi:csi-node", Extra: extra("csi-node-x", podUID, "")}}
		case "legacy-token":
			out.Status = authnv1.TokenReviewStatus{Authenticated: true, Audiences: tr.Spec.Audiences,
				User: authnv1.UserInfo{Username: "system:serviceaccount:csi:csi-node"}}
		case "wrong-audience":
			out.Status = authnv1.TokenReviewStatus{Authenticated: true, Audiences: []string{"https://kubernetes.default.svc"},
				User: authnv1.UserInfo{Username: "system:serviceaccount:csi:csi-node", Extra: extra("csi-node-x", podUID, "node-1")}}
		case "unreachable":
			return true, nil, errors.New("connection refused")
		default:
			out.Status = authnv1.TokenReviewStatus{Error: "invalid bearer token"}
		}
		return true, out, nil
	})
	return cs
}

func TestTokenVerifier(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "csi-node-x", Namespace: "csi", UID: types.UID(podUID)},
		Spec: corev1.PodSpec{NodeName: "node-1", ServiceAccountName: "csi-node"}}
	inPod := Caller{PID: 10, UID: 0, PodMapped: true, PodUID: podUID}
	cases := map[string]struct {
		token    string
		caller   Caller
		want     string // error substring; "" means accepted
		rejected bool
	}{
		"token of the caller's pod":       {token: "driver-token", caller: inPod},
		"token without node, pod on node": {token: "no-node-token", caller: inPod},
		"unmapped platform takes the pod": {token: "driver-token", caller: Caller{PID: 10, UID: -1}},
		"token of another pod":            {token: "driver-token", caller: Caller{PID: 10, PodMapped: true, PodUID: "11111111-2222-3333-4444-555555555555"}, rejected: true, want: "names pod csi/csi-node-x (uid " + podUID + ") but the calling process (pid 10) runs in pod uid 11111111-2222-3333-4444-555555555555; a pod must send its own token"},
		"token sent by a host process":    {token: "driver-token", caller: Caller{PID: 10, PodMapped: true}, rejected: true, want: "but the calling process (pid 10) is not in a pod"},
		"token sent by an unattributed process": {token: "driver-token", caller: Caller{PID: 10, Unattributed: `cgroup path "/../../x" climbs out of the agent's cgroup namespace`}, rejected: true,
			want: `but the calling process (pid 10) could not be attributed (cgroup path "/../../x" climbs out of the agent's cgroup namespace); call from a process the agent can place in that pod`},
		"token bound to another node":      {token: "other-node-token", caller: inPod, rejected: true, want: `names pod csi/csi-node-y on node "node-2", but this is node "node-1"`},
		"legacy token bound to no pod":     {token: "legacy-token", caller: inPod, rejected: true, want: "is not bound to a pod; send the token of a projected serviceAccountToken volume"},
		"token for another audience":       {token: "wrong-audience", caller: inPod, rejected: true, want: `is not for audience "pipeguard-agent"`},
		"invalid token":                    {token: "forged", caller: inPod, rejected: true, want: "the API server rejected the ServiceAccount token (invalid bearer token)"},
		"API server unreachable is denied": {token: "unreachable", caller: inPod, want: "TokenReview failed: connection refused"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var reviews atomic.Int32
			cs := apiServer(t, &reviews, pod)
			idx, err := NewPodIndex(cs, "node-1")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := idx.Start(ctx, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			v, err := NewTokenVerifier(TokenOptions{Reviewer: cs.AuthenticationV1().TokenReviews(), Audience: DefaultTokenAudience, NodeName: "node-1"})
			if err != nil {
				t.Fatal(err)
			}
			c := tc.caller
			err = v.Apply(ctx, &c, tc.token, idx)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.Username() != "system:serviceaccount:csi:csi-node" || c.Source != SourceToken || c.PodName != "csi-node-x" || c.Namespace != "csi" || c.ServiceAccount != "csi-node" || c.PodUID != podUID {
					t.Fatalf("caller %+v", c)
				}
				// A second call within the TTL reuses the answer.
				c2 := tc.caller
				if err := v.Apply(ctx, &c2, tc.token, idx); err != nil || reviews.Load() != 1 {
					t.Fatalf("second call: %v, %d reviews", err, reviews.Load())
				}
				return
			}
			var rej *Rejection
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.As(err, &rej) != tc.rejected {
				t.Fatalf("err = %v, want %q (rejection %v)", err, tc.want, tc.rejected)
			}
			if c.Source == SourceToken {
				t.Fatal("a refused token changed the caller")
			}
		})
	}
}

func TestResolveFromPodWatch(t *testing.T) {
	var reviews atomic.Int32
	cs := apiServer(t, &reviews, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "csi-node-x", Namespace: "csi", UID: types.UID(podUID)},
		Spec: corev1.PodSpec{NodeName: "node-1", ServiceAccountName: "csi-node"}})
	idx, err := NewPodIndex(cs, "node-1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := idx.Start(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	c := &Caller{PodMapped: true, PodUID: podUID}
	Resolve(c, idx)
	if c.PodName != "csi-node-x" || c.Namespace != "csi" || c.ServiceAccount != "csi-node" {
		t.Fatalf("resolved %+v", c)
	}
	unknown := &Caller{PodMapped: true, PodUID: "11111111-2222-3333-4444-555555555555"}
	Resolve(unknown, idx)
	if unknown.PodName != "" || unknown.Namespace != "" || unknown.ServiceAccount != "" {
		t.Fatalf("guessed %+v", unknown)
	}
}
