package webhook

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/controller/limits"
	"github.com/pipeguard/pipeguard/policy"
)

// Peer is who sent a review over the network: its address, and the
// subject of the client certificate it presented, if any. A review's log
// lines name it, so that a review forged by a pod shows where it came
// from whatever user it claims to be from.
type Peer struct {
	Addr string
	// Subject is the client certificate's subject; empty without one.
	Subject string
}

type peerKey struct{}

// WithPeer returns ctx carrying the peer of the review it serves.
func WithPeer(ctx context.Context, p Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

// PeerFrom returns the peer WithPeer put in ctx.
func PeerFrom(ctx context.Context) (Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(Peer)
	return p, ok
}

// reviewLog makes the logger of one review, with the request's values,
// only for a review that logs: adding them costs more than a review that
// logs nothing. Every value from the request is cut to MaxLoggedValueBytes:
// a review need not come from the API server, which bounds names, so a
// log line has a known maximum.
type reviewLog struct {
	ctx context.Context
	req Request
}

func (l reviewLog) get() logr.Logger {
	log := logr.FromContextOrDiscard(l.ctx).WithValues(
		"uid", value(l.req.UID), "kind", value(l.req.Kind.Kind), "namespace", value(l.req.Namespace), "name", value(l.req.Name),
		"operation", value(string(l.req.Operation)), "user", value(l.req.User.Username))
	if p, ok := PeerFrom(l.ctx); ok {
		log = log.WithValues("peer", value(p.Addr))
		if p.Subject != "" {
			log = log.WithValues("peerCertificate", value(p.Subject))
		}
	}
	return log
}

// denied logs a denial: its messages, whole while they fit in
// MaxLoggedDenialBytes, and how many bytes were left out when they do not.
// The response carries every message in full. generation is the policy
// generation that decided; 0 for a denial no policy decided (a bound, the
// namespace guard), which names none.
func (l reviewLog) denied(denials []string, generation int64) {
	kept, cut := fitMessages(denials, MaxLoggedDenialBytes)
	kv := []any{"violations", kept}
	if generation != 0 {
		kv = append(kv, "generation", generation)
	}
	if cut > 0 {
		kv = append(kv, "bytesNotLogged", cut)
	}
	l.get().Info("denied", kv...)
}

// dryRun logs what a dryrun policy would have denied.
func (l reviewLog) dryRun(v policy.Violation) {
	msg, cut := fitMessages([]string{v.Message}, MaxLoggedDenialBytes)
	kv := []any{"rule", value(v.Rule), "container", value(v.Container), "volume", value(v.Volume), "path", value(v.Path),
		"policies", v.Policies, "message", msg[0]}
	if cut > 0 {
		kv = append(kv, "bytesNotLogged", cut)
	}
	l.get().Info("dryrun: would have denied", kv...)
}

// value is s cut to MaxLoggedValueBytes, its cut marked with the number of
// bytes left out.
func value(s string) string {
	if len(s) <= MaxLoggedValueBytes {
		return s
	}
	kept := limits.Cut(s, MaxLoggedValueBytes-32)
	return kept + fmt.Sprintf(" (%d bytes not logged)", len(s)-len(kept)+len(limits.Mark))
}

// fitMessages returns the messages that fit in max bytes: whole while
// they fit, then the next one cut with limits.Cut (ending in limits.Mark)
// in the room left, and how many bytes of the messages it left out.
func fitMessages(msgs []string, max int) (kept []string, cut int) {
	room := max
	for i, m := range msgs {
		if len(m) <= room {
			kept = append(kept, m)
			room -= len(m)
			continue
		}
		if room > len(limits.Mark) {
			c := limits.Cut(m, room)
			kept = append(kept, c)
			cut += len(m) - (len(c) - len(limits.Mark))
		} else {
			cut += len(m)
		}
		for _, rest := range msgs[i+1:] {
			cut += len(rest)
		}
		break
	}
	if kept == nil {
		kept = []string{""}
	}
	return kept, cut
}
