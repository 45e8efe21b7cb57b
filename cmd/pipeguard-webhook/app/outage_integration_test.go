package app_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// outagePipePaths spell CSI Proxy's disk pipe, or a path that may reach it,
// in the ways a Windows node (or pipeguard, erring the safe way) accepts.
var outagePipePaths = []string{
	`\\.\pipe\csi-proxy-disk-v1`, `//./PIPE/CSI-PROXY-DISK-V1`, `\\?\pipe\csi-proxy-disk-v1`,
	`\??\pipe\csi-proxy-disk-v1`, `\\localhost\pipe\csi-proxy-disk-v1`, `\\LOCALHOST\IPC$`,
	`\\.\GLOBALROOT\Device\NamedPipe\csi-proxy-disk-v1`, `\Device\NamedPipe\csi-proxy-disk-v1`,
	`/Device/Mup/localhost`, `\\.\pipe\`, `/\./pipe\csi-proxy-disk-v1`, `\\.\pipe\csi-proxy-disk-v1.. `,
	`\\.\pipe\csi%2dproxy-disk-v1`, `\\.\pıpe\csi-proxy-disk-v1`, `\\.\piſe\csi-proxy-disk-v1`,
	`\\.\ＰＩＰＥ\csi-proxy-disk-v1`, `＼＼.＼pipe＼csi-proxy-disk-v1`, "\\\\.\\pipe\\csi-proxy-disk-v1\t",
}

// outageOrdinaryPaths are host paths ordinary pods and PersistentVolumes
// use; an outage of pipeguard must not stop them.
var outageOrdinaryPaths = []string{
	"/var/log", "/var/lib/kubelet", "/etc/cni/net.d", "/opt/cni/bin", "/etc/ssl/certs",
	"/run/containerd/containerd.sock", "/proc",
	`C:\var\log`, `C:\var\lib\kubelet`, `C:\etc\kubernetes`, `C:\ProgramData\docker`,
}

// outageKinds wrap a pod spec in each reviewed kind.
var outageKinds = []struct {
	kind string
	wrap func(name string, spec corev1.PodSpec) client.Object
}{
	{"Pod", func(name string, spec corev1.PodSpec) client.Object {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	}},
	{"Deployment", func(name string, spec corev1.PodSpec) client.Object {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{Selector: outageSelector(), Template: outageTemplate(spec)}}
	}},
	{"ReplicaSet", func(name string, spec corev1.PodSpec) client.Object {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.ReplicaSetSpec{Selector: outageSelector(), Template: outageTemplate(spec)}}
	}},
	{"StatefulSet", func(name string, spec corev1.PodSpec) client.Object {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.StatefulSetSpec{Selector: outageSelector(), Template: outageTemplate(spec)}}
	}},
	{"DaemonSet", func(name string, spec corev1.PodSpec) client.Object {
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DaemonSetSpec{Selector: outageSelector(), Template: outageTemplate(spec)}}
	}},
	{"Job", func(name string, spec corev1.PodSpec) client.Object {
		spec.RestartPolicy = corev1.RestartPolicyNever
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: spec}}}
	}},
	{"CronJob", func(name string, spec corev1.PodSpec) client.Object {
		spec.RestartPolicy = corev1.RestartPolicyNever
		return &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: batchv1.CronJobSpec{Schedule: "@daily",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: spec}}}}}
	}},
	{"ReplicationController", func(name string, spec corev1.PodSpec) client.Object {
		t := outageTemplate(spec)
		return &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ReplicationControllerSpec{Selector: map[string]string{"app": "x"}, Template: &t}}
	}},
	{"PodTemplate", func(name string, spec corev1.PodSpec) client.Object {
		return &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: name}, Template: outageTemplate(spec)}
	}},
}

func outageSelector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
}

func outageTemplate(spec corev1.PodSpec) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}, Spec: spec}
}

// outageSpec mounts the host path, with subPath when sub is set.
func outageSpec(path, sub string) corev1.PodSpec {
	return corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "app",
			VolumeMounts: []corev1.VolumeMount{{Name: "host", MountPath: "/host", SubPath: sub}}}},
		Volumes: []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}},
	}
}

func outagePV(name string, src corev1.PersistentVolumeSource) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: src,
	}}
	if src.Local != nil {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}}}}}}
	}
	return pv
}

// refusedByOutage asserts that err is the API server failing closed because
// the webhook did not answer.
func refusedByOutage(t *testing.T, what string, err error, webhook string) {
	t.Helper()
	want := `failed calling webhook "` + webhook + `"`
	if err == nil {
		t.Errorf("%s was admitted while the webhook is down, want %q", what, want)
		return
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %v\nwant the fail-closed error %q", what, err, want)
	}
}

// TestOutageRefusesOnlyWhatCouldNameAPipe registers the shipped webhook
// configuration with nothing serving it: objects that could name a
// protected pipe are refused (failurePolicy Fail), ordinary host paths are
// admitted.
func TestOutageRefusesOnlyWhatCouldNameAPipe(t *testing.T) {
	env := testenv.Start(t, testenv.Options{
		Scheme:            scheme(t),
		CRDDirectoryPaths: []string{"../../../config/crd/bases"},
		Webhooks:          testenv.WebhookOptions{Paths: []string{"../../../config/webhook/manifests.yaml"}},
	})
	ctx := context.Background()
	c := env.Client
	for _, ns := range []string{"team-a", "csi-smb"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	hooks := map[string]string{"Pod": "pods.pipeguard.io", "CronJob": "cronjobs.pipeguard.io",
		"PodTemplate": "podtemplates.pipeguard.io", "PersistentVolume": "persistentvolumes.pipeguard.io"}
	hook := func(kind string) string {
		if h, ok := hooks[kind]; ok {
			return h
		}
		return "workloads.pipeguard.io"
	}
	create := func(obj client.Object) error {
		if obj.GetNamespace() == "" && obj.GetObjectKind().GroupVersionKind().Kind != "PersistentVolume" {
			if _, isPV := obj.(*corev1.PersistentVolume); !isPV {
				obj.SetNamespace("team-a")
			}
		}
		return c.Create(ctx, obj, client.DryRunAll)
	}

	t.Run("every object of the admission examples that names a pipe is refused", func(t *testing.T) {
		data, err := os.ReadFile("../../../docs/examples/pipe-pods.yaml")
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		n := 0
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			kind := u.GetKind()
			if kind == "Namespace" || kind == "ConfigMap" {
				continue
			}
			n++
			refusedByOutage(t, fmt.Sprintf("%s %s", kind, u.GetName()), c.Create(ctx, u, client.DryRunAll), hook(kind))
		}
		if n < 4 {
			t.Fatalf("docs/examples/pipe-pods.yaml holds %d reviewed objects, want the pods, the DaemonSet and the PersistentVolume", n)
		}
	})

	t.Run("every kind naming a pipe in any spelling is refused", func(t *testing.T) {
		for _, k := range outageKinds {
			for i, p := range outagePipePaths {
				obj := k.wrap(fmt.Sprintf("pipe-%d", i), outageSpec(p, ""))
				refusedByOutage(t, fmt.Sprintf("%s with hostPath %q", k.kind, p), create(obj), hook(k.kind))
			}
			obj := k.wrap("sub", outageSpec(`C:\var\lib`, `..\..\..\Device\NamedPipe\csi-proxy-disk-v1`))
			err := create(obj)
			if !apierrors.IsInvalid(err) {
				// The API server's own validation refuses a subPath that
				// climbs; where it does not, the webhook must be asked.
				refusedByOutage(t, k.kind+" with a climbing subPath", err, hook(k.kind))
			}
			spec := outageSpec(`C:\var\lib`, "")
			spec.Containers[0].VolumeMounts[0].SubPathExpr = "$(PIPE)"
			refusedByOutage(t, k.kind+" with subPathExpr", create(k.wrap("expr", spec)), hook(k.kind))
			refusedByOutage(t, k.kind+" with subPath into the pipe namespace",
				create(k.wrap("subpipe", outageSpec(`\\.\pipe\`, "csi-proxy-disk-v1"))), hook(k.kind))
		}
		for i, p := range outagePipePaths {
			refusedByOutage(t, fmt.Sprintf("PersistentVolume with hostPath %q", p),
				create(outagePV(fmt.Sprintf("pipe-%d", i), corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p}})), hook("PersistentVolume"))
			refusedByOutage(t, fmt.Sprintf("PersistentVolume with local %q", p),
				create(outagePV(fmt.Sprintf("local-%d", i), corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: p}})), hook("PersistentVolume"))
		}
	})

	t.Run("ordinary host paths are admitted", func(t *testing.T) {
		for _, k := range outageKinds {
			for i, p := range outageOrdinaryPaths {
				if err := create(k.wrap(fmt.Sprintf("plain-%d", i), outageSpec(p, ""))); err != nil {
					t.Errorf("%s with hostPath %q refused while the webhook is down: %v", k.kind, p, err)
				}
			}
			if err := create(k.wrap("plain-sub", outageSpec("/var/log", "pods"))); err != nil {
				t.Errorf("%s with hostPath /var/log and subPath pods refused while the webhook is down: %v", k.kind, err)
			}
		}
		for i, p := range outageOrdinaryPaths {
			if err := create(outagePV(fmt.Sprintf("plain-%d", i), corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p}})); err != nil {
				t.Errorf("PersistentVolume with hostPath %q refused while the webhook is down: %v", p, err)
			}
			if err := create(outagePV(fmt.Sprintf("local-%d", i), corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: p}})); err != nil {
				t.Errorf("PersistentVolume with local %q refused while the webhook is down: %v", p, err)
			}
		}
	})

	t.Run("an ephemeral container is added to a pod on ordinary paths", func(t *testing.T) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "debug-me", Namespace: "team-a"}, Spec: outageSpec("/var/log", "")}
		if err := c.Create(ctx, pod); err != nil {
			t.Fatalf("creating a pod with hostPath /var/log while the webhook is down: %v", err)
		}
		cs := kubernetes.NewForConfigOrDie(env.Config)
		add := func(name string, vm corev1.VolumeMount) error {
			p, err := cs.CoreV1().Pods("team-a").Get(ctx, "debug-me", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox", VolumeMounts: []corev1.VolumeMount{vm}},
				TargetContainerName:      "app",
			})
			_, err = cs.CoreV1().Pods("team-a").UpdateEphemeralContainers(ctx, "debug-me", p, metav1.UpdateOptions{})
			return err
		}
		if err := add("debugger", corev1.VolumeMount{Name: "host", MountPath: "/logs"}); err != nil {
			t.Errorf("adding an ephemeral container that mounts /var/log while the webhook is down: %v", err)
		}
	})
}
