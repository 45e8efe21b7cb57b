package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
	"github.com/pipeguard/pipeguard/webhook/pipepath"
)

// baseline is pipeguard's default policy written directly in Go: a mount of
// a csi-proxy* pipe (or of a path that cannot be resolved but looks like a
// pipe) is denied unless the container is privileged or HostProcess or the
// namespace has pipeguard.io/allow-csi-proxy=true. It decodes, normalizes
// paths (pipepath.Classify), looks up the namespace, logs and reports
// metrics as pipeguard's handler does, so that the two differ by the cost
// of building the rego input and evaluating rego. It reviews CREATE and
// UPDATE alike: unlike pipeguard it does not narrow an UPDATE to new mounts.
type baseline struct {
	namespaces webhook.NamespaceLabels
	observer   webhook.Observer
}

var _ admission.Handler = (*baseline)(nil)

// Handle implements admission.Handler.
func (b *baseline) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	resp, decision := b.review(ctx, req)
	resp.UID = req.UID
	b.observer.ObserveReview(ctx, webhook.Review{
		Kind: req.Kind.Kind, Operation: string(req.Operation), Decision: decision, Duration: time.Since(start),
	})
	return resp
}

func (b *baseline) review(ctx context.Context, req admission.Request) (admission.Response, string) {
	log := logr.FromContextOrDiscard(ctx).WithValues(
		"uid", req.UID, "kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name,
		"operation", req.Operation, "user", req.UserInfo.Username)
	gk := schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind}
	if !webhook.Supported(gk) || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return admission.Allowed(""), "allow"
	}
	raw := req.Object.Raw
	if len(raw) == 0 {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("%s request carries no object", req.Operation)), "error"
	}
	if !bytes.Contains(raw, []byte(`"hostPath"`)) && !bytes.Contains(raw, []byte(`"local"`)) && !bytes.Contains(raw, []byte(`\u`)) {
		return admission.Allowed(""), "allow"
	}
	spec, pv, err := decodeSpec(gk, raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("cannot decode request.object as %s: %v", req.Kind, err)), "error"
	}
	var msgs []string
	switch {
	case pv != nil:
		msgs = pvViolations(pv)
	case spec != nil:
		labels, _, err := b.namespaces.NamespaceLabels(ctx, req.Namespace)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err), "error"
		}
		msgs = podViolations(spec, req.Namespace, labels[policy.AllowLabel] == "true")
	}
	decision := "allow"
	resp := admission.Allowed("")
	if len(msgs) > 0 {
		sort.Strings(msgs)
		decision = "deny"
		resp = admission.Denied(strings.Join(msgs, "\n"))
		log.Info("denied", "violations", msgs)
	}
	resp.AuditAnnotations = map[string]string{"decision": decision, "policy-generation": "0"}
	return resp, decision
}

// podViolations applies the default rule to every container × host path
// mount.
func podViolations(spec *podSpec, namespace string, namespaceAllowed bool) []string {
	volumes := map[string]string{}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			volumes[v.Name] = v.HostPath.Path
		}
	}
	if len(volumes) == 0 {
		return nil
	}
	podHP := spec.SecurityContext != nil && spec.SecurityContext.WindowsOptions != nil &&
		spec.SecurityContext.WindowsOptions.HostProcess != nil && *spec.SecurityContext.WindowsOptions.HostProcess
	var msgs []string
	check := func(container string, vms []volumeMount, sc *securityContext) {
		for _, vm := range vms {
			path, ok := volumes[vm.Name]
			if !ok {
				continue
			}
			// Every mount is classified, as pipeguard does to build its facts.
			r, protected := classify(path, vm.SubPath, vm.SubPathExpr)
			if protected && !namespaceAllowed && !privileged(sc) && !hostProcess(sc, podHP) {
				msgs = append(msgs, fmt.Sprintf("[protected-pipe-mount] container %q mounts %s through volume %q, but it is not privileged or HostProcess and namespace %q is not allowed; to allow it, label the namespace %s=true, or run the container as privileged or HostProcess",
					container, r.Normalized, vm.Name, namespace, policy.AllowLabel))
			}
		}
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		check(c.Name, c.VolumeMounts, c.SecurityContext)
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		check(c.Name, c.VolumeMounts, c.SecurityContext)
	}
	for i := range spec.EphemeralContainers {
		c := &spec.EphemeralContainers[i]
		check(c.Name, c.VolumeMounts, c.SecurityContext)
	}
	return msgs
}

func pvViolations(pv *persistentVolume) []string {
	path := ""
	switch {
	case pv.Spec.HostPath != nil:
		path = pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		path = pv.Spec.Local.Path
	}
	if r, protected := classify(path, "", ""); protected {
		return []string{fmt.Sprintf("[protected-pipe-pv] PersistentVolume %q points at %s", pv.Metadata.Name, r.Normalized)}
	}
	return nil
}

// classify normalizes the path a mount reaches as pipeguard does and says
// whether the default policy protects it.
func classify(volumePath, subPath, subPathExpr string) (pipepath.Result, bool) {
	raw := volumePath
	if subPath != "" {
		raw = pipepath.JoinSubPath(volumePath, subPath)
	}
	if subPathExpr != "" {
		raw = pipepath.JoinSubPath(volumePath, subPathExpr)
	}
	r := pipepath.Classify(raw)
	if subPathExpr != "" && (r.Class != pipepath.NotPipe || pipepath.Classify(volumePath).Class != pipepath.NotPipe) {
		r = pipepath.Result{Class: pipepath.Ambiguous, Normalized: strconv.Quote(raw)}
	}
	return r, r.Class == pipepath.Ambiguous || (r.Class == pipepath.Pipe && strings.HasPrefix(r.Pipe, "csi-proxy"))
}

func privileged(sc *securityContext) bool {
	return sc != nil && sc.Privileged != nil && *sc.Privileged
}

func hostProcess(sc *securityContext, pod bool) bool {
	if sc != nil && sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil {
		return *sc.WindowsOptions.HostProcess
	}
	return pod
}
