package guard

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/apierr"
	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/confine"
	"github.com/pipeguard/pipeguard/agent/gate"
	"github.com/pipeguard/pipeguard/agent/identity"
	"github.com/pipeguard/pipeguard/agent/methods"
	"github.com/pipeguard/pipeguard/agent/server"
	"github.com/pipeguard/pipeguard/internal/option"
)

// FailureMode says what happens to a request whose audit record cannot be
// written.
type FailureMode string

const (
	// FailDeny denies it (the default).
	FailDeny FailureMode = "deny"
	// FailAllow lets it through, logging loudly and counting it.
	FailAllow FailureMode = "allow"
)

// Keys of the options the guard's messages name (see package option).
const (
	OptionFailure = "guard.failure"
	OptionTokens  = "guard.tokens"
)

var (
	failureOption = option.Name{Key: OptionFailure, Field: "Options.Failure"}
	tokensOption  = option.Name{Key: OptionTokens, Field: "Options.Tokens"}
)

// Rules that deny outside rego. Refusals decided by the handlers carry their
// own rules (package apierr).
const (
	RuleIdentity    = "caller-identity"
	RuleToken       = identity.RuleServiceAccountToken
	RuleConfinement = "confinement"
	RuleGateError   = "gate-error"
	RuleAudit       = "audit-unavailable"
)

// Options configures a Guard.
type Options struct {
	Log logr.Logger
	// Confiner confines path fields before the gate; required.
	Confiner *confine.Confiner
	// Gate decides; required.
	Gate *gate.Engine
	// Audit records; required.
	Audit *audit.Log
	// Level is LevelMetadata (default) or LevelRequest.
	Level audit.Level
	// Failure is FailDeny (default) or FailAllow.
	Failure FailureMode
	// Tokens verifies ServiceAccount tokens; nil leaves tokens unverified
	// and unused.
	Tokens *identity.TokenVerifier
	// Pods resolves pod UIDs; nil leaves pod names empty.
	Pods identity.PodLookup
	// Registerer receives the guard's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Namer names the options that the guard's statuses, audit notes, log
	// lines and metric help name, as the command's readers know them (its
	// flags); nil keeps their Go names (Options.Failure).
	Namer option.Namer
}

// Guard is the per-request gate and audit.
type Guard struct {
	o             Options
	text          texts
	auditFailures *prometheus.CounterVec
	decisions     *prometheus.CounterVec
	allowed       sync.Map // API group → its allow counter
	users         *userCache
	calls         sync.Pool // of *call, reused with their annotations map
}

// countAllowed counts an allow decision of an API group.
func (g *Guard) countAllowed(group string) {
	c, ok := g.allowed.Load(group)
	if !ok {
		c, _ = g.allowed.LoadOrStore(group, g.decisions.WithLabelValues(group, audit.DecisionAllow, ""))
	}
	c.(prometheus.Counter).Inc()
}

// New checks the options.
func New(o Options) (*Guard, error) {
	if o.Confiner == nil || o.Gate == nil || o.Audit == nil {
		return nil, errors.New("the guard needs a confiner, a gate and an audit log")
	}
	if o.Level == "" {
		o.Level = audit.LevelMetadata
	}
	if _, ok := audit.ParseLevel(string(o.Level)); !ok {
		return nil, fmt.Errorf("audit level %q is not Metadata or Request", o.Level)
	}
	switch o.Failure {
	case "":
		o.Failure = FailDeny
	case FailDeny, FailAllow:
	default:
		return nil, fmt.Errorf("audit failure mode %q is not deny or allow", o.Failure)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	g := &Guard{o: o, text: newTexts(o.Namer), users: newUserCache(), calls: sync.Pool{New: func() any { return new(call) }},
		auditFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "pipeguard", Subsystem: "agent", Name: "audit_write_failures_total",
			Help: option.Sprintf("Audit records that could not be written, by what happened to the request: denied, allowed (under %s=allow), or completed (a completion record lost after the host operation ran).", failureOption).Render(o.Namer),
		}, []string{"request"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "pipeguard", Subsystem: "agent", Name: "gate_decisions_total",
			Help: "Request decisions, by API group, decision and rule: allow, or deny with the rule that refused the request, wherever it was refused (caller identity, token, confinement, agent policy, and in the handler resolving confinement, input validation and allowed services).",
		}, []string{"group", "decision", "rule"}),
	}
	if o.Registerer != nil {
		for _, c := range []prometheus.Collector{g.auditFailures, g.decisions} {
			if err := o.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("registering guard metrics: %w", err)
			}
		}
	}
	return g, nil
}

