package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
)

// refreshWarnings is the work item that rewrites the warnings of the
// policies in force without compiling anything: PipeAccessPolicies are
// cluster-scoped, so no policy's request has a namespace.
var refreshWarnings = reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "pipeguard.io/warnings"}}

var toRefresh = handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
	return []reconcile.Request{refreshWarnings}
})

// namespacesComeAndGo refreshes the warnings whenever a namespace is
// created or deleted, since a policy's allow.namespaces may name it. It
// reads the manager's namespace informer (metadata only, the one reviews
// read labels from); label changes do not matter here.
func namespacesComeAndGo(mgr ctrl.Manager) source.Source {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return source.Kind[client.Object](mgr.GetCache(), ns, toRefresh, predicate.Funcs{
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	})
}

// queueRefresh asks for a refresh of the warnings unless one is queued.
func (c *Controller) queueRefresh() {
	select {
	case c.refresh <- event.GenericEvent{Object: &v1alpha1.PipeAccessPolicy{}}:
	default:
	}
}

// refreshWarnings rewrites the Ready message of every policy whose latest
// spec is in force, with its warnings as they are now, and comes back
// after opts.Recheck while one of them may go away unwatched. Policies not
// in force keep the status their compile gave them.
func (c *Controller) refreshWarnings(ctx context.Context) (reconcile.Result, error) {
	if !c.leader() || !c.loaded.Load() {
		// The first compile, and the one on election, write every status.
		return reconcile.Result{}, nil
	}
	var list v1alpha1.PipeAccessPolicyList
	if err := c.opts.Client.List(ctx, &list); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing PipeAccessPolicies: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var inForce []v1alpha1.PipeAccessPolicy
	outcomes := map[string]*outcome{}
	for _, p := range list.Items {
		if good, ok := c.lastGood[p.Name]; ok && good.Generation == p.Generation {
			inForce = append(inForce, p)
			outcomes[p.Name] = &outcome{}
		}
	}
	if c.writeStatus(ctx, inForce, outcomes, c.opts.Engine.Current()) {
		return reconcile.Result{RequeueAfter: c.opts.Recheck}, nil
	}
	return reconcile.Result{}, nil
}
