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
	// Discovery asks, on every pass, whether the report CRDs are
	// installed.
	Discovery Discovery
	// Limits bound each report; zero fields take the defaults.
	Limits Limits
}

// Writer writes the audit's violations as PolicyReports and a
// ClusterPolicyReport. It is safe for concurrent use; passes are
// serialized.
type Writer struct {
	opts Options

	mu    sync.Mutex
	state string // what the latest pass logged about the CRDs and RBAC
}

// NewWriter returns a Writer.
func NewWriter(opts Options) (*Writer, error) {
	if opts.Client == nil || opts.Discovery == nil {
		return nil, errors.New("policyreport: Options.Client and Options.Discovery are required")
	}
	return &Writer{opts: opts}, nil
}

// States of the writer, logged once each time they change.
const (
	stateWriting   = "writing"
	stateAbsent    = "absent"
	stateForbidden = "forbidden"
)

// Write makes the stored reports hold violations, found at the time at:
// it creates, updates and deletes pipeguard's reports so that exactly the
// namespaces with violations (and the cluster, for cluster-scoped objects)
// have one. When the report CRDs are not installed it writes nothing and
// returns nil. The error joins every write that failed; the others are
// done.
func (w *Writer) Write(ctx context.Context, violations []Violation, at time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	log := logr.FromContextOrDiscard(ctx).WithName("policyreport")
	missing, err := w.missingKinds()
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		w.setState(log, stateAbsent, "not writing PolicyReports: the API server does not serve them; install config/policyreport to get them",
			"groupVersion", GroupVersion.String(), "missing", missing)
		return nil
	}
	stored, objs, err := w.stored(ctx)
	if apierrors.IsForbidden(err) {
		w.setState(log, stateForbidden, "not writing PolicyReports: the report CRDs are installed but pipeguard-webhook may not list them; apply config/policyreport/rbac",
			"error", err.Error())
		return nil
	}
	if err != nil {
		return err
	}
	w.setState(log, stateWriting, "writing the background audit's violations as PolicyReports", "groupVersion", GroupVersion.String())
	stamps := Stamps{}
	for _, s := range stored {
		stamps.Remember(s.Results)
	}
	plan := MakePlan(Build(violations, at, stamps, w.opts.Limits), stored)
	var errs []error
	for _, r := range plan.Create {
		u, err := newObject(r)
		if err == nil {
			err = w.opts.Client.Create(ctx, u)
		}
		if apierrors.IsAlreadyExists(err) {
			err = fmt.Errorf("it exists without the label %s=%s, so it is not pipeguard's and is left alone; delete it, or label it so that pipeguard owns it", ManagedByLabel, ManagedBy)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("policyreport: creating %s: %w", describe(r.Kind(), r.Namespace, ReportName), err))
		}
	}
	for _, up := range plan.Update {
		u := objs[up.Stored]
		err := setContent(u, up.Report)
		if err == nil {
			err = w.opts.Client.Update(ctx, u)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("policyreport: updating %s: %w; the next pass tries again", describe(up.Stored.Kind, up.Stored.Namespace, up.Stored.Name), err))
		}
	}
	for _, k := range plan.Delete {
		u := objs[k]
		if err := w.opts.Client.Delete(ctx, u, client.Preconditions{UID: ptr(u.GetUID())}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("policyreport: deleting %s, which reports violations that are gone: %w; the next pass tries again", describe(k.Kind, k.Namespace, k.Name), err))
		}
	}
	if n := len(plan.Create) + len(plan.Update) + len(plan.Delete); n > 0 {
		log.V(1).Info("reports written", "created", len(plan.Create), "updated", len(plan.Update), "deleted", len(plan.Delete))
	}
	return errors.Join(errs...)
}

func ptr[T any](v T) *T { return &v }

// setState logs msg when the writer's state changes to state.
func (w *Writer) setState(log logr.Logger, state, msg string, kv ...any) {
	if w.state == state {
		return
	}
	w.state = state
	log.Info(msg, kv...)
}

// missingKinds returns the report kinds the API server does not serve.
func (w *Writer) missingKinds() ([]string, error) {
	all := []string{KindPolicyReport, KindClusterPolicyReport}
	list, err := w.opts.Discovery.ServerResourcesForGroupVersion(GroupVersion.String())
	if apierrors.IsNotFound(err) {
		return all, nil
	}
	if err != nil {
		return nil, fmt.Errorf("policyreport: asking the API server whether it serves %s: %w; the next pass asks again", GroupVersion, err)
	}
	var missing []string
	for _, k := range all {
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Kind == k }) {
			missing = append(missing, k)
		}
	}
	return missing, nil
}

// stored lists pipeguard's reports of both kinds, in every namespace.
func (w *Writer) stored(ctx context.Context) ([]Stored, map[Key]*unstructured.Unstructured, error) {
	var out []Stored
	objs := map[Key]*unstructured.Unstructured{}
	for _, kind := range []string{KindPolicyReport, KindClusterPolicyReport} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(GroupVersion.WithKind(kind + "List"))
		if err := w.opts.Client.List(ctx, list, client.MatchingLabels{ManagedByLabel: ManagedBy}); err != nil {
			if apierrors.IsForbidden(err) {
				return nil, nil, err
			}
			return nil, nil, fmt.Errorf("policyreport: listing %ss labelled %s=%s: %w; the next pass tries again", kind, ManagedByLabel, ManagedBy, err)
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

// newObject returns the object of a new report.
func newObject(r *Report) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(GroupVersion.WithKind(r.Kind()))
	u.SetNamespace(r.Namespace)
	u.SetName(ReportName)
	return u, setContent(u, r)
}

// setContent writes r into u, keeping the labels and annotations others
// set.
func setContent(u *unstructured.Unstructured, r *Report) error {
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
