package webhook

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/pipeguard/pipeguard/policy"
)

// Observer is told the outcome of every review, for metrics.
type Observer interface {
	ObserveReview(ctx context.Context, r Review)
}

// Review is the outcome of one admission review.
type Review struct {
	Kind      string
	Operation string
	// Verdict is what was decided; empty when Err is set.
	Verdict policy.Verdict
	// Err is set when no decision was made and the request was rejected.
	Err      error
	Decided  *policy.Decision // nil when rego was not consulted or failed
	Duration time.Duration
}

var _ admission.Handler = (*Handler)(nil)

// Handle translates one AdmissionReview to a Request, has Decide decide,
// and translates the Outcome back. A request it cannot decode gets 400, its
// own failure 500: neither is ever an allow for an object it reviews.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := h.opts.Now()
	out, err := h.Decide(ctx, requestOf(req))
	resp := response(out, err)
	resp.UID = req.UID
	if h.opts.Observer != nil {
		h.opts.Observer.ObserveReview(ctx, Review{Kind: req.Kind.Kind, Operation: string(req.Operation),
			Verdict: out.Verdict, Err: err, Decided: out.Decision, Duration: h.opts.Now().Sub(start)})
	}
	return resp
}

// requestOf is the Request an AdmissionReview asks about.
func requestOf(req admission.Request) Request {
	return Request{
		UID:         string(req.UID),
		Kind:        schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind},
		Resource:    req.Resource.Resource,
		SubResource: req.SubResource,
		Namespace:   req.Namespace,
		Name:        req.Name,
		Operation:   req.Operation,
		User:        req.UserInfo,
		DryRun:      req.DryRun != nil && *req.DryRun,
		Object:      req.Object.Raw,
		OldObject:   req.OldObject.Raw,
	}
}

// response is the admission response of an Outcome, or of an error from
// Decide. A decision of rego's is named in the audit annotations.
func response(out Outcome, err error) admission.Response {
	if err != nil {
		if IsBadRequest(err) {
			return admission.Errored(http.StatusBadRequest, err)
		}
		return admission.Errored(http.StatusInternalServerError, err)
	}
	resp := admission.Allowed("")
	if out.Verdict == policy.Deny {
		resp = admission.Denied(strings.Join(out.Denials, "\n"))
	}
	resp.Warnings = out.Warnings
	if out.Decision != nil {
		resp.AuditAnnotations = map[string]string{"decision": string(out.Verdict), "policy-generation": strconv.FormatInt(out.Decision.Generation, 10)}
	}
	return resp
}
