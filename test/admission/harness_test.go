package admission_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/pipeguard/pipeguard/internal/kinds"
	"github.com/pipeguard/pipeguard/internal/testing/webhookconfig"
	"github.com/pipeguard/pipeguard/pipepath"
)

const manifests = "../../config/webhook/manifests.yaml"

// filter is the matchConditions of each webhook, compiled and evaluated as
// kube-apiserver does.
type filter struct {
	cfg      *admissionregistrationv1.ValidatingWebhookConfiguration
	matchers map[string]matchconditions.Matcher // by webhook name
}

func loadFilter(t testing.TB) *filter {
	t.Helper()
	mustKinds(t)
	cfg, err := webhookconfig.Load(manifests)
	if err != nil {
		t.Fatal(err)
	}
	f, err := compileFilter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// compileFilter compiles the matchConditions with the compiler and
// environment kube-apiserver's generic webhook dispatcher uses.
func compileFilter(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) (*filter, error) {
	compiler := cel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	f := &filter{cfg: cfg, matchers: map[string]matchconditions.Matcher{}}
	for _, w := range cfg.Webhooks {
		exprs := make([]cel.ExpressionAccessor, len(w.MatchConditions))
		for i, mc := range w.MatchConditions {
			exprs[i] = &matchconditions.MatchCondition{Name: mc.Name, Expression: mc.Expression}
		}
		ev := compiler.CompileCondition(exprs, cel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.StoredExpressions)
		if errs := ev.CompilationErrors(); len(errs) > 0 {
			return nil, fmt.Errorf("webhook %s: %v", w.Name, errs)
		}
		f.matchers[w.Name] = matchconditions.NewMatcher(ev, w.FailurePolicy, "webhook", "validating", w.Name)
	}
	return f, nil
}

// hookFor is the webhook whose rules select resource.
func (f *filter) hookFor(t testing.TB, gvr schema.GroupVersionResource) string {
	t.Helper()
	for _, w := range f.cfg.Webhooks {
		for _, r := range w.Rules {
			if slices.Contains(r.APIGroups, gvr.Group) && slices.Contains(r.APIVersions, gvr.Version) && slices.Contains(r.Resources, gvr.Resource) {
				return w.Name
			}
		}
	}
	t.Fatalf("no webhook reviews %v", gvr)
	return ""
}

// sends reports whether the API server would call the webhook for a CREATE
// of obj. An evaluation error fails the test: with failurePolicy Fail it
// rejects the request even while the webhook is up.
func (f *filter) sends(t testing.TB, k kind, obj runtime.Object) bool {
	t.Helper()
	return f.sendsVia(t, f.hookFor(t, k.gvr), k, obj)
}

// sendsVia is sends for the webhook named hook.
func (f *filter) sendsVia(t testing.TB, hook string, k kind, obj runtime.Object) bool {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	uo := &unstructured.Unstructured{Object: u}
	uo.SetAPIVersion(k.gvk.GroupVersion().String())
	uo.SetKind(k.gvk.Kind)
	attr := admission.NewAttributesRecord(uo, nil, k.gvk, uo.GetNamespace(), uo.GetName(), k.gvr, "", admission.Create,
		&metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "someone"})
	va := &admission.VersionedAttributes{Attributes: attr, VersionedKind: k.gvk, VersionedObject: admission.NewLazyObject(uo)}
	m, ok := f.matchers[hook]
	if !ok {
		t.Fatalf("no webhook %s", hook)
	}
	r := m.Match(context.Background(), va, nil, nil)
	if r.Error != nil {
		t.Fatalf("%s: matchConditions failed on %s: %v", k.gvk.Kind, short(fmt.Sprint(u)), r.Error)
	}
	return r.Matches
}

func short(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}

// kind is a reviewed kind of the one table, internal/kinds, that carries a
// pod template (wrap) or is a PersistentVolume (wrap nil).
type kind struct {
	gvk   schema.GroupVersionKind
	gvr   schema.GroupVersionResource
	table kinds.Kind
	wrap  func(corev1.PodSpec) runtime.Object
}

// podSpecPaths are, for each layout of internal/kinds that carries a pod
// spec, the fields that lead to it.
var podSpecPaths = map[kinds.Layout][]string{
	kinds.LayoutPod:         {"spec"},
	kinds.LayoutPodTemplate: {"template", "spec"},
	kinds.LayoutWorkload:    {"spec", "template", "spec"},
	kinds.LayoutCronJob:     {"spec", "jobTemplate", "spec", "template", "spec"},
}

// podKinds are every reviewed kind with a pod spec, and pvKind the
// PersistentVolume, all from internal/kinds; kindsErr says which kind of
// the table these tests cannot build (see mustKinds).
var podKinds, pvKind, kindsErr = reviewedKinds(kinds.All())

// reviewedKinds sorts the kinds of table into those with a pod spec and
// the PersistentVolume, and fails on a kind the tests cannot build, so a
// kind added to the table is tested here or fails, never skipped.
func reviewedKinds(table []kinds.Kind) (pods []kind, pv kind, err error) {
	var errs []error
	for _, k := range table {
		c := kind{gvk: k.GVK, gvr: k.GVK.GroupVersion().WithResource(k.Resource), table: k}
		if k.Layout == kinds.LayoutPersistentVolume {
			if _, ok := k.New().(*corev1.PersistentVolume); !ok || pv.table.New != nil {
				errs = append(errs, fmt.Errorf("internal/kinds: %s has the PersistentVolume layout, but these tests build one kind of it, the core PersistentVolume: teach them %s", k.GVK, k.GVK.Kind))
				continue
			}
			pv = c
			continue
		}
		path, ok := podSpecPaths[k.Layout]
		if !ok {
			errs = append(errs, fmt.Errorf("internal/kinds: %s has layout %d, which these tests cannot build: add where its pod spec sits to podSpecPaths", k.GVK, k.Layout))
			continue
		}
		c.wrap = func(spec corev1.PodSpec) runtime.Object { return wrapSpec(k, path, spec) }
		pods = append(pods, c)
	}
	if pv.table.New == nil {
		errs = append(errs, errors.New("internal/kinds: no kind has the PersistentVolume layout: these tests expect PersistentVolume among the reviewed kinds"))
	}
	return pods, pv, errors.Join(errs...)
}

