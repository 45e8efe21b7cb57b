package app_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-webhook/app"
)

// The least-privilege recipe of docs/windows.md ("Where pipeguard fits"),
// on a real API server: the CSI drivers' Windows node plugins, rendered from
// their charts in pipe mode, are admitted in the driver's namespace under
// config/samples/least-privilege and refused anywhere else; their
// HostProcess renders, and CSI Proxy's own HostProcess DaemonSet, are
// refused everywhere; pipeguard-agent's DaemonSet is admitted in its
// namespace only.

const recipeDir = "../../../config/samples/least-privilege/"

// agentNS is pipeguard-agent's namespace, the only one where the recipe
// allows HostProcess.
const agentNS = "pipeguard-agent"

// renderedObjects are the workloads of a rendered chart, in its order.
type renderedObjects struct {
	accounts []*corev1.ServiceAccount
	sets     []*appsv1.DaemonSet
	deploys  []*appsv1.Deployment
}

// readManifest reads the ServiceAccounts, DaemonSets and Deployments of a
// multi-document YAML file; the other kinds are left out.
func readManifest(t *testing.T, path string) renderedObjects {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out renderedObjects
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var obj any
		switch tm.Kind {
		case "ServiceAccount":
			sa := &corev1.ServiceAccount{}
			out.accounts, obj = append(out.accounts, sa), sa
		case "DaemonSet":
			ds := &appsv1.DaemonSet{}
			out.sets, obj = append(out.sets, ds), ds
		case "Deployment":
			d := &appsv1.Deployment{}
			out.deploys, obj = append(out.deploys, d), d
		default:
			continue
		}
		if err := yaml.Unmarshal(doc, obj); err != nil {
			t.Fatalf("%s: %s: %v", path, tm.Kind, err)
		}
	}
	if len(out.sets) == 0 {
		t.Fatalf("%s holds no DaemonSet", path)
	}
	return out
}

// recipePolicies reads the recipe's policies, with the driver's namespace
// in place of the sample's.
func recipePolicies(t *testing.T, driverNS string) []*v1alpha1.PipeAccessPolicy {
	t.Helper()
	var out []*v1alpha1.PipeAccessPolicy
	for _, file := range []string{"driver-pipes.yaml", "agent-hostprocess.yaml"} {
		data, err := os.ReadFile(recipeDir + file)
		if err != nil {
			t.Fatal(err)
		}
		p := &v1alpha1.PipeAccessPolicy{}
		if err := yaml.UnmarshalStrict(data, p); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if p.Name == "csi-driver-pipes" {
			if got := p.Spec.Allow.Namespaces; len(got) != 1 || got[0] != "csi-smb" {
				t.Fatalf("%s allows namespaces %v, want [csi-smb]", file, got)
			}
			p.Spec.Allow.Namespaces = []string{driverNS}
		}
		out = append(out, p)
	}
	return out
}

// podOf is a pod the DaemonSet would make.
func podOf(ds *appsv1.DaemonSet, ns string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: ds.Name + "-node1", Namespace: ns, Labels: ds.Spec.Template.Labels},
		Spec:       *ds.Spec.Template.Spec.DeepCopy(),
	}
}

