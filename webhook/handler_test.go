package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

const diskPipe = `\\.\pipe\csi-proxy-disk-v1`

// Namespaces known to every test: "csi" carries the allowance label.
var testNamespaces = webhook.StaticNamespaces{
	"team-a": {"team": "a"},
	"csi":    {policy.AllowLabel: "true"},
}

func newHandler(t testing.TB, policies ...v1alpha1.PipeAccessPolicy) *webhook.Handler {
	t.Helper()
	e, err := policy.NewEngine(context.Background(), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(policies) > 0 {
		if _, err := e.Load(context.Background(), policies); err != nil {
			t.Fatal(err)
		}
	}
	return webhook.NewHandler(webhook.Options{Engine: e, Namespaces: testNamespaces})
}

func boolPtr(b bool) *bool { return &b }

// pod returns a pod in team-a with one container "app" mounting volume
// "pipe" (a hostPath at path) at C:\pipe.
func pod(path string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a"},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "pipe", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}},
			Containers: []corev1.Container{{
				Name: "app", Image: "app",
				VolumeMounts: []corev1.VolumeMount{{Name: "pipe", MountPath: `\\.\pipe\csi-proxy-disk-v1`}},
			}},
		},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func inNamespace(ns string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Namespace = ns }
}

func mustJSON(t testing.TB, obj any) []byte {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func request(t testing.TB, op admissionv1.Operation, gvk metav1.GroupVersionKind, ns, name string, obj any) admission.Request {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "uid-1", Kind: gvk, Namespace: ns, Name: name, Operation: op,
		Object: runtime.RawExtension{Raw: raw},
	}}
}

var podKind = metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}

func podRequest(t testing.TB, p *corev1.Pod) admission.Request {
	return request(t, admissionv1.Create, podKind, p.Namespace, p.Name, p)
}

// expectation of a response: allowed or not, HTTP code, and a substring
// of the message a user reads.
type want struct {
	allowed bool
	code    int32
	message string
}

func check(t *testing.T, resp admission.Response, w want) {
	t.Helper()
	if resp.UID != "uid-1" {
		t.Errorf("response UID %q, want the request's", resp.UID)
	}
	if resp.Allowed != w.allowed {
		msg := ""
		if resp.Result != nil {
			msg = resp.Result.Message
		}
		t.Fatalf("allowed = %v, want %v (message %q)", resp.Allowed, w.allowed, msg)
	}
	if w.allowed {
		return
	}
	if resp.Result == nil || resp.Result.Code != w.code {
		t.Fatalf("result %+v, want code %d", resp.Result, w.code)
	}
	if !strings.Contains(resp.Result.Message, w.message) {
		t.Fatalf("message %q\nwant it to contain %q", resp.Result.Message, w.message)
	}
}

func denied(message string) want { return want{code: http.StatusForbidden, message: message} }

var allowed = want{allowed: true}

// TestSpellings: every spelling of a CSI Proxy pipe from DESIGN.md is denied
// for an unprivileged container in an unlabelled namespace.
func TestSpellings(t *testing.T) {
	h := newHandler(t)
	cases := map[string]string{
		"canonical":                   `\\.\pipe\csi-proxy-disk-v1`,
		"upper case":                  `\\.\PIPE\CSI-PROXY-DISK-V1`,
		"mixed case":                  `\\.\Pipe\Csi-Proxy-Disk-V1`,
		"forward slashes":             `//./pipe/csi-proxy-disk-v1`,
		"forward slashes upper case":  `//./PIPE/CSI-PROXY-DISK-V1`,
		"mixed separators":            `\\./pipe\csi-proxy-disk-v1`,
		"doubled separators":          `\\.\pipe\\csi-proxy-disk-v1`,
		"win32 file namespace":        `\\?\pipe\csi-proxy-disk-v1`,
		"nt object namespace":         `\??\pipe\csi-proxy-disk-v1`,
		"localhost UNC":               `\\localhost\pipe\csi-proxy-disk-v1`,
		"loopback UNC":                `\\127.0.0.1\pipe\csi-proxy-disk-v1`,
		"device path":                 `\Device\NamedPipe\csi-proxy-disk-v1`,
		"dot segment":                 `\\.\pipe\.\csi-proxy-disk-v1`,
		"dot-dot segment":             `\\.\pipe\x\..\csi-proxy-disk-v1`,
		"leading and trailing spaces": `  \\.\pipe\csi-proxy-disk-v1  `,
		"trailing dots":               `\\.\pipe\csi-proxy-disk-v1..`,
		"trailing dot and space":      `\\.\pipe\csi-proxy-disk-v1. `,
		"other pipe version":          `\\.\pipe\csi-proxy-filesystem-v1beta1`,
	}
	for name, path := range cases {
		t.Run(name, func(t *testing.T) {
			check(t, h.Handle(context.Background(), podRequest(t, pod(path))),
				denied(`container "app" mounts \\.\pipe\csi-proxy-`))
		})
	}
}

