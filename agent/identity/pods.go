package identity

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// PodInfo is what the agent needs to know of a pod.
type PodInfo struct {
	UID, Name, Namespace, ServiceAccount, NodeName string
}

// PodLookup finds a pod by UID.
type PodLookup interface {
	PodByUID(uid string) (PodInfo, bool)
}

const uidIndex = "uid"

// PodIndex watches the pods of one node and finds them by UID.
type PodIndex struct {
	factory  informers.SharedInformerFactory
	informer cache.SharedIndexInformer
}

// NewPodIndex watches the pods bound to nodeName.
func NewPodIndex(client kubernetes.Interface, nodeName string) (*PodIndex, error) {
	if nodeName == "" {
		return nil, errors.New("the pod watch needs this node's name: nodeName is empty")
	}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
	}))
	inf := f.Core().V1().Pods().Informer()
	if err := inf.AddIndexers(cache.Indexers{uidIndex: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			return []string{string(p.UID)}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, err
	}
	// Keep only what identification needs.
	if err := inf.SetTransform(func(obj any) (any, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return obj, nil
		}
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion},
			Spec:       corev1.PodSpec{ServiceAccountName: p.Spec.ServiceAccountName, NodeName: p.Spec.NodeName},
		}, nil
	}); err != nil {
		return nil, err
	}
	return &PodIndex{factory: f, informer: inf}, nil
}

// Start starts the watch and waits, up to timeout, for the first list.
func (p *PodIndex) Start(ctx context.Context, timeout time.Duration) error {
	p.factory.Start(ctx.Done())
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !cache.WaitForCacheSync(wctx.Done(), p.informer.HasSynced) {
		return fmt.Errorf("the pod watch did not sync within %s: check that the client reaches the API server and may list and watch pods", timeout)
	}
	return nil
}

// PodByUID implements PodLookup.
func (p *PodIndex) PodByUID(uid string) (PodInfo, bool) {
	objs, err := p.informer.GetIndexer().ByIndex(uidIndex, uid)
	if err != nil || len(objs) == 0 {
		return PodInfo{}, false
	}
	pod := objs[0].(*corev1.Pod)
	return PodInfo{UID: string(pod.UID), Name: pod.Name, Namespace: pod.Namespace, ServiceAccount: pod.Spec.ServiceAccountName, NodeName: pod.Spec.NodeName}, true
}

// Resolve fills in pod name, namespace and ServiceAccount from the pod UID;
// fields it cannot resolve stay empty.
func Resolve(c *Caller, pods PodLookup) {
	if c.PodUID == "" || pods == nil || c.Source == SourceToken {
		return
	}
	if p, ok := pods.PodByUID(c.PodUID); ok {
		c.PodName, c.Namespace, c.ServiceAccount = p.Name, p.Namespace, p.ServiceAccount
	}
}
