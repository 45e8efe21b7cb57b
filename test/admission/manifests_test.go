package admission_test

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/internal/kinds"
)

const (
	manifestsFile = "config/webhook/manifests.yaml"
	docsFile      = "docs/writing-policies.md"
)

// namespaceReview are the resources the webhook receives for the Namespace
// label review, which is not a review of a kind for pipe mounts.
var namespaceReview = []string{"namespaces", "namespaces/status", "namespaces/finalize"}

// prefilterPaths is, for each layout, how the start of a webhook's
// may-name-a-pipe matchCondition reaches the object's volumes or host
// path. A kind sent through a webhook whose condition reads another path
// would find nothing there and skip the webhook.
var prefilterPaths = map[kinds.Layout]string{
	kinds.LayoutPod:              "object.spec.?volumes.",
	kinds.LayoutPodTemplate:      "object.?template.?spec.?volumes.",
	kinds.LayoutWorkload:         "object.spec.?template.?spec.?volumes.",
	kinds.LayoutCronJob:          "object.spec.?jobTemplate.?spec.?template.?spec.?volumes.",
	kinds.LayoutPersistentVolume: "[?object.spec.?hostPath.?path, ?object.spec.?local.?path]",
}

// manifestProblems returns what in data, the webhook configuration, is out
// of step with the table: a reviewed kind or subresource no rule sends on
// CREATE and UPDATE, a resource sent that is no reviewed kind, and a
// prefilter that reads the wrong path for a kind it guards.
func manifestProblems(data []byte) []string {
	var problems []string
	var hooks []admissionregistrationv1.ValidatingWebhook
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var c admissionregistrationv1.ValidatingWebhookConfiguration
		if err := yaml.UnmarshalStrict(doc, &c); err != nil {
			return []string{fmt.Sprintf("%s: %v", manifestsFile, err)}
		}
		hooks = append(hooks, c.Webhooks...)
	}
	known := map[string]kinds.Kind{} // group/resource of every reviewed resource
	for _, k := range kinds.All() {
		known[k.GVK.Group+"/"+k.Resource] = k
		for _, sub := range k.Subresources {
			known[k.GVK.Group+"/"+k.Resource+"/"+sub] = k
		}
	}
	sent := map[string]bool{} // group/version/resource sent on CREATE and UPDATE
	for _, h := range hooks {
		if slices.ContainsFunc(h.MatchConditions, func(mc admissionregistrationv1.MatchCondition) bool {
			return mc.Name == "runs-hostprocess" || mc.Name == "mounts-a-claim"
		}) {
			// It sends HostProcess objects, or objects with claims, whatever
			// their paths, and only while the cluster needs it, so it stands
			// in for no path prefilter: the routing tests of this package
			// (hostprocess_test.go) evaluate it on every kind.
			continue
		}
		layouts := map[kinds.Layout][]string{}
		for _, r := range h.Rules {
			both := slices.Contains(r.Operations, admissionregistrationv1.Create) && slices.Contains(r.Operations, admissionregistrationv1.Update)
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					k, ok := known[g+"/"+res]
					if !ok {
						if g != "" || !slices.Contains(namespaceReview, res) {
							problems = append(problems, fmt.Sprintf("%s: webhook %s sends %q resource %q, which is no kind pipeguard reviews: remove it, or add the kind to internal/kinds", manifestsFile, h.Name, g, res))
						}
						continue
					}
					layouts[k.Layout] = append(layouts[k.Layout], k.GVK.Kind)
					for _, v := range r.APIVersions {
						if both {
							sent[g+"/"+v+"/"+res] = true
						}
					}
				}
			}
		}
		if len(layouts) == 0 {
			continue
		}
		var cond string
		for _, mc := range h.MatchConditions {
			if mc.Name == "may-name-a-pipe" {
				cond = strings.TrimSpace(mc.Expression)
			}
		}
		if len(h.MatchConditions) == 0 {
			continue // every object goes to the webhook
		}

		for l, ks := range layouts {
			want, ok := prefilterPaths[l]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: webhook %s sends %s, of layout %d, whose volumes this test does not know where to find: add the layout to prefilterPaths", manifestsFile, h.Name, strings.Join(ks, ", "), l))
				continue
			}
			if cond == "" || !strings.HasPrefix(cond, want) {
				problems = append(problems, fmt.Sprintf("%s: webhook %s sends %s, but its may-name-a-pipe matchCondition does not start from %s: send them through a webhook whose condition reads that path", manifestsFile, h.Name, strings.Join(ks, ", "), want))
			}
		}
	}
	for _, k := range kinds.All() {
		res := append([]string{k.Resource}, k.Subresources...)
		for i := 1; i < len(res); i++ {
			res[i] = k.Resource + "/" + res[i]
		}
		for _, r := range res {
			if !sent[k.GVK.Group+"/"+k.GVK.Version+"/"+r] {
				problems = append(problems, fmt.Sprintf("%s: no webhook rule sends CREATE and UPDATE of %s (apiGroups [%q], apiVersions [%s], resources [%s]): add one", manifestsFile, k.GVK.Kind, k.GVK.Group, k.GVK.Version, r))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// docsRow is a row of the table under "## What is reviewed"; its first
// cell names kinds, with notes in parentheses.
var docsRow = regexp.MustCompile(`(?m)^\|([^|]*)\|`)

// docsProblems returns the reviewed kinds the list in data, the policy
// writers' guide, leaves out, and the kinds it names that are not reviewed.
func docsProblems(data []byte) []string {
	text := string(data)
	start := strings.Index(text, "\n## What is reviewed\n")
	if start < 0 {
		return []string{docsFile + `: no section "## What is reviewed"; it lists the kinds pipeguard reviews`}
	}
	text = text[start+1:]
	if end := strings.Index(text[3:], "\n## "); end >= 0 {
		text = text[:end+3]
	}
	named := map[string]bool{}
	for _, m := range docsRow.FindAllStringSubmatch(text, -1) {
		cell := regexp.MustCompile(`\([^)]*\)`).ReplaceAllString(m[1], "")
		if strings.TrimSpace(cell) == "kind" || strings.Trim(cell, "- ") == "" {
			continue // header and separator
		}
		for _, name := range strings.Split(cell, ",") {
			if name = strings.TrimSpace(name); name != "" {
				named[name] = true
			}
		}
	}
	var problems []string
	for _, k := range kinds.All() {
		if !named[k.GVK.Kind] {
			problems = append(problems, fmt.Sprintf("%s: the table under \"What is reviewed\" does not name %s, which pipeguard reviews: add it", docsFile, k.GVK.Kind))
		}
		delete(named, k.GVK.Kind)
	}
	for name := range named {
		problems = append(problems, fmt.Sprintf("%s: the table under \"What is reviewed\" names %s, which pipeguard does not review: remove it, or add the kind to internal/kinds", docsFile, name))
	}
	sort.Strings(problems)
	return problems
}

func readRepoFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("../../" + name)
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return data
}

// TestManifestsMatchTable: the webhook configuration sends every reviewed
// kind, and nothing else but the Namespace review, each through a
// prefilter that reads where that kind keeps its volumes.
func TestManifestsMatchTable(t *testing.T) {
	for _, p := range manifestProblems(readRepoFile(t, manifestsFile)) {
		t.Error(p)
	}
}

// TestDocsMatchTable: the policy writers' guide names every reviewed kind
// and no other.
func TestDocsMatchTable(t *testing.T) {
	for _, p := range docsProblems(readRepoFile(t, docsFile)) {
		t.Error(p)
	}
}

// TestCheckersFindDrift: the checks above fail, naming the kind and the
// file, when the configuration or the guide drifts from the table.
func TestCheckersFindDrift(t *testing.T) {
	manifests := string(readRepoFile(t, manifestsFile))
	docs := string(readRepoFile(t, docsFile))
	replace := func(t *testing.T, s, old, new string) []byte {
		t.Helper()
		if !strings.Contains(s, old) {
			t.Fatalf("%q is not in the file any more: update this test", old)
		}
		return []byte(strings.Replace(s, old, new, 1))
	}
	tests := map[string]struct {
		check func([]byte) []string
		data  func(t *testing.T) []byte
		want  []string
	}{
		"a kind missing from the rules": {
			check: manifestProblems,
			data: func(t *testing.T) []byte {
				return replace(t, manifests, "resources: [deployments, replicasets, statefulsets, daemonsets]", "resources: [deployments, replicasets, statefulsets]")
			},
			want: []string{manifestsFile + `: no webhook rule sends CREATE and UPDATE of DaemonSet (apiGroups ["apps"], apiVersions [v1], resources [daemonsets]): add one`},
		},
		"a kind sent on CREATE only": {
			check: manifestProblems,
			data: func(t *testing.T) []byte {
				return replace(t, manifests, "operations: [CREATE, UPDATE]\n    resources: [cronjobs]", "operations: [CREATE]\n    resources: [cronjobs]")
			},
			want: []string{manifestsFile + `: no webhook rule sends CREATE and UPDATE of CronJob (apiGroups ["batch"], apiVersions [v1], resources [cronjobs]): add one`},
		},
		"a subresource missing": {
			check: manifestProblems,
			data: func(t *testing.T) []byte {
				return replace(t, manifests, "resources: [pods, pods/ephemeralcontainers]", "resources: [pods]")
			},
			want: []string{manifestsFile + `: no webhook rule sends CREATE and UPDATE of Pod (apiGroups [""], apiVersions [v1], resources [pods/ephemeralcontainers]): add one`},
		},
		"a kind that is not reviewed": {
			check: manifestProblems,
			data: func(t *testing.T) []byte {
				return replace(t, manifests, "resources: [jobs]", "resources: [jobs, widgets]")
			},
			want: []string{manifestsFile + `: webhook workloads.pipeguard.io sends "batch" resource "widgets", which is no kind pipeguard reviews: remove it, or add the kind to internal/kinds`},
		},
		"every resource of a group": {
			check: manifestProblems,
			data: func(t *testing.T) []byte {
				return replace(t, manifests, "resources: [jobs]", "resources: [jobs, \"*\"]")
			},
			want: []string{manifestsFile + `: webhook workloads.pipeguard.io sends "batch" resource "*", which is no kind pipeguard reviews: remove it, or add the kind to internal/kinds`},
		},
		"a kind behind another kind's prefilter": {
			check: manifestProblems,
			data: func(t *testing.T) []byte {
				return replace(t, manifests, "resources: [jobs]", "resources: [jobs, cronjobs]")
			},
			want: []string{manifestsFile + ": webhook workloads.pipeguard.io sends CronJob, but its may-name-a-pipe matchCondition does not start from object.spec.?jobTemplate.?spec.?template.?spec.?volumes.: send them through a webhook whose condition reads that path"},
		},
		"garbage": {
			check: manifestProblems,
			data:  func(t *testing.T) []byte { return []byte("webhooks: {rules: [") },
			want:  []string{manifestsFile + ": error converting YAML to JSON: yaml: line 1: did not find expected node content"},
		},
		"a kind missing from the guide": {
			check: docsProblems,
			data: func(t *testing.T) []byte {
				return replace(t, docs, "Job, CronJob, ReplicationController", "Job, ReplicationController")
			},
			want: []string{docsFile + `: the table under "What is reviewed" does not name CronJob, which pipeguard reviews: add it`},
		},
		"a kind the guide names in excess": {
			check: docsProblems,
			data: func(t *testing.T) []byte {
				return replace(t, docs, "| PersistentVolume |", "| PersistentVolume, CSIDriver |")
			},
			want: []string{docsFile + `: the table under "What is reviewed" names CSIDriver, which pipeguard does not review: remove it, or add the kind to internal/kinds`},
		},
		"no list in the guide": {
			check: docsProblems,
			data: func(t *testing.T) []byte {
				return replace(t, docs, "## What is reviewed", "## What is looked at")
			},
			want: []string{docsFile + `: no section "## What is reviewed"; it lists the kinds pipeguard reviews`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := tc.check(tc.data(t))
			if !slices.Equal(got, tc.want) {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