// TestAmbiguousPaths: pipe-like paths that cannot be resolved are denied as
// protected, whatever the policy's patterns.
func TestAmbiguousPaths(t *testing.T) {
	h := newHandler(t)
	cases := map[string]struct {
		pod *corev1.Pod
	}{
		"pipe namespace root":                   {pod(`\\.\pipe\`)},
		"runs of separators":                    {pod(`\\.\\pipe\\\csi-proxy-disk-v1`)},
		"pipe namespace root without separator": {pod(`\\.\pipe`)},
		"subPathExpr on a pipe": {pod(`\\.\pipe\`, func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts[0].SubPathExpr = "$(PIPE)"
		})},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			check(t, h.Handle(context.Background(), podRequest(t, tc.pod)), denied(`[ambiguous-pipe-path] container "app" mounts`))
		})
	}
}

// TestHoles covers the ways around a naive check listed in DESIGN.md.
func TestHoles(t *testing.T) {
	h := newHandler(t)
	cases := map[string]struct {
		pod  *corev1.Pod
		want want
	}{
		"readOnly does not make a pipe mount safe": {
			pod:  pod(diskPipe, func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].ReadOnly = true }),
			want: denied(`container "app" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe", but it is not HostProcess and namespace "team-a" is not allowed; to allow it, label the namespace pipeguard.io/allow-csi-proxy=true, or run the container as HostProcess`),
		},
		"subPath into the pipe namespace": {
			pod: pod(`\\.\pipe\`, func(p *corev1.Pod) {
				p.Spec.Containers[0].VolumeMounts[0].SubPath = "csi-proxy-disk-v1"
			}),
			want: denied(`[protected-pipe-mount] container "app" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe"`),
		},
		"init container": {
			pod: pod(diskPipe, func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "setup", VolumeMounts: p.Spec.Containers[0].VolumeMounts}}
				p.Spec.Containers[0].VolumeMounts = nil
			}),
			want: denied(`container "setup" (initContainer) mounts \\.\pipe\csi-proxy-disk-v1`),
		},
		"ephemeral container in a new pod": {
			pod: pod(diskPipe, func(p *corev1.Pod) {
				p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", VolumeMounts: p.Spec.Containers[0].VolumeMounts}}}
				p.Spec.Containers[0].VolumeMounts = nil
			}),
			want: denied(`container "debugger" (ephemeralContainer) mounts`),
		},
		"one volume, an allowed and a non-allowed container": {
			pod: pod(diskPipe, func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: boolPtr(true)}}
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar", VolumeMounts: p.Spec.Containers[0].VolumeMounts})
			}),
			want: denied(`container "sidecar" mounts`),
		},
		"container opts out of the pod's hostProcess": {
			pod: pod(diskPipe, func(p *corev1.Pod) {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: boolPtr(true)}}
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: boolPtr(false)}}
			}),
			want: denied(`container "app" mounts`),
		},
		"privileged: false is not an allowance": {
			pod: pod(diskPipe, func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: boolPtr(false)}
			}),
			want: denied(`container "app" mounts`),
		},
		"the label must be on the namespace, not the pod": {
			pod:  pod(diskPipe, func(p *corev1.Pod) { p.Labels = map[string]string{policy.AllowLabel: "true"} }),
			want: denied(`namespace "team-a" is not allowed`),
		},
		"unknown namespace has no labels": {
			pod:  pod(diskPipe, inNamespace("nowhere")),
			want: denied(`namespace "nowhere" is not allowed`),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			check(t, h.Handle(context.Background(), podRequest(t, tc.pod)), tc.want)
		})
	}
}