// mustKinds fails the test when a kind of internal/kinds is none these
// tests can build.
func mustKinds(t testing.TB) {
	t.Helper()
	if kindsErr != nil {
		t.Fatal(kindsErr)
	}
}

// wrapSpec is an object of kind k, named x in namespace team-a, whose pod
// spec, at path, is spec. It is unstructured, as the API server hands
// objects to CEL.
func wrapSpec(k kinds.Kind, path []string, spec corev1.PodSpec) runtime.Object {
	s, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&spec)
	if err != nil {
		panic(err) // a PodSpec always converts
	}
	u := map[string]any{"metadata": map[string]any{"name": "x", "namespace": "team-a"}}
	if k.Layout == kinds.LayoutCronJob {
		u["spec"] = map[string]any{"schedule": "@daily"}
	}
	// Each level but the last is a new map: no value of s is copied.
	m := u
	for _, f := range path[:len(path)-1] {
		next, ok := m[f].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[f] = next
		}
		m = next
	}
	m[path[len(path)-1]] = s
	return &unstructured.Unstructured{Object: u}
}

// podSpecOf returns the pod spec of obj, an object of the pod-bearing kind
// k; an empty one where obj has none (a ReplicationController without a
// template).
func podSpecOf(k kind, obj runtime.Object) (*corev1.PodSpec, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	m, _, err := unstructured.NestedMap(u, podSpecPaths[k.table.Layout]...)
	if err != nil {
		return nil, err
	}
	var spec corev1.PodSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &spec); err != nil {
		return nil, err
	}
	return &spec, nil
}

func hostPathPV(path string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}}
}

func localPV(path string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: path}}}}
}

// Where a volumeMount sits in a pod.
const (
	inContainer = iota
	inInitContainer
	inEphemeralContainer
	places
)

// mountSpec is a pod with an emptyDir and the hostPath volume path, mounted
// by a container in place with subPath (or subPathExpr when expr).
func mountSpec(path, sub string, expr bool, place int) corev1.PodSpec {
	vm := []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}, {Name: "host", MountPath: "/host"}}
	if expr {
		vm[1].SubPathExpr = sub
	} else {
		vm[1].SubPath = sub
	}
	spec := corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "app", VolumeMounts: vm[:1]}},
		Volumes: []corev1.Volume{
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}},
		},
	}
	switch place {
	case inContainer:
		spec.Containers[0].VolumeMounts = vm
	case inInitContainer:
		spec.InitContainers = []corev1.Container{{Name: "init", Image: "init", VolumeMounts: vm}}
	case inEphemeralContainer:
		spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug", Image: "debug", VolumeMounts: vm}}}
	}
	return spec
}

// protectedSpec says whether pipepath protects (Pipe or Ambiguous) a
// hostPath volume of spec or the host path a volumeMount reaches through
// one, as the webhook reads a pod; why names the first such path.
func protectedSpec(spec *corev1.PodSpec) (why string, ok bool) {
	volumes := map[string]string{}
	for _, v := range spec.Volumes {
		if v.HostPath == nil {
			delete(volumes, v.Name)
			continue
		}
		volumes[v.Name] = v.HostPath.Path
		if r := pipepath.Classify(v.HostPath.Path); r.Class != pipepath.NotPipe {
			return fmt.Sprintf("hostPath %q is %s", v.HostPath.Path, r.Class), true
		}
	}
	var mounts [][]corev1.VolumeMount
	for _, c := range spec.InitContainers {
		mounts = append(mounts, c.VolumeMounts)
	}
	for _, c := range spec.Containers {
		mounts = append(mounts, c.VolumeMounts)
	}
	for _, c := range spec.EphemeralContainers {
		mounts = append(mounts, c.VolumeMounts)
	}
	for _, list := range mounts {
		for _, vm := range list {
			path, ok := volumes[vm.Name]
			if !ok {
				continue
			}
			var r pipepath.Result
			switch {
			case vm.SubPathExpr != "":
				r = pipepath.Classify(pipepath.JoinSubPath(path, vm.SubPathExpr))
			case vm.SubPath != "":
				r = pipepath.ClassifyMount(path, vm.SubPath)
			}
			if r.Class != "" && r.Class != pipepath.NotPipe {
				return fmt.Sprintf("hostPath %q with subPath(Expr) %q is %s", path, vm.SubPath+vm.SubPathExpr, r.Class), true
			}
		}
	}
	return "", false
}

// protectedPV is protectedSpec for a PersistentVolume.
func protectedPV(pv *corev1.PersistentVolume) (string, bool) {
	for _, p := range []struct {
		source string
		ok     bool
		path   func() string
	}{
		{"hostPath", pv.Spec.HostPath != nil, func() string { return pv.Spec.HostPath.Path }},
		{"local", pv.Spec.Local != nil, func() string { return pv.Spec.Local.Path }},
	} {
		if !p.ok {
			continue
		}
		if r := pipepath.Classify(p.path()); r.Class != pipepath.NotPipe {
			return fmt.Sprintf("%s %q is %s", p.source, p.path(), r.Class), true
		}
	}
	return "", false
}
