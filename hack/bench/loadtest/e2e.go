package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/hack/bench/internal/results"
	"github.com/pipeguard/pipeguard/internal/testing/samplepods"
	"github.com/pipeguard/pipeguard/internal/testing/webhookconfig"
	"github.com/pipeguard/pipeguard/policy"
)

// e2eCommand measures pod creation through kube-apiserver for e2eTargets,
// each with two namespaces of its own, which only its admission check
// covers: e2e-<target>, with the allowance label, and e2e-unallowed-<target>,
// without it. e2eKinds are the kinds of pods it creates.
const e2eCommand, e2eNone, e2eVAP = "e2e", "none", "validatingadmissionpolicy"

var (
	e2eTargets = []string{e2eNone, TargetFloor, TargetPipeguard, e2eVAP, TargetGatekeeper}
	e2eKinds   = append(slices.Clone(results.PodKinds), results.KindDenied)
)

// e2eDenials is how each checking target's denial of a pod of the denied
// kind begins; the floor and no check admit every pod.
var e2eDenials = map[string]string{
	TargetPipeguard:  `admission webhook "pipeguard.bench.pipeguard.io" denied the request: [protected-pipe-mount] container "azuredisk" mounts \\.\pipe\csi-proxy-disk-v1`,
	e2eVAP:           `ValidatingAdmissionPolicy 'bench-csi-proxy' with binding 'bench-csi-proxy' denied request: a container mounts a csi-proxy pipe`,
	TargetGatekeeper: `admission webhook "gatekeeper.bench.pipeguard.io" denied the request: [` + gatekeeperConstraintName + `] container azuredisk mounts the CSI Proxy pipe`,
}

// vapRule is pipeguard's default rule as a ValidatingAdmissionPolicy in
// CEL. It knows the canonical spelling of a pipe path only.
const vapRule = `(has(namespaceObject.metadata.labels) && '` + policy.AllowLabel + `' in namespaceObject.metadata.labels && namespaceObject.metadata.labels['` + policy.AllowLabel + `'] == 'true') ||
!has(object.spec.volumes) || !object.spec.volumes.exists(v, has(v.hostPath) && v.hostPath.path.lowerAscii().startsWith('\\\\.\\pipe\\csi-proxy') &&
  object.spec.containers.exists(c, has(c.volumeMounts) && c.volumeMounts.exists(m, m.name == v.name) &&
    !(has(c.securityContext) && has(c.securityContext.windowsOptions) && has(c.securityContext.windowsOptions.hostProcess) && c.securityContext.windowsOptions.hostProcess)))`

// e2eMain runs the e2e subcommand (endToEnd).
func e2eMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loadtest "+e2eCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	rounds := fs.Int("rounds", 5, "rounds; each creates pods in every target's namespaces")
	jsonPath := fs.String("json", "", "also write the results as JSON to this file")
	list := fs.String("targets", strings.Join(e2eTargets, ","), "comma-separated admission checks, "+e2eNone+" among them")
	gatekeeper := fs.String("gatekeeper", filepath.Join("bin", "tools", "gatekeeper"), "Gatekeeper's executable, for the "+TargetGatekeeper+" target")
	err := fs.Parse(args)
	names := strings.Split(*list, ",")
	// In e2eTargets' order, none first.
	targets := slices.DeleteFunc(slices.Clone(e2eTargets), func(t string) bool { return !slices.Contains(names, t) })
	if err != nil || fs.NArg() > 0 || *rounds < 1 || len(targets) != len(names) || targets[0] != e2eNone {
		fmt.Fprintf(stderr, "loadtest e2e: --rounds must be positive, --targets a list of %s with %s among them, each once, and every setting is a flag\n",
			strings.Join(e2eTargets, ", "), e2eNone)
		return 2
	}
	runs, err := endToEnd(context.Background(), targets, *gatekeeper, *rounds, 100, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "loadtest e2e:", err)
		return 1
	}
	for _, kind := range e2eKinds {
		for _, t := range targets[1:] {
			fmt.Fprintf(stdout, "%-26s %-17s added p50 %.3f ms (median of per-round differences to no admission check)\n",
				t, kind, results.Median(results.AddedP50(runs, t, e2eNone, kind)))
		}
	}
	if *jsonPath != "" && !writeJSON(*jsonPath, results.EndToEnd{VAPRule: vapRule, Runs: runs}) {
		return 1
	}
	return 0
}

