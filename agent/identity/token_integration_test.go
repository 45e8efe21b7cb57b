package identity_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pipeguard/pipeguard/agent/identity"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// TestTokenReviewAgainstAPIServer verifies tokens the real kube-apiserver
// issued with TokenRequest: bound to a pod on this node, on another node,
// for another audience, bound to no pod, and garbage.
func TestTokenReviewAgainstAPIServer(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	const ns, sa, here, there = "csi", "csi-node", "node-a", "node-b"
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}))
	must(cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}))
	pods := map[string]*corev1.Pod{}
	for _, node := range []string{here, there} {
		must(cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{}))
		p, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "csi-" + node},
			Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: sa,
				Containers: []corev1.Container{{Name: "driver", Image: "registry.k8s.io/pause:3.10"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods[node] = p
	}
	token := func(audience string, pod *corev1.Pod) string {
		t.Helper()
		tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: []string{audience}}}
		if pod != nil {
			tr.Spec.BoundObjectRef = &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
		}
		out, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, tr, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("TokenRequest: %v", err)
		}
		return out.Status.Token
	}
	v, err := identity.NewTokenVerifier(identity.TokenOptions{Reviewer: cs.AuthenticationV1().TokenReviews(), Audience: identity.DefaultTokenAudience, NodeName: here})
	if err != nil {
		t.Fatal(err)
	}
	podHere, podThere := pods[here], pods[there]
	user := "system:serviceaccount:csi:csi-node"
	cases := map[string]struct {
		token string
		// caller: the peer identity; PodMapped with PodUID as a Linux
		// caller in that pod, unmapped as an unresolved Windows caller.
		caller     identity.Caller
		wantErr    string
		wantSuffix string
		wantPod    string
		wantNote   string
	}{
		"bound to a pod on this node, from that pod": {
			token:   token(identity.DefaultTokenAudience, podHere),
			caller:  identity.Caller{PID: 42, PodMapped: true, PodUID: string(podHere.UID)},
			wantPod: "csi-node-a",
		},
		"bound to a pod on this node, from an unmapped process": {
			token:    token(identity.DefaultTokenAudience, podHere),
			caller:   identity.Caller{PID: 42},
			wantPod:  "csi-node-a",
			wantNote: "the calling process could not be mapped to a pod on this platform; the pod is the token's",
		},
		"bound to a pod on this node, sent from another pod": {
			token:   token(identity.DefaultTokenAudience, podHere),
			caller:  identity.Caller{PID: 42, PodMapped: true, PodUID: "uid-attacker"},
			wantErr: "the token names pod csi/csi-node-a (uid " + string(podHere.UID) + ") but the calling process (pid 42) runs in pod uid uid-attacker; a pod must send its own token",
		},
		"bound to a pod on another node": {
			token:   token(identity.DefaultTokenAudience, podThere),
			caller:  identity.Caller{PID: 42},
			wantErr: `the token names pod csi/csi-node-b on node "node-b", but this is node "node-a"`,
		},
		"issued for another audience": {
			token:      token("vault", podHere),
			caller:     identity.Caller{PID: 42},
			wantErr:    "the API server rejected the ServiceAccount token (",
			wantSuffix: `); send a current token projected for audience "pipeguard-agent"`,
		},
		"bound to no pod": {
			token:   token(identity.DefaultTokenAudience, nil),
			caller:  identity.Caller{PID: 42},
			wantErr: "the token of " + user + " is not bound to a pod; send the token of a projected serviceAccountToken volume, which names its pod",
		},
		"garbage": {
			token:      "not.a.jwt",
			caller:     identity.Caller{PID: 42},
			wantErr:    "the API server rejected the ServiceAccount token (",
			wantSuffix: `); send a current token projected for audience "pipeguard-agent"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := tc.caller
			err := v.Apply(ctx, &c, tc.token, nil)
			if tc.wantErr != "" {
				var rej *identity.Rejection
				if !errors.As(err, &rej) {
					t.Fatalf("err = %v, want a rejection %q", err, tc.wantErr)
				}
				if !strings.HasPrefix(err.Error(), tc.wantErr) || !strings.HasSuffix(err.Error(), tc.wantSuffix) {
					t.Fatalf("err = %q, want %q...%q", err, tc.wantErr, tc.wantSuffix)
				}
				if rej.RefusalRule() != identity.RuleServiceAccountToken || c.Source == identity.SourceToken || c.TokenUser != "" {
					t.Errorf("rule %s, caller %+v: a rejected token must not become the identity", rej.RefusalRule(), c)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v, want the token accepted", err)
			}
			if c.Source != identity.SourceToken || c.TokenUser != user || c.Username() != user || c.PodName != tc.wantPod ||
				c.Namespace != ns || c.ServiceAccount != sa || c.PodUID != string(podHere.UID) {
				t.Errorf("caller %+v, want %s in pod %s/%s", c, user, ns, tc.wantPod)
			}
			if tc.wantNote != "" && (len(c.Notes) != 1 || c.Notes[0] != tc.wantNote) {
				t.Errorf("notes %q, want %q", c.Notes, tc.wantNote)
			}
		})
	}
}
