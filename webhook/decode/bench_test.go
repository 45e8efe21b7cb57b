package decode

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	kjson "sigs.k8s.io/json"

	"github.com/pipeguard/pipeguard/internal/testing/samplepods"
)

// apiServerPod is the CSI node pod as kube-apiserver sends it in a CREATE
// review: created by the DaemonSet controller, with its managedFields,
// defaulted fields, the projected ServiceAccount token volume and an
// initial status.
func apiServerPod(tb testing.TB) []byte {
	p := samplepods.CSINode()
	yes, no := true, false
	grace, mode, expiry := int64(30), int32(420), int64(3607)
	p.GenerateName = "csi-azuredisk-node-win-"
	p.UID = "7c4b1f4e-0d0a-4a5e-9f43-3b8a5c2d9e11"
	p.CreationTimestamp = metav1.NewTime(time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC))
	p.Labels["controller-revision-hash"] = "6b9f8d7c5"
	p.Labels["pod-template-generation"] = "3"
	p.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-11-20T08:00:00Z"}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "csi-azuredisk-node-win",
		UID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", Controller: &yes, BlockOwnerDeletion: &yes}}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{
		Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		Time: &p.CreationTimestamp, FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/restartedAt":{}},"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:controller-revision-hash":{},"f:pod-template-generation":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\"}":{}}},"f:spec":{"f:affinity":{".":{},"f:nodeAffinity":{".":{},"f:requiredDuringSchedulingIgnoredDuringExecution":{}}},"f:containers":{"k:{\"name\":\"azuredisk\"}":{".":{},"f:args":{},"f:env":{".":{},"k:{\"name\":\"CSI_ENDPOINT\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{".":{},"f:limits":{".":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:securityContext":{".":{},"f:windowsOptions":{".":{},"f:hostProcess":{}}},"f:volumeMounts":{}},"k:{\"name\":\"liveness-probe\"}":{".":{},"f:image":{},"f:name":{},"f:volumeMounts":{}},"k:{\"name\":\"node-driver-registrar\"}":{".":{},"f:image":{},"f:name":{},"f:volumeMounts":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:nodeSelector":{},"f:restartPolicy":{},"f:schedulerName":{},"f:serviceAccount":{},"f:serviceAccountName":{},"f:terminationGracePeriodSeconds":{},"f:tolerations":{},"f:volumes":{}}}`)},
	}}
	p.Spec.DeprecatedServiceAccount = p.Spec.ServiceAccountName
	p.Spec.NodeName = "akswin000002"
	p.Spec.RestartPolicy = corev1.RestartPolicyAlways
	p.Spec.DNSPolicy = corev1.DNSClusterFirst
	p.Spec.SchedulerName = "default-scheduler"
	p.Spec.TerminationGracePeriodSeconds = &grace
	p.Spec.EnableServiceLinks = &yes
	p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "kube-api-access-9xk2d", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiry}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		},
	}}})
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		c.ImagePullPolicy = corev1.PullIfNotPresent
		c.TerminationMessagePath = "/dev/termination-log"
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "kube-api-access-9xk2d", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true})
	}
	az := &p.Spec.Containers[2]
	az.Args = []string{"--v=5", "--endpoint=$(CSI_ENDPOINT)", "--nodeid=$(KUBE_NODE_NAME)", "--metrics-address=0.0.0.0:29605"}
	az.Env = []corev1.EnvVar{{Name: "CSI_ENDPOINT", Value: `unix://C:\var\lib\kubelet\plugins\disk.csi.azure.com\csi.sock`}}
	az.Ports = []corev1.ContainerPort{{Name: "healthz", ContainerPort: 29603, Protocol: corev1.ProtocolTCP}}
	az.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("healthz"), Scheme: corev1.URISchemeHTTP}},
		InitialDelaySeconds: 30, TimeoutSeconds: 10, PeriodSeconds: 30, SuccessThreshold: 1, FailureThreshold: 5}
	az.Resources = corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("40Mi")},
	}
	az.SecurityContext.Privileged = &no
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable}
	raw, err := json.Marshal(p)
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// BenchmarkDecode compares Object with sigs.k8s.io/json decoding into the
// same narrow types, on the same inputs.
func BenchmarkDecode(b *testing.B) {
	marshal := func(v any) []byte {
		raw, err := json.Marshal(v)
		if err != nil {
			b.Fatal(err)
		}
		return raw
	}
	for _, in := range []struct {
		name string
		raw  []byte
	}{
		{"apiserver-pod", apiServerPod(b)},
		{"csi-node-pod", marshal(samplepods.CSINode())},
		{"plain-pod", marshal(samplepods.Plain())},
	} {
		b.Run(in.name+"/fast", func(b *testing.B) {
			measure(b, in.raw, func() error {
				_, err := Object[Pod](in.raw)
				return err
			})
		})
		b.Run(in.name+"/sigsjson", func(b *testing.B) {
			measure(b, in.raw, func() error {
				var o Pod
				return kjson.UnmarshalCaseSensitivePreserveInts(in.raw, &o)
			})
		})
	}
}

// measure runs decode over and over, reporting the process's CPU time per
// decode as well: on a busy machine it stays close to the cost of the work
// while wall-clock time does not.
func measure(b *testing.B, raw []byte, decode func() error) {
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	start := processCPU()
	for b.Loop() {
		if err := decode(); err != nil {
			b.Fatal(err)
		}
	}
	if cpu := processCPU() - start; cpu > 0 {
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	}
}

// The pod of BenchmarkDecode is what it is meant to be: about 5 KB, with
// managedFields, decoded alike both ways.
func TestAPIServerPod(t *testing.T) {
	raw := apiServerPod(t)
	if len(raw) < 4500 || len(raw) > 6000 {
		t.Errorf("the pod is %d bytes, want about 5 KB", len(raw))
	}
	checkAgainstJSON(t, raw)
	o, err := Object[Pod](raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Spec.Volumes) != 8 || len(o.Spec.Containers) != 3 || o.Spec.Volumes[0].HostPath == nil {
		t.Errorf("decoded %+v", o.Spec)
	}
}