// endToEnd starts kube-apiserver and etcd from KUBEBUILDER_ASSETS with
// targets (in e2eTargets' order, none first; gatekeeper is Gatekeeper's
// executable), the webhooks under pipeguard's shipped matchConditions but
// the floor, and creates pods pods of each kind (e2ePod) in their
// namespaces by turns, pod by pod, round after round.
func endToEnd(ctx context.Context, targets []string, gatekeeper string, rounds, pods int, log io.Writer) (_ []*results.Pods, err error) {
	shipped, err := shippedPodConditions()
	if err != nil {
		return nil, err
	}
	gk := &gatekeeperEnv{}
	if slices.Contains(targets, TargetGatekeeper) { // its control plane, with its CRDs, template and constraint, serves all
		gk, err = startGatekeeperEnv(ctx, gatekeeper, 0, log)
	} else {
		gk.cfg, _, gk.stopCP, err = startControlPlane(nil)
	}
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, gk.stop()) }()
	c, err := crclient.New(gk.cfg, crclient.Options{})
	if err != nil {
		return nil, err
	}
	var pipeguard *child
	for _, t := range targets {
		switch t {
		case TargetFloor, TargetPipeguard:
			var srv *child
			if srv, err = startChild(ctx, t); err != nil {
				return nil, err
			}
			defer srv.Stop()
			if t == TargetPipeguard {
				pipeguard = srv
			}
			err = c.Create(ctx, webhookConfig(t, srv.serving, shipped))
		case TargetGatekeeper:
			var p *gatekeeperProc
			if p, err = gk.launch("", "webhook"); err != nil {
				return nil, err
			}
			defer func() { err = errors.Join(err, p.Stop()) }()
			err = c.Create(ctx, webhookConfig(t, p.serving, shipped))
		case e2eVAP:
			err = installVAP(ctx, c)
		}
		// Its namespaces, with the default ServiceAccount, which pods name.
		for ns, labels := range map[string]map[string]string{"e2e-" + t: {policy.AllowLabel: "true"}, "e2e-unallowed-" + t: nil} {
			err = errors.Join(err, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}),
				c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}))
		}
		if err != nil {
			return nil, fmt.Errorf("setting up the %s target: %w", t, err)
		}
	}
	seq := 0
	create := func(t, kind string) (time.Duration, error) { seq++; return e2eCreate(ctx, c, t, kind, seq) }
	var out []*results.Pods
	// Round -1, unmeasured, warms every path up (connections, caches) and
	// retries each pod until every check is in force, with the namespaces
	// in its caches: Gatekeeper may take minutes to start. Nothing shows
	// the floor in force, but it is registered first. Within a round the
	// targets take turns pod by pod, their order rotating, so that all see
	// the same moments of the control plane.
	deadline := time.Now().Add(gatekeeperStartTimeout)
	for round := -1; round < rounds; round++ {
		lat := map[string][]time.Duration{}
		for j := range pods {
			for _, kind := range e2eKinds {
				for k := range targets {
					t := targets[(j+k)%len(targets)]
					d, err := create(t, kind)
					for ; err != nil && round < 0 && time.Now().Before(deadline); d, err = create(t, kind) {
						time.Sleep(100 * time.Millisecond)
					}
					if err != nil {
						return nil, fmt.Errorf("%s, round %d (round 0 is the warm-up, which waits up to %v for every check to be in force): %w", t, round+1, gatekeeperStartTimeout, err)
					}
					lat[t+" "+kind] = append(lat[t+" "+kind], d)
				}
			}
		}
		for _, t := range targets {
			for _, kind := range e2eKinds {
				if l := lat[t+" "+kind]; round >= 0 {
					out = append(out, &results.Pods{Target: t, Round: round, Kind: kind, Pods: len(l), P50: results.Quantile(l, 0.5)})
					fmt.Fprintf(log, "round %d %-26s %-17s p50 %.3f ms\n", round+1, t, kind, out[len(out)-1].P50)
				}
			}
		}
	}
	if pipeguard == nil {
		return out, nil
	}
	// Stopped, pipeguard's fail-closed webhook refuses CSI node pods, while
	// ordinary hostPath pods are still admitted: the API server does not
	// call it for them.
	_ = pipeguard.Stop() // once it returns, the process is gone
	if _, err := create(TargetPipeguard, "hostpath"); err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		return nil, fmt.Errorf("with pipeguard's server stopped, a CSI node pod was not refused for want of its webhook: %v", err)
	}
	if _, err := create(TargetPipeguard, results.KindOrdinaryHostPath); err != nil {
		return nil, fmt.Errorf("with pipeguard's server stopped, an %s pod was not admitted, so its webhook was called for it: %w", results.KindOrdinaryHostPath, err)
	}
	fmt.Fprintf(log, "pipeguard stopped: %s pods still admitted, hostpath pods refused\n", results.KindOrdinaryHostPath)
	return out, nil
}

