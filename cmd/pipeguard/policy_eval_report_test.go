package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/controller/policyreport"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// readReports decodes the YAML stream --policy-report wrote.
func readReports(t *testing.T, data []byte) []reportObject {
	t.Helper()
	var out []reportObject
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		chunk, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var rep reportObject
		if err := yaml.UnmarshalStrict(chunk, &rep); err != nil {
			t.Fatalf("%v\n%s", err, chunk)
		}
		out = append(out, rep)
	}
}

// TestPolicyEvalPolicyReport: --policy-report writes one PolicyReport per
// namespace and a ClusterPolicyReport, with policyreport's mapping (deny is
// fail, warn and dryrun are warn) and a pass result for each object
// admitted with nothing to report; objects that are not reviewed are left
// out. The table and the exit code stay as they are.
func TestPolicyEvalPolicyReport(t *testing.T) {
	file := filepath.Join(t.TempDir(), "report.yaml")
	_, table, _ := runCLI(t, "", "policy", "eval", "-f", "testdata/mixed.yaml")
	code, out, errOut := runCLI(t, "", "policy", "eval", "-f", "testdata/mixed.yaml", "--policy-report", file)
	if code != exitDenied || out != table || errOut != "" {
		t.Fatalf("exit %d, want %d and the table; stderr %q\n%s", code, exitDenied, errOut, out)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	reps := readReports(t, data)
	type row struct{ kind, ns, policy, rule, result, object string }
	var got []row
	for _, rep := range reps {
		if rep.APIVersion != "wgpolicyk8s.io/v1alpha2" || rep.Metadata.Name != "pipeguard-policy-eval" || rep.Metadata.Namespace != rep.Namespace() {
			t.Errorf("report header %+v", rep)
		}
		var sum policyreport.Summary
		for _, r := range rep.Results {
			res := r.Resources[0]
			got = append(got, row{rep.Kind, rep.Metadata.Namespace, r.Policy, r.Rule, r.Result, res.Kind + " " + res.Namespace + "/" + res.Name})
			switch r.Result {
			case "pass":
				sum.Pass++
			case "fail":
				sum.Fail++
			case "warn":
				sum.Warn++
			}
		}
		if rep.Summary != sum {
			t.Errorf("%s %s: summary %+v, its results count %+v", rep.Kind, rep.Metadata.Namespace, rep.Summary, sum)
		}
	}
	want := []row{
		{"ClusterPolicyReport", "", "pipeguard-default", "protected-pipe-pv", "fail", "PersistentVolume /pipe-pv"},
		{"PolicyReport", "default", "pipeguard-default", "protected-pipe-mount", "fail", "Pod default/sneaky"},
		{"PolicyReport", "storage", "pipeguard-default", "", "pass", "Pod storage/driver"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("results:\n%v\nwant:\n%v\n%s", got, want, data)
	}

	// To standard output: the report in place of the table.
	code, out, _ = runCLI(t, "", "policy", "eval", "-f", "testdata/mixed.yaml", "--policy-report", "-")
	if code != exitDenied || !strings.HasPrefix(out, "apiVersion: wgpolicyk8s.io/v1alpha2\nkind: ClusterPolicyReport\n") || strings.Contains(out, "Summary:") {
		t.Fatalf("--policy-report -: exit %d\n%s", code, out)
	}
	if n := len(readReports(t, []byte(out))); n != 3 {
		t.Errorf("--policy-report -: %d reports, want 3", n)
	}

	// In openreports.io: the same reports, as Reports and a ClusterReport
	// that say their source.
	code, wgOut, _ := runCLI(t, "", "policy", "eval", "-f", "testdata/mixed.yaml", "--policy-report", "-")
	code2, openOut, errOut := runCLI(t, "", "policy", "eval", "-f", "testdata/mixed.yaml", "--policy-report", "-", "--policy-report-api", "openreports.io/v1alpha1")
	if code != exitDenied || code2 != exitDenied || errOut != "" || !strings.HasPrefix(openOut, "apiVersion: openreports.io/v1alpha1\nkind: ClusterReport\n") {
		t.Fatalf("--policy-report-api openreports.io/v1alpha1: exit %d, stderr %q\n%s", code2, errOut, openOut)
	}
	wgReps, openReps := readReports(t, []byte(wgOut)), readReports(t, []byte(openOut))
	if len(wgReps) != len(openReps) {
		t.Fatalf("%d wgpolicyk8s.io reports, %d openreports.io reports", len(wgReps), len(openReps))
	}
	kinds := map[string]string{"PolicyReport": "Report", "ClusterPolicyReport": "ClusterReport"}
	for i, o := range openReps {
		w := wgReps[i]
		if o.APIVersion != "openreports.io/v1alpha1" || o.Kind != kinds[w.Kind] || o.Source != "pipeguard" || w.Source != "" || o.Metadata != w.Metadata {
			t.Errorf("openreports.io report %+v for wgpolicyk8s.io's %+v; want kind %s, source pipeguard, the same name", o, w, kinds[w.Kind])
		}
		for j := range o.Results {
			o.Results[j].Timestamp, w.Results[j].Timestamp = policyreport.Timestamp{}, policyreport.Timestamp{}
		}
		if !reflect.DeepEqual(o.Summary, w.Summary) || !reflect.DeepEqual(o.Results, w.Results) {
			t.Errorf("%s %s holds other results than its PolicyReport:\n%+v\n%+v", o.Kind, o.Metadata.Namespace, o.Results, w.Results)
		}
	}

	// A warn policy's findings are warn results under its name.
	code, out, _ = runCLI(t, pipePod, "policy", "eval", "-f", "-", "--policy", "testdata/warn-policy.yaml", "--policy-report", "-")
	reps = readReports(t, []byte(out))
	if code != exitOK || len(reps) != 1 || reps[0].Summary != (policyreport.Summary{Warn: 1}) || reps[0].Results[0].Policy != "rollout" || reps[0].Results[0].Properties["action"] != "warn" {
		t.Errorf("warn policy: exit %d\n%s", code, out)
	}

	for name, tc := range map[string]cliCase{
		"a directory as the file": {
			args: []string{"policy", "eval", "-f", "testdata/mixed.yaml", "--policy-report", "testdata"}, wantCode: 2,
			wantStderr: "pipeguard policy eval: --policy-report testdata: cannot write the report: open testdata: is a directory\n",
		},
		"- with -o": {
			args: []string{"policy", "eval", "-f", "testdata/mixed.yaml", "--policy-report", "-", "-o", "yaml"}, wantCode: 2,
			wantStderr: "pipeguard policy eval: --policy-report - writes the report to standard output in place of -o yaml: leave out -o, or write the report to a file\nSee 'pipeguard policy eval --help' for usage.\n",
		},
		"with -o input": {
			args: []string{"policy", "eval", "-f", "testdata/mixed.yaml", "--policy-report", "r.yaml", "-o", "input"}, wantCode: 2,
			wantStderr: "pipeguard policy eval: --policy-report writes results; -o input prints no results: leave out one of them\nSee 'pipeguard policy eval --help' for usage.\n",
		},
		"an API it does not write": {
			args: []string{"policy", "eval", "-f", "testdata/mixed.yaml", "--policy-report", "-", "--policy-report-api", "reports.x-k8s.io/v1beta2"}, wantCode: 2,
			wantStderr: "pipeguard policy eval: --policy-report-api \"reports.x-k8s.io/v1beta2\": choose wgpolicyk8s.io/v1alpha2 or openreports.io/v1alpha1\nSee 'pipeguard policy eval --help' for usage.\n",
		},
		"--policy-report-api without --policy-report": {
			args: []string{"policy", "eval", "-f", "testdata/mixed.yaml", "--policy-report-api", "openreports.io/v1alpha1"}, wantCode: 2,
			wantStderr: "pipeguard policy eval: --policy-report-api says which API --policy-report writes: give --policy-report FILE too\nSee 'pipeguard policy eval --help' for usage.\n",
		},
		"with --cluster": {
			args: []string{"policy", "eval", "--cluster", "--policy-report", "r.yaml"}, wantCode: 2,
			wantStderr: "pipeguard policy eval: --policy-report is for manifests; in a cluster, pipeguard-webhook's background audit keeps PolicyReports (kubectl get policyreports -A)\nSee 'pipeguard policy eval --help' for usage.\n",
		},
	} {
		t.Run(name, tc.check)
	}
}

// Namespace is the namespace a report of this kind must have: none for
// the ClusterPolicyReport and the ClusterReport.
func (r reportObject) Namespace() string {
	if r.Kind == policyreport.KindClusterPolicyReport || r.Kind == policyreport.KindClusterReport {
		return ""
	}
	return r.Metadata.Namespace
}

// TestPolicyReportOnAPIServer: what --policy-report writes, in either
// API, is accepted by a real API server with the CRDs of
// config/policyreport and config/policyreport/openreports installed, and
// nothing of it is pruned: every report reads back as written.
func TestPolicyReportOnAPIServer(t *testing.T) {
	env := testenv.Start(t, testenv.Options{CRDDirectoryPaths: []string{
		filepath.Join("..", "..", "config", "policyreport", "crds"), filepath.Join("..", "..", "config", "policyreport", "openreports", "crds"),
	}})
	ctx := context.Background()
	stdin := pipePod + "---\n" + strings.Replace(pipePod, "name: sneaky", "name: dry", 1) + "---\n" +
		"apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: team-b}\nspec: {containers: [{name: web, image: web}]}\n"
	dir := t.TempDir()
	pols := filepath.Join(dir, "policies.yaml")
	writeFile(t, pols, "apiVersion: pipeguard.io/v1alpha1\nkind: PipeAccessPolicy\nmetadata: {name: gold}\nspec: {pipes: ['csi-proxy-disk-*'], enforcementAction: dryrun}\n")
	for _, ns := range []string{"team-a", "team-b"} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, api := range policyreport.APIs() {
		t.Run(api.GroupVersion.String(), func(t *testing.T) {
			code, out, errOut := runCLI(t, stdin+"---\n"+string(mustRead(t, "testdata/tree/sub/deeper/pipe-pv.json")), "policy", "eval", "-f", "-", "--policy", pols,
				"--policy-report", "-", "--policy-report-api", api.GroupVersion.String())
			if code != exitDenied {
				t.Fatalf("exit %d: %s\n%s", code, errOut, out)
			}
			reps := readReports(t, []byte(out))
			if len(reps) != 3 {
				t.Fatalf("%d reports, want 3 (cluster, team-a, team-b):\n%s", len(reps), out)
			}
			applyReports(t, env.Client, out)
		})
	}
}

// applyReports creates the reports of the stream out and checks that they
// read back as written.
func applyReports(t *testing.T, c client.Client, out string) {
	t.Helper()
	ctx := context.Background()
	docs := bytes.Split([]byte(out), []byte("---\n"))
	for i, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(d, &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, u.DeepCopy()); err != nil {
			t.Fatalf("report %d is not accepted by the API server: %v\n%s", i, err, d)
		}
		back := &unstructured.Unstructured{}
		back.SetGroupVersionKind(u.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(u), back); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"summary", "results", "source"} {
			w, _ := json.Marshal(u.Object[f])
			g, _ := json.Marshal(back.Object[f])
			if !bytes.Equal(w, g) {
				t.Errorf("%s %s: %s was changed by the API server (pruned?):\nwrote %s\nread  %s", u.GetKind(), u.GetNamespace(), f, w, g)
			}
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
