package inventory_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/controller/inventory"
	"github.com/pipeguard/pipeguard/internal/kinds"
	"github.com/pipeguard/pipeguard/internal/testing/samplepods"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// realManifests holds upstream CSI driver manifests when the machine has
// them.
const realManifests = "/work/shared/real-manifests"

// corpusDoc is one object of the test corpus, as JSON, with its source.
type corpusDoc struct {
	source string
	json   []byte
}

func corpus(t *testing.T) []corpusDoc {
	t.Helper()
	var docs []corpusDoc
	for _, p := range []*corev1.Pod{samplepods.CSINode(), samplepods.Plain()} {
		p.APIVersion, p.Kind = "v1", "Pod"
		raw, err := runtime.Encode(serializer.NewCodecFactory(clientgoscheme.Scheme).LegacyCodec(corev1.SchemeGroupVersion), p)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, corpusDoc{"samplepods/" + p.Name, raw})
	}
	// What an attacker would try against a trimmed cache: the pipe behind
	// a subPath or subPathExpr, hostProcess set on the pod and revoked on a
	// container, an ephemeral container, an init container, a second
	// volume of the same name.
	docs = append(docs, corpusDoc{"crafted", []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"crafted","annotations":{"a":"b"}},
"spec":{"securityContext":{"windowsOptions":{"hostProcess":true}},"serviceAccountName":"csi-azuredisk-node-sa",
"volumes":[{"name":"dir","hostPath":{"path":"\\\\.\\pipe"}},{"name":"x","emptyDir":{}},{"name":"x","hostPath":{"path":"//./pipe/csi-proxy-smb-v1"}}],
"initContainers":[{"name":"init","image":"i","volumeMounts":[{"name":"dir","mountPath":"/a","subPath":"csi-proxy-disk-v1"}]}],
"containers":[{"name":"c","image":"i","env":[{"name":"E","value":"v"}],"securityContext":{"windowsOptions":{"hostProcess":false}},"volumeMounts":[{"name":"dir","mountPath":"/b","subPathExpr":"$(E)"},{"name":"x","mountPath":"/c","readOnly":true}]}],
"ephemeralContainers":[{"name":"debug","image":"i","securityContext":{"privileged":false},"volumeMounts":[{"name":"x","mountPath":"/d"}]}]}}`)})
	// A known-vulnerable CSI Proxy, whose image the rule
	// vulnerable-csi-proxy reads, beside an ordinary container whose image
	// does not matter.
	docs = append(docs, corpusDoc{"crafted-csi-proxy", []byte(`{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"csi-proxy"},
"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"hostNetwork":true,
"initContainers":[{"name":"plain","image":"csi-proxy:v1.0.0","securityContext":{"windowsOptions":{"hostProcess":false}}}],
"containers":[{"name":"csi-proxy","image":"ghcr.io/kubernetes-sigs/sig-windows/csi-proxy:v1.1.2","securityContext":{"windowsOptions":{"hostProcess":true}}}]}}}}`)})
	dirs := []string{filepath.Join("..", "..", "cmd", "pipeguard", "testdata")}
	if _, err := os.Stat(realManifests); err == nil {
		dirs = append(dirs, realManifests)
	} else {
		t.Logf("%s absent: the corpus is the repository's manifests only", realManifests)
	}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
			for i := 0; ; i++ {
				var raw runtime.RawExtension
				if err := dec.Decode(&raw); err != nil {
					if errors.Is(err, io.EOF) {
						return nil
					}
					// Deliberately broken manifests are not objects.
					return nil
				}
				if len(bytes.TrimSpace(raw.Raw)) > 0 && !bytes.Equal(bytes.TrimSpace(raw.Raw), []byte("null")) {
					docs = append(docs, corpusDoc{path, raw.Raw})
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return docs
}

// TestStripKeepsTheDecision asserts, over every object of the corpus that
// the webhook reviews, that admission decides the same on the object an
// audit cache keeps (stripped) as on the whole object the API server sends,
// in an allowed and a not allowed namespace, under the default policy and
// under a policy that narrows the allowance to a ServiceAccount.
func TestStripKeepsTheDecision(t *testing.T) {
	ctx := context.Background()
	deflt, err := policy.NewEngine(ctx, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	narrowed, err := policy.NewEngine(ctx, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := narrowed.Load(ctx, []v1alpha1.PipeAccessPolicy{{
		ObjectMeta: metaName("sa-only"),
		Spec: v1alpha1.PipeAccessPolicySpec{
			Pipes: []string{"csi-proxy-*"},
			Allow: v1alpha1.Allowances{Namespaces: []string{"allowed"}, ServiceAccounts: []string{"csi-azuredisk-node-sa"}},
		},
	}}); err != nil {
		t.Fatal(err)
	}
	decoder := serializer.NewCodecFactory(clientgoscheme.Scheme).UniversalDeserializer()
	reviewed, denied, warned := 0, 0, 0
	for _, d := range corpus(t) {
		obj, gvk, err := decoder.Decode(d.json, nil, nil)
		if err != nil {
			continue // not a built-in kind (CRDs, policies, kustomizations)
		}
		co, ok := obj.(client.Object)
		if !ok {
			continue
		}
		k, ok := kinds.ForObject(co)
		if !ok {
			continue
		}
		reviewed++
		stripped, err := inventory.Strip(co)
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range []string{"allowed", "plain"} {
			if k.Namespaced {
				co.SetNamespace(ns)
				stripped.(client.Object).SetNamespace(ns)
			}
			namespaces := webhook.StaticNamespaces{"allowed": {"pipeguard.io/allow-csi-proxy": "true"}, "plain": {}}
			for name, engine := range map[string]*policy.Engine{"default": deflt, "narrowed": narrowed} {
				e := inventory.NewEvaluator(engine, namespaces, nil)
				json, err := runtimeEncode(co)
				if err != nil {
					t.Fatal(err)
				}
				whole, err := e.Evaluate(ctx, k, co.GetNamespace(), co.GetName(), json)
				if err != nil {
					t.Fatalf("%s: %s %s: %v", d.source, gvk.Kind, co.GetName(), err)
				}
				audit, err := e.EvaluateObject(ctx, stripped.(client.Object))
				if err != nil {
					t.Fatalf("%s: stripped %s %s: %v", d.source, gvk.Kind, co.GetName(), err)
				}
				if whole.Verdict == policy.Deny {
					denied++
				}
				if len(whole.Warn) > 0 {
					warned++
				}
				whole.Generation, audit.Generation = 0, 0
				if !reflect.DeepEqual(whole, audit) {
					t.Errorf("%s: %s %s in %q under %s policy: admission decides\n%+v\nbut on the stripped object\n%+v", d.source, gvk.Kind, co.GetName(), ns, name, whole, audit)
				}
			}
		}
	}
	if denied == 0 {
		t.Fatal("no object of the corpus is denied: the comparison proves nothing")
	}
	if warned == 0 {
		t.Fatal("no object of the corpus is warned: the comparison proves nothing of warnings")
	}
	if reviewed < 3 {
		t.Fatalf("the corpus holds %d reviewed objects; want at least 3", reviewed)
	}
	t.Logf("%d objects compared, %d denials", reviewed, denied)
}

func runtimeEncode(obj runtime.Object) ([]byte, error) {
	return runtime.Encode(serializer.NewCodecFactory(clientgoscheme.Scheme).LegacyCodec(appsBatch...), obj)
}

var appsBatch = []schema.GroupVersion{corev1.SchemeGroupVersion, appsv1.SchemeGroupVersion, batchv1.SchemeGroupVersion}

func metaName(n string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: n} }