// call is one request on its way through the guard.
type call struct {
	ep       server.EndpointInfo
	method   string
	fields   *methods.Method // the method's path and object fields
	full     string
	caller   *identity.Caller
	conn     *identity.Caller // the connection's caller; nil when it has none
	req      request
	token    string // annotation
	agent    string // user agent
	received time.Time
	auditID  string
	// user is the record's user, taken with the first record: by then
	// the caller is final.
	user *audit.EncodedUser
	// name is the record's object name, found with the first record.
	name  string
	named bool
	// The record being written, made again for each stage. Append keeps
	// no reference to it.
	ev          audit.Event
	ref         audit.ObjectReference
	st          audit.Status
	annotations map[string]string
}

// Unary is the interceptor.
func (g *Guard) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	c := g.begin(ctx, info.FullMethod, req)
	defer g.end(c)
	if err := g.authorize(ctx, c); err != nil {
		return nil, err
	}
	mutating := gate.Mutating(c.method)
	if mutating {
		if err := g.writeAhead(ctx, c); err != nil {
			return nil, err
		}
	}
	resp, herr := handler(ctx, req)
	if err := g.complete(ctx, c, herr, mutating); err != nil {
		return nil, err
	}
	return resp, nil
}

// Stream gates and records streaming calls, without a request body. CSI
// Proxy has none; this keeps the chains symmetrical.
func (g *Guard) Stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx := ss.Context()
	c := g.begin(ctx, info.FullMethod, nil)
	defer g.end(c)
	if err := g.authorize(ctx, c); err != nil {
		return err
	}
	if err := g.writeAhead(ctx, c); err != nil {
		return err
	}
	return g.complete(ctx, c, handler(srv, ss), true)
}

// writeAhead writes the durable record of a call about to change the host.
func (g *Guard) writeAhead(ctx context.Context, c *call) error {
	ev := g.event(c, audit.StageRequestReceived, c.received)
	audit.SetDecision(ev.Annotations, true, "")
	return g.write(ctx, ev, true)
}

// complete writes the completion record of a call the gate let through and
// returns the call's error. A refusal by the handler (an apierr.Refusal: a
// symlink escape found when resolving, a service not allowed, a malformed
// input) is recorded and counted as a denial by its rule, like the denials
// before the handler, and returned in its gRPC shape. Any other outcome, a
// failed host operation included, is recorded as allowed with its code.
// A read whose completion cannot be written under FailDeny gets the audit
// failure instead of its answer: it has no other record.
func (g *Guard) complete(ctx context.Context, c *call, herr error, mutating bool) error {
	if herr != nil {
		if rf, ok := apierr.AsRefusal(herr); ok {
			g.recordDenial(ctx, c, rf.Code(), rf.RefusalRule(), rf.Error())
			return rf
		}
	}
	ev := g.event(c, audit.StageResponseComplete, g.o.Now())
	audit.SetDecision(ev.Annotations, true, "")
	var code codes.Code
	c.st, code = responseStatus(herr)
	ev.ResponseStatus = &c.st
	ev.Annotations[audit.AnnotationGRPCCode] = code.String()
	if !mutating {
		if err := g.write(ctx, ev, false); err != nil {
			return err
		}
		return herr
	}
	// The operation ran and its write-ahead record is on disk; a lost
	// completion cannot undo it, so it is logged and counted.
	if err := g.o.Audit.Append(ev, false); err != nil {
		g.auditFailures.WithLabelValues("completed").Inc()
		logr.FromContextOrDiscard(ctx).Error(err, "AUDIT COMPLETION LOST: the host operation ran and its write-ahead record is on disk", "auditID", ev.AuditID)
	} else {
		g.countAllowed(c.ep.Group)
	}
	return herr
}

func (g *Guard) begin(ctx context.Context, fullMethod string, req any) *call {
	ep, _ := server.EndpointFromContext(ctx)
	c := g.calls.Get().(*call)
	*c = call{ep: ep, method: path.Base(fullMethod), full: fullMethod, req: newRequest(req), received: g.o.Now(), auditID: g.o.Audit.NewAuditID(),
		annotations: c.annotations}
	c.fields = methods.Of(ep.Group, c.method)
	if ua := metadata.ValueFromIncomingContext(ctx, "user-agent"); len(ua) > 0 {
		c.agent = ua[0]
	}
	sendAuditID(ctx, c.auditID)
	return c
}

// end returns a finished call to the pool. Nothing of it outlives the
// request: records are copied into the log's buffer when appended, and the
// gate and the handler return before the call ends.
func (g *Guard) end(c *call) {
	ann := c.annotations
	clear(ann)
	*c = call{annotations: ann}
	g.calls.Put(c)
}

