package confine

import (
	"context"
	"testing"

	"google.golang.org/grpc/peer"

	"github.com/pipeguard/pipeguard/agent/identity"
)

// TestPeerCaller maps the connection's peer identity to the caller of rule
// pod-link: a pod by its process, never by a token; the host only where
// the platform proves it; an unattributed caller stays one, even with a
// token naming a pod.
func TestPeerCaller(t *testing.T) {
	with := func(c identity.Caller) context.Context {
		return peer.NewContext(context.Background(), &peer.Peer{AuthInfo: identity.AuthInfo{Caller: &c}})
	}
	cases := map[string]struct {
		ctx  context.Context
		want Caller
	}{
		"in a pod":          {with(identity.Caller{PodMapped: true, PodUID: "aaaa"}), Caller{Kind: CallerInPod, Pod: "aaaa"}},
		"host":              {with(identity.Caller{PodMapped: true}), Caller{Kind: CallerOnHost}},
		"unmapped":          {with(identity.Caller{}), Caller{Kind: CallerUnattributed}},
		"cgroup hidden":     {with(identity.Caller{PodMapped: true, Unattributed: "climbs out"}), Caller{Kind: CallerUnattributed}},
		"no identity":       {context.Background(), Caller{Kind: CallerUnidentified}},
		"set by WithCaller": {WithCaller(with(identity.Caller{PodMapped: true}), Caller{Kind: CallerInPod, Pod: "bbbb"}), Caller{Kind: CallerInPod, Pod: "bbbb"}},
	}
	for name, tc := range cases {
		if got := PeerCaller(tc.ctx); got != tc.want {
			t.Errorf("%s: %+v (%s), want %+v", name, got, got, tc.want)
		}
	}
}
