package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/internal/kinds"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// Result is the decision on one object, as `pipeguard policy eval` reports
// it.
type Result struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Namespace  string             `json:"namespace,omitempty"`
	Name       string             `json:"name"`
	Verdict    policy.Verdict     `json:"decision"`
	Deny       []policy.Violation `json:"deny,omitempty"`
	Warn       []policy.Violation `json:"warn,omitempty"`
	DryRun     []policy.Violation `json:"dryrun,omitempty"`
	// Errors says, when Verdict is policy.Error, why no decision could be
	// made: one entry per policy whose rules failed, with action error.
	Errors     []policy.Violation `json:"errors,omitempty"`
	Generation int64              `json:"policyGeneration,omitempty"`
}

// Violations returns every violation of r: errors, deny, then warn, then
// dryrun.
func (r Result) Violations() []policy.Violation {
	out := make([]policy.Violation, 0, len(r.Errors)+len(r.Deny)+len(r.Warn)+len(r.DryRun))
	out = append(out, r.Errors...)
	out = append(out, r.Deny...)
	out = append(out, r.Warn...)
	return append(out, r.DryRun...)
}

// Options configure EvaluateCluster.
type Options struct {
	// PageSize is how many objects one list call returns; 500 when zero.
	PageSize int64
	// Engine, if set, decides instead of an engine loaded with the
	// cluster's PipeAccessPolicies.
	Engine *policy.Engine
	// Namespace, if set, limits the results to the objects of that
	// namespace: cluster-scoped objects (PersistentVolumes) are left out,
	// as kubectl get -n shows only namespaced objects. Every namespace's
	// labels and every policy are still read.
	Namespace string
}