// recordDenial counts a denial and writes its record: the one record of a
// denied request, or the completion of one refused by its handler after
// its write-ahead record.
func (g *Guard) recordDenial(ctx context.Context, c *call, code codes.Code, rule, msg string) {
	g.decisions.WithLabelValues(c.ep.Group, audit.DecisionDeny, rule).Inc()
	ev := g.event(c, audit.StageResponseComplete, g.o.Now())
	audit.SetDecision(ev.Annotations, false, rule)
	ev.Annotations[audit.AnnotationReason] = msg
	ev.Annotations[audit.AnnotationGRPCCode] = code.String()
	ev.ResponseStatus = &audit.Status{Status: "Failure", Message: msg, Reason: code.String(), Code: httpCode(code)}
	if err := g.o.Audit.Append(ev, false); err != nil {
		g.auditFailures.WithLabelValues("denied").Inc()
		logr.FromContextOrDiscard(ctx).Error(err, "AUDIT RECORD LOST for a denied request", "auditID", c.auditID, "rule", rule)
	}
}

// write appends a record. Under FailDeny a failure denies the request with
// a status saying why; under FailAllow it is logged, counted and ignored.
func (g *Guard) write(ctx context.Context, ev *audit.Event, durable bool) error {
	err := g.o.Audit.Append(ev, durable)
	if err == nil {
		if ev.Stage == audit.StageResponseComplete {
			g.countAllowed(ev.ObjectRef.Resource)
		}
		return nil
	}
	log := logr.FromContextOrDiscard(ctx)
	var refused *audit.RefusedError
	if errors.As(err, &refused) {
		// The webhook's blocking mode refused the record; the log holds the
		// request's denial in its place.
		g.decisions.WithLabelValues(ev.ObjectRef.Resource, audit.DecisionDeny, audit.RuleAuditUnavailable).Inc()
		log.Info("request refused: its audit record cannot be delivered", "auditID", ev.AuditID, "reason", err.Error())
		return status.Error(codes.Unavailable, fmt.Sprintf("the request was not run: %v (rule %s)", err, audit.RuleAuditUnavailable))
	}
	if g.o.Failure == FailAllow {
		g.auditFailures.WithLabelValues("allowed").Inc()
		log.Error(err, g.text.lost, "auditID", ev.AuditID, "stage", ev.Stage)
		return nil
	}
	g.auditFailures.WithLabelValues("denied").Inc()
	log.Error(err, g.text.notWritten, "auditID", ev.AuditID, "stage", ev.Stage)
	return status.Error(codes.Unavailable, option.Sprintf("the audit log cannot be written (%s); the request was not run because pipeguard-agent runs with %s=deny; free space or fix permissions on the audit log directory (rule %s)", err.Error(), failureOption, RuleAudit).Render(g.o.Namer))
}

// texts are the guard's fixed messages that name options, as its Namer
// names them, rendered once.
type texts struct {
	lost, notWritten, unverifiedToken string
}

func newTexts(n option.Namer) texts {
	return texts{
		lost:            option.Sprintf("AUDIT RECORD LOST: request let through without a record (%s=allow)", failureOption).Render(n),
		notWritten:      option.Sprintf("audit record not written: request denied (%s=deny)", failureOption).Render(n),
		unverifiedToken: option.Sprintf("sent but not verified: the agent has no %s; identity is the peer's", tokensOption).Render(n),
	}
}

// event builds the record of a call at a stage, in c.ev.
func (g *Guard) event(c *call, stage audit.Stage, at time.Time) *audit.Event {
	if c.user == nil {
		c.user = g.users.get(c.conn, c.caller)
	}
	if !c.named {
		c.name, c.named = objectName(c.fields, &c.req), true
	}
	if c.annotations == nil {
		// Room for every annotation of a record: record, decision, rule,
		// reason, grpc-code, token and the two authorization ones.
		c.annotations = make(map[string]string, 8)
	} else {
		clear(c.annotations)
	}
	c.annotations[audit.AnnotationRecord] = audit.RecordRequest
	c.ref = audit.ObjectReference{Resource: c.ep.Group, APIGroup: "csi-proxy", APIVersion: c.ep.Version, Name: c.name}
	c.ev = audit.Event{
		Kind: audit.Kind, APIVersion: audit.APIVersion, Level: g.o.Level, AuditID: c.auditID, Stage: stage,
		RequestURI: c.full, Verb: c.method, UserAgent: c.agent, ObjectRef: &c.ref,
		RequestReceivedTimestamp: stamp(c.received), StageTimestamp: stamp(at),
		Annotations: c.annotations,
	}
	ev := &c.ev
	ev.SetUser(c.user)
	if c.token != "" {
		ev.Annotations[audit.AnnotationToken] = c.token
	}
	if g.o.Level == audit.LevelRequest {
		if body := c.req.render(); body != nil {
			ev.RequestObject = body
		}
	}
	return ev
}
