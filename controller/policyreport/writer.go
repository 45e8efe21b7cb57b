package policyreport

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Discovery tells whether the API server serves a group version; a
// client-go discovery client is one.
type Discovery interface {
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

// Options configure a Writer.
type Options struct {
	// Client reads, writes and deletes the reports. Its reads of
	// unstructured objects must reach the API server, not a cache
	// (controller-runtime's default).
	Client client.Client
	// Discovery asks, on every pass, whether the report CRDs of each API
	// are installed.
	Discovery Discovery
	// Limits bound each report; zero fields take the defaults.
	Limits Limits
}

// Writer writes the audit's violations as reports of every API of APIs
// that the API server serves: PolicyReports and a ClusterPolicyReport,
// Reports and a ClusterReport. It is safe for concurrent use; passes are
// serialized.
type Writer struct {
	opts Options

	mu sync.Mutex
	// state holds, by group, what the latest pass logged about the CRDs
	// and RBAC of that group.
	state map[string]string
}

// NewWriter returns a Writer.
func NewWriter(opts Options) (*Writer, error) {
	if opts.Client == nil || opts.Discovery == nil {
		return nil, errors.New("policyreport: Options.Client and Options.Discovery are required")
	}
	return &Writer{opts: opts, state: map[string]string{}}, nil
}

// States of the writer for one API, logged once each time they change.
const (
	stateWriting   = "writing"
	stateAbsent    = "absent"
	stateForbidden = "forbidden"
)

// target is one API that a pass writes, with its stored reports.
type target struct {
	api    API
	stored []Stored
	objs   map[Key]*unstructured.Unstructured
}

// Write makes the stored reports of every API the API server serves hold
// violations, found at the time at: it creates, updates and deletes
// pipeguard's reports so that exactly the namespaces with violations (and
// the cluster, for cluster-scoped objects) have one, with the same content
// in each API. An API whose CRDs are not installed, or that pipeguard may
// not list, is left out and does not stop the others; with none, Write
// writes nothing and returns nil. The error joins every request that
// failed; the others are done.
func (w *Writer) Write(ctx context.Context, violations []Violation, at time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	log := logr.FromContextOrDiscard(ctx).WithName("policyreport")
	var errs []error
	var targets []target
	for _, api := range APIs() {
		t, ok, err := w.target(ctx, log, api)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			targets = append(targets, t)
		}
	}
	if len(targets) == 0 {
		return errors.Join(errs...)
	}
	// One content for every API: a violation keeps the earliest timestamp
	// any of them stored.
	stamps := Stamps{}
	for _, t := range targets {
		for _, s := range t.stored {
			stamps.Remember(s.Results)
		}
	}
	want := Build(violations, at, stamps, w.opts.Limits)
	for _, t := range targets {
		errs = append(errs, w.apply(ctx, log, t, MakePlan(t.api, want, t.stored))...)
	}
	return errors.Join(errs...)
}

// target asks whether the API server serves api and lists pipeguard's
// reports of api; ok is false when the pass must leave api out, which it
// logs when that changes.
func (w *Writer) target(ctx context.Context, log logr.Logger, api API) (target, bool, error) {
	gv := api.GroupVersion.String()
	missing, err := w.missingKinds(api)
	if err != nil {
		return target{}, false, err
	}
	if len(missing) > 0 {
		w.setState(log, api, stateAbsent, fmt.Sprintf("not writing %s: the API server does not serve them; install %s to get them", api.Noun, api.Install),
			"groupVersion", gv, "missing", missing)
		return target{}, false, nil
	}
	stored, objs, err := w.stored(ctx, api)
	if apierrors.IsForbidden(err) {
		w.setState(log, api, stateForbidden, fmt.Sprintf("not writing %s: the report CRDs are installed but pipeguard-webhook may not list them; apply config/policyreport/rbac", api.Noun),
			"groupVersion", gv, "error", err.Error())
		return target{}, false, nil
	}
	if err != nil {
		return target{}, false, err
	}
	w.setState(log, api, stateWriting, "writing the background audit's violations as "+api.Noun, "groupVersion", gv)
	return target{api: api, stored: stored, objs: objs}, true, nil
}

// apply carries out the plan of one API and returns the requests that
// failed.
func (w *Writer) apply(ctx context.Context, log logr.Logger, t target, plan Plan) []error {
	var errs []error
	for _, r := range plan.Create {
		u, err := newObject(t.api, r)
		if err == nil {
			err = w.opts.Client.Create(ctx, u)
		}
		if apierrors.IsAlreadyExists(err) {
			err = fmt.Errorf("it exists without the label %s=%s, so it is not pipeguard's and is left alone; delete it, or label it so that pipeguard owns it", ManagedByLabel, ManagedBy)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("policyreport: creating %s: %w", describe(t.api.KindOf(r), r.Namespace, ReportName), err))
		}
	}
	for _, up := range plan.Update {
		u := t.objs[up.Stored]
		err := setContent(t.api, u, up.Report)
		if err == nil {
			err = w.opts.Client.Update(ctx, u)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("policyreport: updating %s: %w; the next pass tries again", describe(up.Stored.Kind, up.Stored.Namespace, up.Stored.Name), err))
		}
	}
	for _, k := range plan.Delete {
		u := t.objs[k]
		if err := w.opts.Client.Delete(ctx, u, client.Preconditions{UID: ptr(u.GetUID())}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("policyreport: deleting %s, which reports violations that are gone: %w; the next pass tries again", describe(k.Kind, k.Namespace, k.Name), err))
		}
	}
	if n := len(plan.Create) + len(plan.Update) + len(plan.Delete); n > 0 {
		log.V(1).Info("reports written", "groupVersion", t.api.GroupVersion.String(), "created", len(plan.Create), "updated", len(plan.Update), "deleted", len(plan.Delete))
	}
	return errs
}

