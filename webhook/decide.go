package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

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

// Options configure a Handler.
type Options struct {
	Engine     Evaluator
	Namespaces NamespaceLabels
	// Grants decides who may change a namespace's allowance labels. Nil
	// leaves Namespaces unreviewed, which only offline evaluation wants.
	Grants Grants
	// Claims, if set, finds the PersistentVolume a pod's
	// PersistentVolumeClaim is bound to, so that mounting a claim bound to
	// a protected PersistentVolume is decided as mounting its path. The
	// background audit and `pipeguard policy eval --cluster` set it.
	Claims Claims
	// Observer, if set, is told every review's outcome.
	Observer Observer
	// Now returns the current time; defaults to time.Now.
	Now func() time.Time
}

// Handler decides on requests for pipe access (Decide) and serves those
// decisions as an admission webhook (Handle, handler.go).
type Handler struct {
	opts Options
}

// NewHandler returns a Handler.
func NewHandler(opts Options) *Handler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Handler{opts: opts}
}

// Request is one object to decide on and what is being done to it: the
// parts of an admission request a decision reads. The webhook makes one of
// each AdmissionReview; the background audit and `pipeguard policy eval`
// make one of each object they evaluate, as a CREATE.
type Request struct {
	// UID identifies the request in the rego input; may be empty.
	UID         string
	Kind        schema.GroupVersionKind
	Resource    string // plural, as "pods"
	SubResource string
	Namespace   string
	Name        string
	Operation   admissionv1.Operation
	User        authnv1.UserInfo
	DryRun      bool
	// Object is the object's JSON; OldObject the object before an UPDATE.
	Object    []byte
	OldObject []byte
}

// Outcome is the decision on one Request.
type Outcome struct {
	Verdict policy.Verdict
	// Decision is rego's, with every violation; nil when rego was not
	// consulted: a kind or operation that is not reviewed, an object
	// without a host path, a Namespace.
	Decision *policy.Decision
	// Denials are the messages of a deny, one per violation group, as the
	// user reads them; Warnings those of a warn.
	Denials  []string
	Warnings []string
	// Input is the facts the policies were asked about; nil when no rule
	// could see the object: a kind or operation that is not reviewed, an
	// object without a host path volume, HostProcess container or claim,
	// an object over the review bounds, a Namespace. Show it as the rules
	// read it with policy.Generation.Document.
	Input *policy.Input
}

var allowed = Outcome{Verdict: policy.Allow}

// Decide decides on one request as the webhook does. An error means no
// decision: the request is rejected, never allowed. IsBadRequest tells the
// requester's error (an object that cannot be decoded) from pipeguard's
// own. Decide is safe for concurrent use.
func (h *Handler) Decide(ctx context.Context, req Request) (out Outcome, err error) {
	log := reviewLog{ctx: ctx, req: req}
	defer func() {
		if r := recover(); r != nil {
			log.get().Error(fmt.Errorf("panic: %v", r), "internal error while reviewing")
			out, err = Outcome{}, fmt.Errorf("internal error: pipeguard failed while reviewing %s %q; the request is rejected until the review succeeds", req.Kind.Kind, req.Name)
		}
	}()
	gk := req.Kind.GroupKind()
	isNamespace := gk == namespaceKind && h.opts.Grants != nil
	if (!Supported(gk) && !isNamespace) || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return allowed, nil
	}
	if len(req.Object) == 0 {
		return Outcome{}, badRequest(fmt.Errorf("%s %s request for %s %q carries no object; send the object in request.object", req.Operation, req.Kind.Kind, req.Kind.Kind, req.Name))
	}
	if isNamespace {
		return h.reviewNamespace(ctx, log, req)
	}
	if !mayReachAPipe(req.Object, h.opts.Claims != nil) {
		return allowed, nil
	}
	// The object's facts (facts.go); one above the bounds is denied
	// without rego (limits.go).
	in, err := h.input(ctx, gk, req)
	if out, ok := overBound(err); ok {
		log.denied(out.Denials, 0)
		return out, nil
	}
	if err != nil {
		return Outcome{}, err
	}
	d, err := h.opts.Engine.Evaluate(ctx, in)
	if err != nil {
		log.get().Error(err, "policy evaluation failed")
		return Outcome{}, fmt.Errorf("internal error: evaluating pipe access policies for %s %q: %w; the request is rejected until evaluation succeeds", req.Kind.Kind, objectName(in), err)
	}
	out = outcome(log, d)
	out.Input = in
	return out, nil
}

// outcome turns rego's decision into an Outcome: deny rejects, warn admits
// with warnings, dryrun admits and logs what would have been denied.
func outcome(log reviewLog, d *policy.Decision) Outcome {
	out := Outcome{Verdict: d.Verdict(), Decision: d, Warnings: policy.Messages(d.Warn)}
	for _, v := range d.DryRun {
		log.dryRun(v)
	}
	if out.Verdict == policy.Deny {
		out.Denials = policy.Messages(d.Deny)
		log.denied(out.Denials, d.Generation)
	}
	return out
}

// mayReachAPipe is a fast, conservative pre-check on the raw object: an
// object in which neither "hostPath", "local" nor "hostProcess" appears
// (nor "persistentVolumeClaim", when claims are looked up), and no \u
// escape could spell them, has no host path volume, no HostProcess
// container and no claim to look up. Decoding is case-sensitive, so these
// byte searches cannot miss a field the decoder would see.
func mayReachAPipe(raw []byte, claims bool) bool {
	return bytes.Contains(raw, []byte(`"hostPath"`)) ||
		bytes.Contains(raw, []byte(`"local"`)) ||
		bytes.Contains(raw, []byte(`"hostProcess"`)) ||
		(claims && bytes.Contains(raw, []byte(`"persistentVolumeClaim"`))) ||
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

// IsBadRequest reports whether err, from Decide, is the requester's: an
// object that cannot be decoded, which the webhook answers with 400.
// Every other error is pipeguard's own (500).
func IsBadRequest(err error) bool {
	var bre badRequestError
	return errors.As(err, &bre)
}
