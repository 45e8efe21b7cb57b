package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/hack/bench/internal/results"
	"github.com/pipeguard/pipeguard/internal/samplepods"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook/prefilter"
)

// e2eCommand measures pod creation through kube-apiserver.
const e2eCommand = "e2e"

// The end-to-end targets: each has a namespace of its own, which only its
// admission check covers.
const (
	e2eNone = "none"
	e2eVAP  = "validatingadmissionpolicy"
)

var e2eTargets = []string{e2eNone, TargetFloor, TargetPipeguard, e2eVAP}

// vapRule is pipeguard's default rule as a ValidatingAdmissionPolicy in
// CEL: a hostPath volume whose path names a csi-proxy pipe may be mounted
// only by a privileged or HostProcess container, or in a namespace with the
// allowance label. It knows the canonical spelling of a pipe path only;
// pipeguard also normalizes the others (see pipepath).
const vapRule = `(has(namespaceObject.metadata.labels) && '` + policy.AllowLabel + `' in namespaceObject.metadata.labels && namespaceObject.metadata.labels['` + policy.AllowLabel + `'] == 'true') ||
!has(object.spec.volumes) || !object.spec.volumes.exists(v, has(v.hostPath) && v.hostPath.path.lowerAscii().startsWith('\\\\.\\pipe\\csi-proxy') &&
  object.spec.containers.exists(c, has(c.volumeMounts) && c.volumeMounts.exists(m, m.name == v.name) &&
    !(has(c.securityContext) && ((has(c.securityContext.privileged) && c.securityContext.privileged) ||
      (has(c.securityContext.windowsOptions) && has(c.securityContext.windowsOptions.hostProcess) && c.securityContext.windowsOptions.hostProcess)))))`

// e2eMain starts kube-apiserver and etcd from KUBEBUILDER_ASSETS, the floor
// and pipeguard as webhooks and the ValidatingAdmissionPolicy, each for a
// namespace of its own, and creates pods in the namespaces by turns, pod by
// pod, round after round: CSI node pods (with hostPath pipe mounts, allowed by the
// namespace's label), pods without a host path, and log shippers whose
// hostPath volumes are ordinary directories. pipeguard is registered with
// the matchConditions it ships with, so the API server calls it only for
// pods that could name a pipe; the floor has none and is called for every
// pod.
func e2eMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loadtest "+e2eCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	rounds := fs.Int("rounds", 5, "rounds; each creates pods in every target's namespace")
	jsonPath := fs.String("json", "", "also write the results as JSON to this file")
	if fs.Parse(args) != nil || fs.NArg() > 0 || *rounds < 1 {
		fmt.Fprintln(stderr, "loadtest e2e: --rounds must be positive and every setting is a flag")
		return 2
	}
	runs, err := endToEnd(context.Background(), *rounds, e2ePods, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "loadtest e2e:", err)
		return 1
	}
	for _, kind := range results.PodKinds {
		for _, t := range e2eTargets[1:] {
			fmt.Fprintf(stdout, "%-26s %-11s added p50 %.3f ms (median of per-round differences to no admission check)\n",
				t, kind, results.Median(results.AddedP50(runs, t, e2eNone, kind)))
		}
	}
	fmt.Fprintf(stdout, "%-26s %-11s added p50 %.3f ms, p50 %.3f× no admission check's (medians of per-round values; its matchConditions skip the webhook)\n",
		TargetPipeguard, results.KindOrdinaryHostPath,
		results.Median(results.AddedP50(runs, TargetPipeguard, e2eNone, results.KindOrdinaryHostPath)),
		results.Median(results.P50Ratios(runs, TargetPipeguard, e2eNone, results.KindOrdinaryHostPath)))
	if *jsonPath != "" && !writeJSON(*jsonPath, results.EndToEnd{VAPRule: vapRule, Runs: runs}) {
		return 1
	}
	return 0
}

// e2ePods is how many pods of each kind e2e creates per target and round.
const e2ePods = 100

