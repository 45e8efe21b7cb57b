package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/pipeguard/pipeguard/policy"
)

// Evaluator decides on a rego input; *policy.Engine is one.
type Evaluator interface {
	Evaluate(ctx context.Context, in *policy.Input) (*policy.Decision, error)
	// AllowanceLabels lists the namespace label keys that grant pipe
	// access under the policies in force.
	AllowanceLabels() []string
}

// NamespaceLabels looks up a namespace's labels. found is false when the
// namespace is unknown, which the handler treats as a namespace without
// labels.
type NamespaceLabels interface {
	NamespaceLabels(ctx context.Context, name string) (labels map[string]string, found bool, err error)
}

// Observer is told the outcome of every review, for metrics.
type Observer interface {
	ObserveReview(ctx context.Context, r Review)
}

// Review is the outcome of one admission review.
type Review struct {
	Kind      string
	Operation string
	// Decision is "allow", "deny", "warn", "dryrun" (admitted, violations
	// recorded) or "error" (no decision, request rejected).
	Decision string
	Decided  *policy.Decision // nil when rego was not consulted or failed
	Duration time.Duration
}

// Options configure a Handler.
type Options struct {
	Engine     Evaluator
	Namespaces NamespaceLabels
	// Grants decides who may change a namespace's allowance labels. Nil
	// leaves Namespaces unreviewed, which only offline evaluation wants.
	Grants Grants
	// Observer, if set, is told every review's outcome.
	Observer Observer
	// Now returns the current time; defaults to time.Now.
	Now func() time.Time
}

// Handler reviews admission requests for pipe access.
type Handler struct {
	opts Options
}

var _ admission.Handler = (*Handler)(nil)

// NewHandler returns a Handler.
func NewHandler(opts Options) *Handler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Handler{opts: opts}
}

// Handle decides on one request. A request it cannot decode gets 400, its
// own failure 500: neither is ever an allow for an object it reviews.
func (h *Handler) Handle(ctx context.Context, req admission.Request) (resp admission.Response) {
	start := h.opts.Now()
	review := Review{Kind: req.Kind.Kind, Operation: string(req.Operation)}
	// The request's logger is made only for a review that logs: adding
	// its values costs more than a review that logs nothing.
	log := func() logr.Logger {
		return logr.FromContextOrDiscard(ctx).WithValues(
			"uid", req.UID, "kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name,
			"operation", req.Operation, "user", req.UserInfo.Username)
	}
	defer func() {
		if r := recover(); r != nil {
			log().Error(fmt.Errorf("panic: %v", r), "internal error while reviewing")
			resp = admission.Errored(http.StatusInternalServerError, fmt.Errorf("internal error: pipeguard failed while reviewing %s %q; the request is rejected until the review succeeds", req.Kind.Kind, req.Name))
			review.Decision = "error"
		}
		resp.UID = req.UID
		review.Duration = h.opts.Now().Sub(start)
		if h.opts.Observer != nil {
			h.opts.Observer.ObserveReview(ctx, review)
		}
	}()

	resp, review.Decision, review.Decided = h.review(ctx, log, req)
	return resp
}

func (h *Handler) review(ctx context.Context, log func() logr.Logger, req admission.Request) (admission.Response, string, *policy.Decision) {
	gk := schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind}
	isNamespace := gk == namespaceKind && h.opts.Grants != nil
	if (!Supported(gk) && !isNamespace) || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return admission.Allowed(""), "allow", nil
	}
	if len(req.Object.Raw) == 0 {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("%s %s request for %s %q carries no object; send the object in request.object", req.Operation, req.Kind.Kind, req.Kind.Kind, req.Name)), "error", nil
	}
	if isNamespace {
		resp, decision := h.reviewNamespace(ctx, log, req)
		return resp, decision, nil
	}
	if !mayHaveHostPath(req.Object.Raw) {
		return admission.Allowed(""), "allow", nil
	}
	in, err := h.input(ctx, gk, req) // the object's facts (facts.go)
	if err != nil {
		return errorResponse(err), "error", nil
	}
	d, err := h.opts.Engine.Evaluate(ctx, in)
	if err != nil {
		log().Error(err, "policy evaluation failed")
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("internal error: evaluating pipe access policies for %s %q: %w; the request is rejected until evaluation succeeds", req.Kind.Kind, objectName(in), err)), "error", nil
	}
	return respond(log, d)
}

// respond turns a decision into a response: deny rejects, warn admits with
// warnings, dryrun admits and logs what would have been denied. Rules lists
// the rules a deny can come from.
func respond(log func() logr.Logger, d *policy.Decision) (admission.Response, string, *policy.Decision) {
	gen := strconv.FormatInt(d.Generation, 10)
	var resp admission.Response
	var denials []string
	decision := "allow"
	switch {
	case d.Denied():
		denials = policy.Messages(d.Deny)
		resp = admission.Denied(strings.Join(denials, "\n"))
		decision = "deny"
	case len(d.Warn) > 0:
		resp = admission.Allowed("")
		decision = "warn"
	case len(d.DryRun) > 0:
		resp = admission.Allowed("")
		decision = "dryrun"
	default:
		resp = admission.Allowed("")
	}
	resp.Warnings = policy.Messages(d.Warn)
	for _, v := range d.DryRun {
		log().Info("dryrun: would have denied", "rule", v.Rule, "container", v.Container, "volume", v.Volume, "path", v.Path, "policies", v.Policies, "message", v.Message)
	}
	if decision == "deny" {
		log().Info("denied", "violations", denials, "generation", d.Generation)
	}
	resp.AuditAnnotations = map[string]string{"decision": decision, "policy-generation": gen}
	return resp, decision, d
}

// mayHaveHostPath is a fast, conservative pre-check on the raw object: an
// object in which neither "hostPath" nor "local" appears, and no \u escape
// could spell them, has no host path volume. Decoding is case-sensitive, so
// these byte searches cannot miss a field the decoder would see.
func mayHaveHostPath(raw []byte) bool {
	return bytes.Contains(raw, []byte(`"hostPath"`)) ||
		bytes.Contains(raw, []byte(`"local"`)) ||
		bytes.Contains(raw, []byte(`\u`))
}

func objectName(in *policy.Input) string {
	if in == nil {
		return ""
	}
	return in.Object.Name
}

// badRequestError marks input the handler cannot decode.
type badRequestError struct{ err error }

func (e badRequestError) Error() string { return e.err.Error() }
func (e badRequestError) Unwrap() error { return e.err }

func badRequest(err error) error { return badRequestError{err} }

func errorResponse(err error) admission.Response {
	var bre badRequestError
	if errors.As(err, &bre) {
		return admission.Errored(http.StatusBadRequest, err)
	}
	return admission.Errored(http.StatusInternalServerError, err)
}