// e2eCreate creates a pod of kind for target t and returns how long the API
// server took to answer. A pod of the denied kind goes to t's namespace
// without the allowance, where a checking target must refuse it with 403
// and its own message (admitting it is an error, not a sample) and the
// floor and no check admit it; every other pod must be admitted.
func e2eCreate(ctx context.Context, c crclient.Client, t, kind string, seq int) (time.Duration, error) {
	ns, want := "e2e-"+t, ""
	if kind == results.KindDenied {
		ns, want = "e2e-unallowed-"+t, e2eDenials[t]
	}
	p := e2ePod(kind, ns, seq)
	start := time.Now()
	err := c.Create(ctx, p)
	took := time.Since(start)
	if want != "" && err == nil {
		return 0, fmt.Errorf("%s admitted pod %s/%s, which mounts a CSI Proxy pipe without an allowance; it must deny it", t, ns, p.Name)
	} else if want == "" && err != nil || want != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want)) {
		return 0, fmt.Errorf("creating pod %s/%s (want %s): %w", ns, p.Name, cmp.Or(want, "admitted"), err)
	}
	return took, nil
}

// shippedPodConditions returns the matchConditions of pipeguard's shipped
// pods webhook, from config/webhook/manifests.yaml in the repository that
// holds the working directory (its root under make bench, a package under
// go test).
func shippedPodConditions() ([]admissionregistrationv1.MatchCondition, error) {
	const rel, shippedPodsWebhook = "config/webhook/manifests.yaml", "pods.pipeguard.io"
	out, err := exec.Command("go", "env", "GOMOD").Output()
	file := filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), filepath.FromSlash(rel))
	if _, statErr := os.Stat(file); err != nil || statErr != nil {
		return nil, fmt.Errorf("cannot find pipeguard's %s (%w); run from the pipeguard repository", rel, errors.Join(err, statErr))
	}
	cfg, err := webhookconfig.Load(file)
	if err != nil {
		return nil, fmt.Errorf("reading pipeguard's webhook configuration: %w", err)
	}
	for _, w := range cfg.Webhooks {
		if w.Name == shippedPodsWebhook && len(w.MatchConditions) > 0 {
			return w.MatchConditions, nil
		}
	}
	return nil, fmt.Errorf("%s: no webhook %s with matchConditions", file, shippedPodsWebhook)
}

// e2ePod is a CSI node pod whose containers mount csi-proxy pipes (not
// HostProcess, so that only its namespace's label can allow it), a log
// shipper that mounts ordinary host directories, or an ordinary pod. Its
// volumes' names end in seq, so that no decision cache answers it.
func e2ePod(kind, ns string, seq int) *corev1.Pod {
	p := samplepods.Plain()
	switch kind {
	case "hostpath", results.KindDenied:
		p = samplepods.CSINode()
		p.Spec.Containers[2].SecurityContext = nil
	case results.KindOrdinaryHostPath: // a log shipper as a DaemonSet runs it, reading Linux and Windows logs
		p = logShipperPod()
		for _, v := range [][2]string{{"varlog", "/var/log"}, {"containers", "/var/lib/docker/containers"}} {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: v[0], VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: v[1]}}})
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: v[0], MountPath: v[1], ReadOnly: true})
		}
	}
	p.Name, p.Namespace = fmt.Sprintf("%s-%06d", kind, seq), ns
	p.Spec.ServiceAccountName, p.Spec.AutomountServiceAccountToken = "default", ptr.To(false)
	renameVolumes(p, fmt.Sprintf("-%06d", seq), func(corev1.Volume) bool { return true })
	return p
}

// podCreation is what every admission check of e2e covers: creating pods.
var podCreation = admissionregistrationv1.RuleWithOperations{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
	Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
}

// webhookConfig registers a target's webhook for pod creation in its
// namespaces, under shipped, pipeguard's matchConditions, but the floor.
func webhookConfig(name string, at serving, shipped []admissionregistrationv1.MatchCondition) *admissionregistrationv1.ValidatingWebhookConfiguration {
	if name == TargetFloor {
		shipped = nil
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-" + name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    name + ".bench.pipeguard.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &at.URL, CABundle: at.CAPEM},
			Rules:                   []admissionregistrationv1.RuleWithOperations{podCreation},
			NamespaceSelector:       namespaceSelector(name),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
			MatchConditions:         shipped,
		}},
	}
}

// namespaceSelector selects a target's namespaces.
func namespaceSelector(target string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"e2e-" + target, "e2e-unallowed-" + target}}}}
}

func installVAP(ctx context.Context, c crclient.Client) error {
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-csi-proxy"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
				{RuleWithOperations: podCreation},
			}},
			Validations: []admissionregistrationv1.Validation{{Expression: vapRule, Reason: ptr.To(metav1.StatusReasonForbidden),
				Message: "a container mounts a csi-proxy pipe but is not HostProcess and its namespace is not allowed"}},
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
	return errors.Join(c.Create(ctx, vap), c.Create(ctx, binding))
}
