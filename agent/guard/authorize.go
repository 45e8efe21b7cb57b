package guard

// Whether a call runs: its caller, its paths and the agent policy.

import (
	"context"
	"errors"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/pipeguard/pipeguard/agent/apierr"
	"github.com/pipeguard/pipeguard/agent/gate"
	"github.com/pipeguard/pipeguard/agent/identity"
)

// authorize identifies the caller, confines paths and asks the gate. A
// denial is recorded and returned as the request's error.
func (g *Guard) authorize(ctx context.Context, c *call) error {
	peerCaller, ok := identity.FromContext(ctx)
	if !ok {
		c.caller = &identity.Caller{UID: -1, GID: -1}
		return g.deny(ctx, c, codes.Unauthenticated, RuleIdentity,
			"internal error: the connection carries no caller identity, so the request cannot be attributed; the request was not run")
	}
	// The connection's caller is shared by its requests: a request whose
	// caller may be enriched (a pod to resolve, a token to verify) gets a
	// copy.
	c.conn, c.caller = peerCaller, peerCaller
	if g.o.Pods != nil && peerCaller.PodUID != "" {
		c.caller = peerCaller.Clone()
		identity.Resolve(c.caller, g.o.Pods)
	}
	if err := g.token(ctx, c); err != nil {
		return err
	}
	// Every path field of the method (package methods) is confined here.
	for _, f := range c.fields.Paths() {
		p, _ := c.req.str(f.Name)
		if p == "" {
			continue
		}
		// The handler resolves symlinks with the mode its operation needs,
		// before the host is touched; the shape and root rules run here.
		if _, err := g.o.Confiner.CheckLexical(f.Name, p); err != nil {
			var ref apierr.Refusal
			rule := RuleConfinement
			if errors.As(err, &ref) {
				rule = ref.RefusalRule()
			}
			return g.deny(ctx, c, apierr.Code(err), rule, err.Error())
		}
	}
	if g.o.Gate.NeverDenies() {
		// The policies in force deny nothing: no input to build. A reload
		// that starts denying is seen by the next request, as it would be
		// by a request decided a moment earlier.
		return nil
	}
	d, err := g.o.Gate.Decide(ctx, &gate.Input{Group: c.ep.Group, Version: c.ep.Version, Method: c.method, FullMethod: c.full,
		Mutating: gate.Mutating(c.method), Caller: c.caller, Request: c.req.render()})
	if err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "agent policy could not decide; denying")
		return g.deny(ctx, c, codes.Internal, RuleGateError, "internal error: the agent policy could not decide ("+err.Error()+"); the request was denied")
	}
	if !d.Allowed {
		msg := (&apierr.Denied{Rule: d.Rule, Msg: d.Message}).Error()
		return g.deny(ctx, c, codes.PermissionDenied, d.Rule, msg)
	}
	return nil
}

// token verifies an "authorization: Bearer" token when one is sent.
func (g *Guard) token(ctx context.Context, c *call) error {
	values := metadata.ValueFromIncomingContext(ctx, "authorization")
	if len(values) == 0 {
		return nil
	}
	tok, ok := identity.BearerToken(values)
	if !ok {
		return g.deny(ctx, c, codes.Unauthenticated, RuleToken, `the authorization metadata is not one "Bearer <token>" value; send a projected ServiceAccount token, or no authorization metadata`)
	}
	if g.o.Tokens == nil {
		c.token = g.text.unverifiedToken
		return nil
	}
	if c.caller == c.conn {
		c.caller = c.conn.Clone()
	}
	if err := g.o.Tokens.Apply(ctx, c.caller, tok, g.o.Pods); err != nil {
		var rej *identity.Rejection
		if errors.As(err, &rej) {
			return g.deny(ctx, c, codes.Unauthenticated, RuleToken, rej.Msg)
		}
		var thr *identity.Throttled
		if errors.As(err, &thr) {
			return g.deny(ctx, c, codes.ResourceExhausted, RuleToken, thr.Msg)
		}
		return g.deny(ctx, c, codes.Unavailable, RuleToken, "the ServiceAccount token could not be verified ("+err.Error()+"); retry later, or send no token")
	}
	c.token = "verified"
	return nil
}

// deny records a denial decided by the guard and returns it as a refusal
// whose message names the rule.
func (g *Guard) deny(ctx context.Context, c *call, code codes.Code, rule, msg string) error {
	err := apierr.Refused(rule, msg, code)
	g.recordDenial(ctx, c, code, rule, err.Error())
	return err
}