// pipeMounts names, per container, the pipe paths it mounts.
func pipeMounts(spec corev1.PodSpec) map[string][]string {
	pipes := map[string]string{}
	for _, v := range spec.Volumes {
		if v.HostPath != nil && strings.HasPrefix(v.HostPath.Path, `\\.\pipe\`) {
			pipes[v.Name] = v.HostPath.Path
		}
	}
	out := map[string][]string{}
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		for _, m := range c.VolumeMounts {
			if p, ok := pipes[m.Name]; ok {
				out[c.Name] = append(out[c.Name], p)
			}
		}
	}
	return out
}

func isHostProcess(spec corev1.PodSpec) bool {
	if sc := spec.SecurityContext; sc != nil && sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil {
		return *sc.WindowsOptions.HostProcess
	}
	for _, c := range spec.Containers {
		if sc := c.SecurityContext; sc != nil && sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil && *sc.WindowsOptions.HostProcess {
			return true
		}
	}
	return false
}

// inNamespace is obj moved to ns.
func inNamespace[T client.Object](obj T, ns string) T {
	c := obj.DeepCopyObject().(T)
	c.SetNamespace(ns)
	c.SetResourceVersion("")
	return c
}

// checkRender creates every workload of a render in ns (dry run), and each
// DaemonSet's pod, and asserts the decision and the words of a refusal.
// Under the recipe a pipe mount is admitted only in allowedNS (and
// agentNS), and a HostProcess container only in agentNS.
func checkRender(t *testing.T, cl *cluster, objs renderedObjects, ns, allowedNS string) {
	t.Helper()
	ctx := context.Background()
	for _, d := range objs.deploys {
		if err := cl.client.Create(ctx, inNamespace(d, ns), client.DryRunAll); err != nil {
			t.Errorf("Deployment %s in %s: %v, want admitted: it mounts no pipe", d.Name, ns, err)
		}
	}
	for _, ds := range objs.sets {
		spec := ds.Spec.Template.Spec
		mounts, hp := pipeMounts(spec), isHostProcess(spec)
		var want []string
		switch {
		case hp && ns != agentNS:
			const told = `is a HostProcess container, which reaches every host pipe by its path without any mount, but PipeAccessPolicy "agent-hostprocess" withholds the HostProcess allowance and namespace %q is not allowed`
			for _, c := range spec.InitContainers {
				want = append(want, fmt.Sprintf(`[hostprocess-pipe-access] container %q (initContainer) `+told, c.Name, ns))
			}
			for _, c := range spec.Containers {
				want = append(want, fmt.Sprintf(`[hostprocess-pipe-access] container %q `+told, c.Name, ns))
			}
		case len(mounts) > 0 && ns != allowedNS && ns != agentNS:
			for c, paths := range mounts {
				want = append(want, fmt.Sprintf(`[protected-pipe-mount] container %q mounts \\.\pipe\`, c))
				for _, p := range paths {
					want = append(want, fmt.Sprintf(`%s through volume`, p))
				}
			}
			want = append(want, fmt.Sprintf(`it is not HostProcess and namespace %q is not allowed`, ns),
				fmt.Sprintf(`add %q to spec.allow.namespaces of PipeAccessPolicy "csi-driver-pipes"`, ns))
		}
		for what, obj := range map[string]client.Object{"DaemonSet " + ds.Name: inNamespace(ds, ns), "its pod": podOf(ds, ns)} {
			err := cl.client.Create(ctx, obj, client.DryRunAll)
			if want == nil {
				if err != nil {
					t.Errorf("%s in %s: %v, want admitted (pipes %v, HostProcess %v)", what, ns, err, mounts, hp)
				}
				continue
			}
			if err == nil {
				t.Errorf("%s in %s: admitted, want refused (pipes %v, HostProcess %v)", what, ns, mounts, hp)
				continue
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s in %s: refused with\n%v\nwant it to contain\n%s", what, ns, err, w)
				}
			}
		}
	}
}

// census counts the DaemonSets that mount pipes and those that run as
// HostProcess.
func census(objs renderedObjects) (mounting, hostProcess int) {
	for _, ds := range objs.sets {
		if len(pipeMounts(ds.Spec.Template.Spec)) > 0 {
			mounting++
		}
		if isHostProcess(ds.Spec.Template.Spec) {
			hostProcess++
		}
	}
	return mounting, hostProcess
}

// createAccounts creates the render's ServiceAccounts in ns, so that its
// pods pass the API server's ServiceAccount admission.
func createAccounts(t *testing.T, cl *cluster, objs renderedObjects, ns string) {
	t.Helper()
	for _, sa := range objs.accounts {
		if err := cl.client.Create(context.Background(), inNamespace(sa, ns)); err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatalf("ServiceAccount %s in %s: %v", sa.Name, ns, err)
		}
	}
}

func TestLeastPrivilegeRecipe(t *testing.T) {
	if _, err := os.Stat(realManifests); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("%s is not there (it is kept beside the repository, not in it)", realManifests)
	}
	drivers := []struct {
		ns                 string
		pipes, hostProcess []string // renders: pipe mode, HostProcess mode
	}{
		{"csi-smb", []string{"helm-smb-latest-pipes.yaml"}, []string{"helm-smb-latest-hostprocess.yaml", "helm-smb-latest-pipes-csiproxy.yaml"}},
		{"azure-disk", []string{"helm-azuredisk-latest-pipes.yaml"}, []string{"helm-azuredisk-latest-hostprocess.yaml"}},
		{"azure-file", []string{"helm-azurefile-latest-pipes.yaml"}, []string{"helm-azurefile-latest-hostprocess.yaml"}},
	}
	cl := startClusterWith(t, func(o *app.Options) { o.WebhookConfigName = "pipeguard" })
	for _, ns := range []string{agentNS, "csi-smb", "azure-disk", "azure-file"} {
		cl.mustCreate(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	for i, p := range recipePolicies(t, drivers[0].ns) {
		cl.mustCreate(t, p)
		want := ""
		if i == 1 {
			want = "warning: spec.allow.hostProcess is false"
		}
		waitReady(t, cl, p.Name, metav1.ConditionTrue, want)
	}
	waitRouting(t, cl.client, "true")

	agent := readManifest(t, "../../../config/agent/daemonset.yaml")
	if !isHostProcess(agent.sets[0].Spec.Template.Spec) {
		t.Fatal("config/agent/daemonset.yaml is no HostProcess DaemonSet")
	}
	cl.mustCreate(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: agent.sets[0].Spec.Template.Spec.ServiceAccountName, Namespace: agentNS}})

	for i, d := range drivers {
		t.Run(d.ns, func(t *testing.T) {
			if i > 0 {
				cl.updatePolicy(t, "csi-driver-pipes", func(p *v1alpha1.PipeAccessPolicy) { p.Spec.Allow.Namespaces = []string{d.ns} })
				waitReady(t, cl, "csi-driver-pipes", metav1.ConditionTrue, "")
			}
			for _, file := range append(append([]string{}, d.pipes...), d.hostProcess...) {
				objs := readManifest(t, realManifests+file)
				if mounting, hp := census(objs); slices.Contains(d.pipes, file) && (mounting == 0 || hp > 0) ||
					slices.Contains(d.hostProcess, file) && hp == 0 {
					t.Fatalf("%s: %d DaemonSets mount pipes and %d are HostProcess: not the render the recipe reads", file, mounting, hp)
				}
				// team-a, and the namespace of another driver, which the
				// policy no longer names.
				for _, ns := range []string{d.ns, "team-a", drivers[(i+1)%len(drivers)].ns} {
					createAccounts(t, cl, objs, ns)
					t.Run(file+" in "+ns, func(t *testing.T) { checkRender(t, cl, objs, ns, d.ns) })
				}
			}
			// The agent, the one HostProcess container the recipe allows,
			// only in its namespace.
			checkRender(t, cl, agent, agentNS, d.ns)
			err := cl.client.Create(context.Background(), inNamespace(agent.sets[0], d.ns), client.DryRunAll)
			denied(t, err, fmt.Sprintf(`PipeAccessPolicy "agent-hostprocess" withholds the HostProcess allowance and namespace %q is not allowed`, d.ns))
		})
	}
}
