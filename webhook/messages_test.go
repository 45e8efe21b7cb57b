package webhook_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

var daemonSetKind = metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}

// azurediskNode is shaped like the upstream azuredisk Windows node
// DaemonSet: one driver container mounting six CSI Proxy pipes, a sidecar
// mounting one of them, and an ordinary host directory.
func azurediskNode() *appsv1.DaemonSet {
	pipes := []struct{ volume, pipe string }{
		{"csi-proxy-fs-pipe-v1", "csi-proxy-filesystem-v1"},
		{"csi-proxy-disk-pipe-v1", "csi-proxy-disk-v1"},
		{"csi-proxy-volume-pipe-v1", "csi-proxy-volume-v1"},
		{"csi-proxy-fs-pipe-v1beta1", "csi-proxy-filesystem-v1beta1"},
		{"csi-proxy-disk-pipe-v1beta2", "csi-proxy-disk-v1beta2"},
		{"csi-proxy-volume-pipe-v1beta2", "csi-proxy-volume-v1beta2"},
	}
	spec := corev1.PodSpec{
		Containers: []corev1.Container{{Name: "azuredisk", Image: "azuredisk"}, {Name: "sidecar", Image: "sidecar"}},
		Volumes:    []corev1.Volume{{Name: "kubelet-dir", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: `C:\var\lib\kubelet\`}}}},
	}
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "kubelet-dir", MountPath: `C:\var\lib\kubelet`}}
	for _, p := range pipes {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: p.volume, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: `\\.\pipe\` + p.pipe}}})
		spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: p.volume, MountPath: `\\.\pipe\` + p.pipe})
	}
	// The sidecar mounts one pipe twice, at two paths: still one target.
	spec.Containers[1].VolumeMounts = []corev1.VolumeMount{
		{Name: "csi-proxy-disk-pipe-v1", MountPath: `\\.\pipe\csi-proxy-disk-v1`},
		{Name: "csi-proxy-disk-pipe-v1", MountPath: `C:\pipe`},
	}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "csi-azuredisk-node-win", Namespace: "team-a"},
		Spec:       appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: spec}},
	}
}

// TestOneMessagePerContainer: a container that mounts six pipes gets one
// message naming each pipe and its volume, with why and what to do once.
func TestOneMessagePerContainer(t *testing.T) {
	h := newHandler(t)
	resp := h.Handle(context.Background(), request(t, admissionv1.Create, daemonSetKind, "team-a", "csi-azuredisk-node-win", azurediskNode()))
	check(t, resp, denied(""))
	const why = `, but it is not HostProcess and namespace "team-a" is not allowed; to allow it, label the namespace pipeguard.io/allow-csi-proxy=true, or run the container as HostProcess`
	want := `[protected-pipe-mount] container "azuredisk" mounts ` +
		`\\.\pipe\csi-proxy-disk-v1 through volume "csi-proxy-disk-pipe-v1", ` +
		`\\.\pipe\csi-proxy-disk-v1beta2 through volume "csi-proxy-disk-pipe-v1beta2", ` +
		`\\.\pipe\csi-proxy-filesystem-v1 through volume "csi-proxy-fs-pipe-v1", ` +
		`\\.\pipe\csi-proxy-filesystem-v1beta1 through volume "csi-proxy-fs-pipe-v1beta1", ` +
		`\\.\pipe\csi-proxy-volume-v1 through volume "csi-proxy-volume-pipe-v1" and ` +
		`\\.\pipe\csi-proxy-volume-v1beta2 through volume "csi-proxy-volume-pipe-v1beta2"` + why + "\n" +
		`[protected-pipe-mount] container "sidecar" mounts \\.\pipe\csi-proxy-disk-v1 through volume "csi-proxy-disk-pipe-v1"` + why
	if got := resp.Result.Message; got != want {
		t.Fatalf("message\n%s\nwant\n%s", got, want)
	}
}

// TestMessagesKeepDifferentReasonsApart: mounts of one container that fail
// for different reasons get a message each, and so do different rules.
func TestMessagesKeepDifferentReasonsApart(t *testing.T) {
	h := newHandler(t)
	p := pod(diskPipe, func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes,
			corev1.Volume{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: `\\.\pipe\`}}})
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "root", MountPath: `C:\root`})
	})
	resp := h.Handle(context.Background(), podRequest(t, p))
	check(t, resp, denied(""))
	lines := strings.Split(resp.Result.Message, "\n")
	if len(lines) != 2 {
		t.Fatalf("%d messages, want one per rule:\n%s", len(lines), resp.Result.Message)
	}
	want := `[ambiguous-pipe-path] container "app" mounts \\.\pipe\ through volume "root" (a path that looks like a named pipe but cannot be resolved: path names the pipe namespace itself, which holds every pipe; it is treated as protected), but it is not HostProcess and namespace "team-a" is not allowed; to allow it, label the namespace pipeguard.io/allow-csi-proxy=true, or run the container as HostProcess`
	if lines[0] != want {
		t.Errorf("ambiguous path message\n%s\nwant\n%s", lines[0], want)
	}
	if !strings.HasPrefix(lines[1], `[protected-pipe-mount] container "app" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe", but`) {
		t.Errorf("pipe message %q", lines[1])
	}
}

// TestMessagesOnRealManifests: the Windows node DaemonSets of upstream CSI
// drivers get one message per container that mounts pipes, and each pipe is
// named once in it. The manifests live beside the repository, in
// ../shared/real-manifests, when they are there.
func TestMessagesOnRealManifests(t *testing.T) {
	const dir = "../../shared/real-manifests/"
	for _, file := range []string{"azuredisk-node-windows.yaml", "azurefile-node-windows.yaml", "smb-node-windows.yaml"} {
		t.Run(file, func(t *testing.T) {
			f, err := os.Open(dir + file)
			if errors.Is(err, fs.ErrNotExist) {
				t.Skipf("%s is not there (it is kept beside the repository, not in it)", dir+file)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			decoder := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
			checked := 0
			for {
				var ds appsv1.DaemonSet
				if err := decoder.Decode(&ds); err != nil {
					break
				}
				if ds.Kind != "DaemonSet" {
					continue
				}
				checked++
				ds.Namespace = "team-a"
				h := newHandler(t)
				resp := h.Handle(context.Background(), request(t, admissionv1.Create, daemonSetKind, "team-a", ds.Name, &ds))
				checkOneMessagePerContainer(t, resp, ds.Spec.Template.Spec)
			}
			if checked == 0 {
				t.Fatalf("%s holds no DaemonSet", file)
			}
		})
	}
}

func checkOneMessagePerContainer(t *testing.T, resp admission.Response, spec corev1.PodSpec) {
	t.Helper()
	if resp.Allowed {
		t.Fatal("admitted, want a rejection")
	}
	pipeVolumes := map[string]string{}
	for _, v := range spec.Volumes {
		if v.HostPath != nil && strings.Contains(strings.ToLower(v.HostPath.Path), `\pipe\`) {
			pipeVolumes[v.Name] = v.HostPath.Path
		}
	}
	lines := strings.Split(resp.Result.Message, "\n")
	seen := 0
	for _, c := range spec.Containers {
		var pipes []string
		for _, m := range c.VolumeMounts {
			if p, ok := pipeVolumes[m.Name]; ok {
				pipes = append(pipes, p)
			}
		}
		if len(pipes) == 0 {
			continue
		}
		seen++
		var line string
		for _, l := range lines {
			if strings.HasPrefix(l, `[protected-pipe-mount] container "`+c.Name+`" mounts `) {
				if line != "" {
					t.Fatalf("container %q has more than one message:\n%s", c.Name, resp.Result.Message)
				}
				line = l
			}
		}
		for _, p := range pipes {
			if n := strings.Count(line, strings.ToLower(p)+" through volume"); n != 1 {
				t.Errorf("container %q: %s named %d times in %q", c.Name, p, n, line)
			}
		}
		if n := strings.Count(line, "to allow it"); n != 1 {
			t.Errorf("container %q: the remedy is given %d times in %q", c.Name, n, line)
		}
	}
	if seen != len(lines) {
		t.Errorf("%d messages for %d containers that mount pipes:\n%s", len(lines), seen, resp.Result.Message)
	}
}