func endToEnd(ctx context.Context, rounds, pods int, log io.Writer) (_ []*results.Pods, err error) {
	cfg, _, stopCP, err := startControlPlane(nil)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, stopCP()) }()
	c, err := crclient.New(cfg, crclient.Options{})
	if err != nil {
		return nil, err
	}
	shipped, err := shippedPodConditions()
	if err != nil {
		return nil, err
	}
	children := map[string]*child{}
	for _, name := range []string{TargetFloor, TargetPipeguard} {
		srv, err := startChild(ctx, name)
		if err != nil {
			return nil, err
		}
		defer srv.Stop()
		children[name] = srv
		var conds []admissionregistrationv1.MatchCondition
		if name == TargetPipeguard {
			conds = shipped
		}
		if err := c.Create(ctx, webhookConfig(name, srv.URL, srv.CAPEM, conds)); err != nil {
			return nil, err
		}
	}
	if err := installVAP(ctx, c); err != nil {
		return nil, err
	}
	for _, t := range e2eTargets {
		if err := createNamespace(ctx, c, "e2e-"+t, map[string]string{policy.AllowLabel: "true"}); err != nil {
			return nil, err
		}
	}
	if err := awaitChecks(ctx, c); err != nil {
		return nil, err
	}
	var out []*results.Pods
	seq := 0
	// Round -1 warms every path up (connections, caches), unmeasured.
	// Within a round the targets take turns pod by pod, their order
	// rotating, so that all see the same moments of the control plane.
	for round := -1; round < rounds; round++ {
		lat := map[string][]time.Duration{}
		for j := range pods {
			for _, kind := range results.PodKinds {
				for k := range e2eTargets {
					t := e2eTargets[(j+k)%len(e2eTargets)]
					p := e2ePod(kind, "e2e-"+t, seq)
					seq++
					start := time.Now()
					if err := c.Create(ctx, p); err != nil {
						return nil, fmt.Errorf("%s, round %d: creating pod %s: %w", t, round+1, p.Name, err)
					}
					lat[t+" "+kind] = append(lat[t+" "+kind], time.Since(start))
				}
			}
		}
		if round < 0 {
			continue
		}
		for _, t := range e2eTargets {
			for _, kind := range results.PodKinds {
				l := lat[t+" "+kind]
				r := &results.Pods{Target: t, Round: round, Kind: kind, Pods: len(l), P50: results.Quantile(l, 0.5)}
				fmt.Fprintf(log, "round %d %-26s %-11s p50 %.3f ms\n", round+1, t, kind, r.P50)
				out = append(out, r)
			}
		}
	}
	if err := confirmSkipped(ctx, c, children[TargetPipeguard], seq); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "pipeguard stopped: %s pods still admitted, hostpath pods refused\n", results.KindOrdinaryHostPath)
	return out, nil
}

// shippedPodsWebhook is the webhook of config/webhook/manifests.yaml that
// reviews pods.
const shippedPodsWebhook = "pods.pipeguard.io"

// shippedPodConditions returns the matchConditions with which pipeguard's
// shipped configuration sends pods to its webhook, read from
// config/webhook/manifests.yaml in the repository holding the working
// directory.
func shippedPodConditions() ([]admissionregistrationv1.MatchCondition, error) {
	const rel = "config/webhook/manifests.yaml"
	file, err := repoFile(rel)
	if err != nil {
		return nil, err
	}
	cfg, err := prefilter.Load(file)
	if err != nil {
		return nil, fmt.Errorf("reading pipeguard's webhook configuration: %w", err)
	}
	for _, w := range cfg.Webhooks {
		if w.Name == shippedPodsWebhook {
			if len(w.MatchConditions) == 0 {
				return nil, fmt.Errorf("%s: webhook %s has no matchConditions", file, shippedPodsWebhook)
			}
			return w.MatchConditions, nil
		}
	}
	return nil, fmt.Errorf("%s: no webhook %s", file, shippedPodsWebhook)
}

// repoFile finds rel in the working directory or the nearest directory
// above it that holds a go.mod: the pipeguard repository, from its root
// (make bench) or a package directory (go test).
func repoFile(rel string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			file := filepath.Join(dir, filepath.FromSlash(rel))
			if _, err := os.Stat(file); err != nil {
				return "", fmt.Errorf("cannot read pipeguard's %s: %w", rel, err)
			}
			return file, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("cannot find pipeguard's %s: no go.mod in %s or above it; run from the pipeguard repository", rel, wd)
		}
	}
}