func TestAllowances(t *testing.T) {
	h := newHandler(t)
	cases := map[string]*corev1.Pod{
		"HostProcess container": pod(diskPipe, func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: boolPtr(true)}}
		}),
		"HostProcess pod": pod(diskPipe, func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: boolPtr(true)}}
		}),
		"labelled namespace":          pod(diskPipe, inNamespace("csi")),
		"unprotected pipe":            pod(`\\.\pipe\docker_engine`),
		"ordinary host path":          pod(`C:\var\lib\kubelet`),
		"pipe volume mounted by none": pod(diskPipe, func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts = nil }),
		"no host path at all": pod(diskPipe, func(p *corev1.Pod) {
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
		}),
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			check(t, h.Handle(context.Background(), podRequest(t, p)), allowed)
		})
	}
}

// TestWorkloads: the pod template of every workload kind is reviewed.
func TestWorkloads(t *testing.T) {
	h := newHandler(t)
	bad := pod(diskPipe)
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}, Spec: bad.Spec}
	meta := metav1.ObjectMeta{Name: "w", Namespace: "team-a"}
	cases := map[string]struct {
		gvk metav1.GroupVersionKind
		obj any
	}{
		"Deployment":            {metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Template: tmpl}}},
		"ReplicaSet":            {metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}, &appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Template: tmpl}}},
		"StatefulSet":           {metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Template: tmpl}}},
		"DaemonSet":             {metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}, &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Template: tmpl}}},
		"Job":                   {metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{Template: tmpl}}},
		"CronJob":               {metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: "CronJob"}, &batchv1.CronJob{ObjectMeta: meta, Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}}}},
		"ReplicationController": {metav1.GroupVersionKind{Version: "v1", Kind: "ReplicationController"}, &corev1.ReplicationController{ObjectMeta: meta, Spec: corev1.ReplicationControllerSpec{Template: &tmpl}}},
		"PodTemplate":           {metav1.GroupVersionKind{Version: "v1", Kind: "PodTemplate"}, &corev1.PodTemplate{ObjectMeta: meta, Template: tmpl}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
				check(t, h.Handle(context.Background(), request(t, op, tc.gvk, "team-a", "w", tc.obj)), denied(`container "app" mounts \\.\pipe\csi-proxy-disk-v1`))
			}
		})
	}
	t.Run("ReplicationController without template", func(t *testing.T) {
		rc := &corev1.ReplicationController{ObjectMeta: meta, Spec: corev1.ReplicationControllerSpec{Selector: map[string]string{"hostPath": "x"}}}
		check(t, h.Handle(context.Background(), request(t, admissionv1.Create, metav1.GroupVersionKind{Version: "v1", Kind: "ReplicationController"}, "team-a", "w", rc)), allowed)
	})
}

func TestPersistentVolumes(t *testing.T) {
	h := newHandler(t)
	pvKind := metav1.GroupVersionKind{Version: "v1", Kind: "PersistentVolume"}
	cases := map[string]struct {
		source corev1.PersistentVolumeSource
		want   want
	}{
		"hostPath": {corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: `//./pipe/csi-proxy-smb-v1`}},
			denied(`[protected-pipe-pv] PersistentVolume "pv1" points at \\.\pipe\csi-proxy-smb-v1 (hostPath); a PersistentVolume cannot carry an allowance`)},
		"local": {corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: `\\?\pipe\csi-proxy-volume-v1`}},
			denied(`[protected-pipe-pv] PersistentVolume "pv1" points at \\.\pipe\csi-proxy-volume-v1 (local)`)},
		"ordinary local disk": {corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: `D:\data`}}, allowed},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: tc.source}}
			check(t, h.Handle(context.Background(), request(t, admissionv1.Create, pvKind, "", "pv1", pv)), tc.want)
		})
	}
}

