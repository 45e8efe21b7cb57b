package anchor

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/pipeguard/pipeguard/agent/audit"
)

// Read returns the anchor of node from its Lease in namespace (empty:
// DefaultNamespace). A missing Lease is an error: verifying against an
// anchor that is not there must not pass as an unanchored verification.
func Read(ctx context.Context, c kubernetes.Interface, namespace, node string) (*audit.Anchor, error) {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	name := audit.AnchorLeaseName(node)
	where := "Lease " + namespace + "/" + name
	l, err := c.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("no audit anchor for node %q: %s does not exist; the agent on that node publishes it when it runs with --kubeconfig and --node-name", node, where)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the audit anchor of node %q (%s): %w", node, where, err)
	}
	return audit.ParseAnchor(node, where, l.Annotations)
}

// ReadKubeconfig reads the anchor of node with the credentials of a
// kubeconfig file.
func ReadKubeconfig(ctx context.Context, kubeconfig, namespace, node string) (*audit.Anchor, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return Read(ctx, c, namespace, node)
}