// EvaluateCluster reads every object of the reviewed kinds (package kinds), the namespaces' labels and
// the PipeAccessPolicies in force through cfg, and returns the decision
// admission would make on each object's creation, sorted by kind (in the
// order of the kinds table), namespace and name. A policy whose latest version does
// not compile is taken in its last enforced version, as the webhook does.
// Only list permissions are needed.
func EvaluateCluster(ctx context.Context, cfg *rest.Config, opts Options) ([]Result, error) {
	if cfg == nil {
		return nil, errors.New("inventory: no cluster configuration given; pass a rest.Config (e.g. from a kubeconfig)")
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 500
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("inventory: cluster configuration: %w", err)
	}
	engine := opts.Engine
	if engine == nil {
		if engine, err = clusterEngine(ctx, dc, opts.PageSize); err != nil {
			return nil, err
		}
	}
	namespaces := webhook.StaticNamespaces{}
	if err := list(ctx, dc, schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", opts.PageSize, func(u *unstructured.Unstructured) error {
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		namespaces[u.GetName()] = labels
		return nil
	}); err != nil {
		return nil, err
	}
	claims, err := clusterClaims(ctx, dc, opts.PageSize)
	if err != nil {
		return nil, err
	}
	e := NewEvaluator(engine, namespaces, claims)
	var results []Result
	for _, k := range kinds.All() {
		if opts.Namespace != "" && !k.Namespaced {
			continue
		}
		gvr := k.GVK.GroupVersion().WithResource(k.Resource)
		err := list(ctx, dc, gvr, opts.Namespace, opts.PageSize, func(u *unstructured.Unstructured) error {
			raw, err := json.Marshal(u.Object)
			if err != nil {
				return fmt.Errorf("inventory: encoding %s %s/%s: %w", k.GVK.Kind, u.GetNamespace(), u.GetName(), err)
			}
			r, err := e.Evaluate(ctx, k, u.GetNamespace(), u.GetName(), raw)
			if err != nil {
				return err
			}
			results = append(results, r)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return results, nil
}

// list calls fn on every object of gvr (in namespace, or in every
// namespace when it is ""), page by page.
func list(ctx context.Context, dc dynamic.Interface, gvr schema.GroupVersionResource, namespace string, pageSize int64, fn func(*unstructured.Unstructured) error) error {
	lo := metav1.ListOptions{Limit: pageSize}
	for {
		l, err := dc.Resource(gvr).Namespace(namespace).List(ctx, lo)
		if err != nil {
			return fmt.Errorf("inventory: listing %s: %w", gvr.GroupResource(), err)
		}
		sort.Slice(l.Items, func(i, j int) bool {
			a, b := &l.Items[i], &l.Items[j]
			if a.GetNamespace() != b.GetNamespace() {
				return a.GetNamespace() < b.GetNamespace()
			}
			return a.GetName() < b.GetName()
		})
		for i := range l.Items {
			if err := fn(&l.Items[i]); err != nil {
				return err
			}
		}
		if lo.Continue = l.GetContinue(); lo.Continue == "" {
			return nil
		}
	}
}

// clusterEngine loads the cluster's PipeAccessPolicies into an engine: each
// in its latest version when that compiles, else in the version its status
// names as last enforced, else left out.
func clusterEngine(ctx context.Context, dc dynamic.Interface, pageSize int64) (*policy.Engine, error) {
	var pols []v1alpha1.PipeAccessPolicy
	gvr := v1alpha1.GroupVersion.WithResource("pipeaccesspolicies")
	if err := list(ctx, dc, gvr, "", pageSize, func(u *unstructured.Unstructured) error {
		var p v1alpha1.PipeAccessPolicy
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
			return fmt.Errorf("inventory: reading PipeAccessPolicy %q: %w", u.GetName(), err)
		}
		pols = append(pols, p)
		return nil
	}); err != nil {
		return nil, err
	}
	engine, err := policy.NewEngine(ctx, policy.Options{})
	if err != nil {
		return nil, err
	}
	inForce := pols[:0:0]
	for i := range pols {
		p := &pols[i]
		if policy.CheckPolicy(ctx, p) == nil {
			inForce = append(inForce, *p)
			continue
		}
		if last := p.Status.LastEnforced; last != nil {
			good := p.DeepCopy()
			good.Generation, good.Spec = last.Generation, *last.Spec.DeepCopy()
			if policy.CheckPolicy(ctx, good) == nil {
				inForce = append(inForce, *good)
			}
		}
	}
	if _, err := engine.Load(ctx, inForce); err != nil {
		return nil, fmt.Errorf("inventory: the cluster's PipeAccessPolicies do not compile together: %w; see `kubectl get pipeaccesspolicies`", err)
	}
	return engine, nil
}

// Evaluator decides on objects as admission does on their creation. It
// is safe for concurrent use.
type Evaluator struct {
	handler *webhook.Handler
}

// NewEvaluator returns an Evaluator that decides with engine, reads
// namespace labels from namespaces and, when claims is not nil, finds the
// PersistentVolumes that pods' claims are bound to there.
func NewEvaluator(engine webhook.Evaluator, namespaces webhook.NamespaceLabels, claims webhook.Claims) *Evaluator {
	h := webhook.NewHandler(webhook.Options{Engine: engine, Namespaces: namespaces, Claims: claims})
	return &Evaluator{handler: h}
}

// Evaluate decides on raw, the JSON of an object of kind k, as the webhook
// would on its CREATE.
func (e *Evaluator) Evaluate(ctx context.Context, k kinds.Kind, namespace, name string, raw []byte) (Result, error) {
	r := Result{APIVersion: k.GVK.GroupVersion().String(), Kind: k.GVK.Kind, Namespace: namespace, Name: name}
	out, err := e.handler.Decide(ctx, webhook.Request{
		UID:  "pipeguard-inventory",
		Kind: k.GVK, Resource: k.Resource,
		Namespace: namespace, Name: name,
		Operation: admissionv1.Create,
		User:      authnv1.UserInfo{Username: "pipeguard-inventory"},
		Object:    raw,
	})
	if err != nil {
		return r, fmt.Errorf("inventory: %s %s: %w", k.GVK.Kind, ref(namespace, name), err)
	}
	r.Verdict = out.Verdict
	if d := out.Decision; d != nil {
		r.Deny, r.Warn, r.DryRun, r.Generation = d.Deny, d.Warn, d.DryRun, d.Generation
	}
	return r, nil
}

// EvaluateObject decides on a typed object of a reviewed kind, whole or
// stripped (Strip), as the webhook would on its CREATE.
func (e *Evaluator) EvaluateObject(ctx context.Context, obj client.Object) (Result, error) {
	k, ok := kinds.ForObject(obj)
	if !ok {
		return Result{}, fmt.Errorf("inventory: %T is not a kind the webhook reviews", obj)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return Result{}, fmt.Errorf("inventory: encoding %s %s: %w", k.GVK.Kind, ref(obj.GetNamespace(), obj.GetName()), err)
	}
	return e.Evaluate(ctx, k, obj.GetNamespace(), obj.GetName(), raw)
}

func ref(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// clusterClaims is ClaimsFrom for the cluster's claims and volumes, read
// page by page.
func clusterClaims(ctx context.Context, dc dynamic.Interface, pageSize int64) (webhook.StaticClaims, error) {
	return ClaimsFrom(ctx, listerFunc(func(ctx context.Context, l client.ObjectList) error {
		var gvr schema.GroupVersionResource
		switch l.(type) {
		case *corev1.PersistentVolumeList:
			gvr = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}
		case *corev1.PersistentVolumeClaimList:
			gvr = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
		default:
			return fmt.Errorf("inventory: cannot list %T", l)
		}
		var items []unstructured.Unstructured
		if err := list(ctx, dc, gvr, "", pageSize, func(u *unstructured.Unstructured) error {
			items = append(items, *u)
			return nil
		}); err != nil {
			return err
		}
		return runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"items": unstructuredItems(items)}, l)
	}))
}

func unstructuredItems(items []unstructured.Unstructured) []any {
	out := make([]any, len(items))
	for i := range items {
		out[i] = items[i].Object
	}
	return out
}

// listerFunc is a Lister of one function.
type listerFunc func(ctx context.Context, l client.ObjectList) error

func (f listerFunc) List(ctx context.Context, l client.ObjectList, _ ...client.ListOption) error {
	return f(ctx, l)
}