// TestEphemeralContainerUpdate: `kubectl debug` adds an ephemeral container
// with an UPDATE on pods/ephemeralcontainers. Only the new mount is judged:
// the existing privileged mount of the running pod is not re-judged.
func TestEphemeralContainerUpdate(t *testing.T) {
	h := newHandler(t)
	old := pod(diskPipe, func(p *corev1.Pod) {
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: boolPtr(true)}
	})
	debugged := old.DeepCopy()
	debugged.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger-x7", VolumeMounts: []corev1.VolumeMount{{Name: "pipe", MountPath: `C:\p`}},
	}}}
	req := request(t, admissionv1.Update, podKind, "team-a", "web", debugged)
	req.SubResource = "ephemeralcontainers"
	oldRaw, _ := json.Marshal(old)
	req.OldObject = runtime.RawExtension{Raw: oldRaw}
	check(t, h.Handle(context.Background(), req), denied(`container "debugger-x7" (ephemeralContainer) mounts \\.\pipe\csi-proxy-disk-v1`))

	// A metadata update of a pod admitted under an older policy is not blocked.
	legacy := pod(diskPipe)
	relabelled := legacy.DeepCopy()
	relabelled.Labels = map[string]string{"x": "y"}
	req = request(t, admissionv1.Update, podKind, "team-a", "web", relabelled)
	oldRaw, _ = json.Marshal(legacy)
	req.OldObject = runtime.RawExtension{Raw: oldRaw}
	check(t, h.Handle(context.Background(), req), allowed)
}

func TestMalformedRequests(t *testing.T) {
	h := newHandler(t)
	raw := func(s string) admission.Request {
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID: "uid-1", Kind: podKind, Namespace: "team-a", Name: "web", Operation: admissionv1.Create,
			Object: runtime.RawExtension{Raw: []byte(s)},
		}}
	}
	cases := map[string]struct {
		req  admission.Request
		want want
	}{
		"no object":           {raw(""), want{code: http.StatusBadRequest, message: "CREATE Pod request for Pod \"web\" carries no object"}},
		"not JSON":            {raw(`{"spec": {"volumes": [{"hostPath": `), want{code: http.StatusBadRequest, message: "cannot decode request.object as /v1, Kind=Pod"}},
		"wrong type":          {raw(`{"spec": {"volumes": "hostPath"}}`), want{code: http.StatusBadRequest, message: "cannot decode request.object"}},
		"wrong nested type":   {raw(`{"spec": {"volumes": [{"name": "p", "hostPath": {"path": 7}}]}}`), want{code: http.StatusBadRequest, message: "cannot decode request.object"}},
		"escaped key decoded": {raw(`{"spec": {"volumes": [{"name": "p", "host\u0050ath": {"path": "\\\\.\\pipe\\csi-proxy-disk-v1"}}], "containers": [{"name": "c", "volumeMounts": [{"name": "p", "mountPath": "x"}]}]}}`), denied(`container "c" mounts`)},
		"old object garbage on update": {func() admission.Request {
			r := request(t, admissionv1.Update, podKind, "team-a", "web", pod(diskPipe))
			r.OldObject = runtime.RawExtension{Raw: []byte("{")}
			return r
		}(), want{code: http.StatusBadRequest, message: "cannot decode request.oldObject as a Pod"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			check(t, h.Handle(context.Background(), tc.req), tc.want)
		})
	}
}