// confirmSkipped stops pipeguard's server and shows that the API server
// does not call it for ordinary hostPath pods: its webhook fails closed, so
// a CSI node pod is refused once it is gone, while an ordinary hostPath pod
// is still admitted in the same namespace.
func confirmSkipped(ctx context.Context, c crclient.Client, pipeguard *child, seq int) error {
	ns := "e2e-" + TargetPipeguard
	_ = pipeguard.Stop()
	deadline := time.Now().Add(30 * time.Second)
	for ; ; seq++ {
		err := c.Create(ctx, e2ePod("hostpath", ns, seq))
		if err != nil && strings.Contains(err.Error(), "failed calling webhook") {
			break
		}
		if err != nil {
			return fmt.Errorf("with pipeguard's server stopped, creating a CSI node pod: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pipeguard's webhook still admitted CSI node pods 30s after its server stopped")
		}
		time.Sleep(100 * time.Millisecond)
	}
	seq++
	if err := c.Create(ctx, e2ePod(results.KindOrdinaryHostPath, ns, seq)); err != nil {
		return fmt.Errorf("with pipeguard's server stopped, an %s pod was not admitted, so its webhook was called for it: %w", results.KindOrdinaryHostPath, err)
	}
	return nil
}

// e2ePod is a CSI node pod whose containers mount csi-proxy pipes (allowed
// by its namespace's label, not by HostProcess, so that pipeguard decides
// with rego or its cache), a log shipper that mounts ordinary host
// directories, or an ordinary pod.
func e2ePod(kind, ns string, seq int) *corev1.Pod {
	p := samplepods.Plain()
	switch kind {
	case "hostpath":
		p = samplepods.CSINode()
		p.Spec.Containers[2].SecurityContext = nil
	case results.KindOrdinaryHostPath:
		p = e2eLogShipper()
	}
	p.Name, p.Namespace = fmt.Sprintf("%s-%06d", kind, seq), ns
	p.Spec.ServiceAccountName, p.Spec.AutomountServiceAccountToken = "default", ptr.To(false)
	return p
}

// e2eLogShipper is a log shipper as a DaemonSet runs it: it reads the
// node's logs through hostPath volumes, the Linux directories and the
// Windows one, none of which can name a pipe.
func e2eLogShipper() *corev1.Pod {
	p := logShipperPod()
	for _, v := range [][2]string{{"varlog", "/var/log"}, {"containers", "/var/lib/docker/containers"}} {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: v[0], VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: v[1]}}})
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: v[0], MountPath: v[1], ReadOnly: true})
	}
	return p
}

// createNamespace creates a namespace with its default ServiceAccount,
// which pods name.
func createNamespace(ctx context.Context, c crclient.Client, name string, labels map[string]string) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}); err != nil {
		return err
	}
	return crclient.IgnoreAlreadyExists(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}))
}

// podCreation is what every admission check of e2e covers: creating pods.
var podCreation = admissionregistrationv1.RuleWithOperations{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
	Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
}

// webhookConfig registers a target's webhook for pod creation in its
// namespace; conds, if any, are the matchConditions under which the API
// server calls it.
func webhookConfig(name, url string, caPEM []byte, conds []admissionregistrationv1.MatchCondition) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-" + name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    name + ".bench.pipeguard.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			Rules:                   []admissionregistrationv1.RuleWithOperations{podCreation},
			NamespaceSelector:       namespaceSelector(name),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
			MatchConditions:         conds,
		}},
	}
}

// namespaceSelector selects a target's namespace and its probe namespace
// (see awaitChecks).
func namespaceSelector(target string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"e2e-" + target, "e2e-probe-" + target}}}}
}

func installVAP(ctx context.Context, c crclient.Client) error {
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-csi-proxy"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
				{RuleWithOperations: podCreation},
			}},
			Validations: []admissionregistrationv1.Validation{{Expression: vapRule, Message: "a container mounts a csi-proxy pipe but is not privileged or HostProcess and its namespace is not allowed"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-csi-proxy"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        vap.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: namespaceSelector(e2eVAP)},
		},
	}
	if err := c.Create(ctx, vap); err != nil {
		return err
	}
	return c.Create(ctx, binding)
}

// awaitChecks waits until pipeguard and the ValidatingAdmissionPolicy deny
// a CSI node pod in their probe namespaces, which lack the allowance
// label, so that both are in force before anything is measured. The floor
// allows everything, so nothing shows it in force; its configuration was
// created before the others'.
func awaitChecks(ctx context.Context, c crclient.Client) error {
	for _, t := range []string{TargetPipeguard, e2eVAP} {
		ns := "e2e-probe-" + t
		if err := createNamespace(ctx, c, ns, nil); err != nil {
			return err
		}
		deadline := time.Now().Add(30 * time.Second)
		for i := 0; ; i++ {
			err := c.Create(ctx, e2ePod("hostpath", ns, i))
			if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s did not deny a CSI node pod in an unlabelled namespace within 30s (last answer: %v)", t, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}