func ptr[T any](v T) *T { return &v }

// setState logs msg when the state of api changes to state.
func (w *Writer) setState(log logr.Logger, api API, state, msg string, kv ...any) {
	if w.state[api.GroupVersion.Group] == state {
		return
	}
	w.state[api.GroupVersion.Group] = state
	log.Info(msg, kv...)
}

// missingKinds returns the report kinds of api the API server does not
// serve.
func (w *Writer) missingKinds(api API) ([]string, error) {
	all := api.Kinds()
	list, err := w.opts.Discovery.ServerResourcesForGroupVersion(api.GroupVersion.String())
	if apierrors.IsNotFound(err) {
		return all, nil
	}
	if err != nil {
		return nil, fmt.Errorf("policyreport: asking the API server whether it serves %s: %w; the next pass asks again", api.GroupVersion, err)
	}
	var missing []string
	for _, k := range all {
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Kind == k }) {
			missing = append(missing, k)
		}
	}
	return missing, nil
}

// stored lists pipeguard's reports of both kinds of api, in every
// namespace.
func (w *Writer) stored(ctx context.Context, api API) ([]Stored, map[Key]*unstructured.Unstructured, error) {
	var out []Stored
	objs := map[Key]*unstructured.Unstructured{}
	for _, kind := range api.Kinds() {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(api.GroupVersion.WithKind(kind + "List"))
		if err := w.opts.Client.List(ctx, list, client.MatchingLabels{ManagedByLabel: ManagedBy}); err != nil {
			if apierrors.IsForbidden(err) {
				return nil, nil, err
			}
			return nil, nil, fmt.Errorf("policyreport: listing %s %ss labelled %s=%s: %w; the next pass tries again", api.GroupVersion.Group, kind, ManagedByLabel, ManagedBy, err)
		}
		for i := range list.Items {
			u := &list.Items[i]
			s := storedOf(kind, u)
			out = append(out, s)
			objs[s.Key] = u
		}
	}
	return out, objs, nil
}

// content is the part of a report that pipeguard writes.
type content struct {
	Summary Summary  `json:"summary"`
	Results []Result `json:"results,omitempty"`
}

// storedOf reads what the writer compares of a stored report. A report
// whose content does not decode is taken as empty, so that it is
// rewritten.
func storedOf(kind string, u *unstructured.Unstructured) Stored {
	s := Stored{Key: Key{Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName()}, Omitted: u.GetAnnotations()[OmittedAnnotation]}
	s.Source, _ = u.Object["source"].(string)
	var c content
	part := map[string]any{}
	for _, f := range []string{"summary", "results"} {
		if v, ok := u.Object[f]; ok {
			part[f] = v
		}
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(part, &c); err != nil {
		s.Summary = Summary{Pass: -1} // never equal to a wanted summary
		return s
	}
	s.Summary, s.Results = c.Summary, c.Results
	return s
}

// newObject returns the object of a new report of api.
func newObject(api API, r *Report) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(api.GroupVersion.WithKind(api.KindOf(r)))
	u.SetNamespace(r.Namespace)
	u.SetName(ReportName)
	return u, setContent(api, u, r)
}

// setContent writes r into u, a report of api, keeping the labels and
// annotations others set.
func setContent(api API, u *unstructured.Unstructured, r *Report) error {
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[ManagedByLabel] = ManagedBy
	u.SetLabels(labels)
	ann := u.GetAnnotations()
	if r.Omitted > 0 {
		if ann == nil {
			ann = map[string]string{}
		}
		ann[OmittedAnnotation] = omitted(r.Omitted)
	} else {
		delete(ann, OmittedAnnotation)
	}
	if len(ann) == 0 {
		ann = nil
	}
	u.SetAnnotations(ann)
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&content{Summary: r.Summary, Results: r.Results})
	if err != nil {
		return fmt.Errorf("encoding the report: %w", err)
	}
	if api.ReportSource != "" {
		u.Object["source"] = api.ReportSource
	} else {
		delete(u.Object, "source")
	}
	u.Object["summary"] = m["summary"]
	if res, ok := m["results"]; ok {
		u.Object["results"] = res
	} else {
		delete(u.Object, "results")
	}
	return nil
}

func describe(kind, namespace, name string) string {
	if namespace == "" {
		return kind + " " + name
	}
	return kind + " " + namespace + "/" + name
}