// A request that cannot be decoded is answered with what could not be
// decoded, where in the object, and why.
func TestDecodeErrorMessages(t *testing.T) {
	h := newHandler(t)
	badPod := request(t, admissionv1.Create, podKind, "team-a", "web", pod(diskPipe))
	badPod.Object = runtime.RawExtension{Raw: []byte(`{"spec":{"volumes":[{"name":"p","hostPath":{"path":7}}]}}`)}
	badOldPod := request(t, admissionv1.Update, podKind, "team-a", "web", pod(diskPipe))
	badOldPod.OldObject = runtime.RawExtension{Raw: []byte(`{"spec":{"volumes":"hostPath"}}`)}
	for req, want := range map[*admission.Request]string{
		&badPod:    `cannot decode request.object as /v1, Kind=Pod: field "path", byte 51: want a string, found a number; send a valid Pod`,
		&badOldPod: `cannot decode request.oldObject as a Pod: field "volumes", byte 19: want an array, found a string`,
	} {
		resp := h.Handle(context.Background(), *req)
		if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusBadRequest || resp.Result.Message != want {
			t.Errorf("response %+v, want 400 with message %q", resp.Result, want)
		}
	}
}

func TestUnreviewedRequestsPass(t *testing.T) {
	h := newHandler(t)
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]string{"hostPath": diskPipe}}
	check(t, h.Handle(context.Background(), request(t, admissionv1.Create, metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "team-a", "c", cm)), allowed)
	del := request(t, admissionv1.Delete, podKind, "team-a", "web", pod(diskPipe))
	check(t, h.Handle(context.Background(), del), allowed)
}

type failingEvaluator struct{ panic bool }

func (f failingEvaluator) Evaluate(context.Context, *policy.Input) (*policy.Decision, error) {
	if f.panic {
		panic("boom")
	}
	return nil, errors.New("rego exploded")
}

func (failingEvaluator) AllowanceLabels() []string { return []string{policy.AllowLabel} }

type failingNamespaces struct{}

func (failingNamespaces) NamespaceLabels(context.Context, string) (map[string]string, bool, error) {
	return nil, false, errors.New("cache not synced")
}

// TestInternalFailuresNeverAllow: pipeguard's own failures answer 500.
func TestInternalFailuresNeverAllow(t *testing.T) {
	engine, _ := policy.NewEngine(context.Background(), policy.Options{})
	cases := map[string]struct {
		opts webhook.Options
		want string
	}{
		"evaluation error": {webhook.Options{Engine: failingEvaluator{}, Namespaces: testNamespaces},
			`internal error: evaluating pipe access policies for Pod "web": rego exploded; the request is rejected until evaluation succeeds`},
		"panic": {webhook.Options{Engine: failingEvaluator{panic: true}, Namespaces: testNamespaces},
			`internal error: pipeguard failed while reviewing Pod "web"; the request is rejected until the review succeeds`},
		"namespace lookup": {webhook.Options{Engine: engine, Namespaces: failingNamespaces{}},
			`internal error: looking up namespace "team-a": cache not synced`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := webhook.NewHandler(tc.opts)
			check(t, h.Handle(context.Background(), podRequest(t, pod(diskPipe))), want{code: http.StatusInternalServerError, message: tc.want})
		})
	}
}

func TestEnforcementActions(t *testing.T) {
	warnPolicy := v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "rollout"},
		Spec: v1alpha1.PipeAccessPolicySpec{Pipes: []string{"csi-proxy-*"}, EnforcementAction: v1alpha1.Warn}}
	resp := newHandler(t, warnPolicy).Handle(context.Background(), podRequest(t, pod(diskPipe)))
	check(t, resp, allowed)
	if len(resp.Warnings) != 1 || !strings.HasPrefix(resp.Warnings[0], `[protected-pipe-mount] container "app" mounts \\.\pipe\csi-proxy-disk-v1`) {
		t.Fatalf("warnings %q, want the violation", resp.Warnings)
	}

	dry := warnPolicy
	dry.Spec.EnforcementAction = v1alpha1.DryRun
	resp = newHandler(t, dry).Handle(context.Background(), podRequest(t, pod(diskPipe)))
	check(t, resp, allowed)
	if len(resp.Warnings) != 0 || resp.AuditAnnotations["decision"] != "dryrun" {
		t.Fatalf("dryrun response warnings %q annotations %v", resp.Warnings, resp.AuditAnnotations)
	}
}
