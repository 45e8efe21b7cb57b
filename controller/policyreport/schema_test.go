package policyreport

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// crdDirs are where config/policyreport keeps the CRDs of each API.
var crdDirs = map[string]string{
	GroupVersion.Group:            "../../config/policyreport/crds",
	OpenReportsGroupVersion.Group: "../../config/policyreport/openreports/crds",
}

// loadCRD reads one CRD of config/policyreport as the API server would
// hold it.
func loadCRD(t *testing.T, api API, file string) *apiextensions.CustomResourceDefinition {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(crdDirs[api.GroupVersion.Group], file))
	if err != nil {
		t.Fatal(err)
	}
	var v1 apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &v1); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&v1)
	var crd apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&v1, &crd, nil); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	crd.Status.StoredVersions = []string{api.GroupVersion.Version}
	return &crd
}

// TestCRDsHoldWhatTheWriterWrites: the CRDs of config/policyreport
// (wgpolicyk8s.io) and config/policyreport/openreports (openreports.io)
// are valid, structural, serve their one version, and keep every field the
// writer writes: nothing is pruned (the API server would drop it silently)
// and nothing fails validation.
func TestCRDsHoldWhatTheWriterWrites(t *testing.T) {
	pv := Violation{APIVersion: "v1", Kind: "PersistentVolume", Name: "pipe-pv", UID: "uid-pv", Policy: "pipeguard-default",
		Rule: "protected-pipe-pv", Action: "deny", Message: "m", Pipe: "csi-proxy-disk-v1"}
	reports := Build([]Violation{
		podViolation("team-a", "bad", "deny"), podViolation("team-a", "w", "warn"), podViolation("team-a", "d", "dryrun"),
		podViolation("team-a", "omitted", "deny"), pv,
	}, t0, nil, Limits{Results: 3})
	for file, tc := range map[string]struct {
		api             API
		kind, namespace string
		scope           apiextensions.ResourceScope
	}{
		"wgpolicyk8s.io_policyreports.yaml":        {WGPolicy(), KindPolicyReport, "team-a", apiextensions.NamespaceScoped},
		"wgpolicyk8s.io_clusterpolicyreports.yaml": {WGPolicy(), KindClusterPolicyReport, "", apiextensions.ClusterScoped},
		"openreports.io_reports.yaml":              {OpenReports(), KindReport, "team-a", apiextensions.NamespaceScoped},
		"openreports.io_clusterreports.yaml":       {OpenReports(), KindClusterReport, "", apiextensions.ClusterScoped},
	} {
		gv := tc.api.GroupVersion
		t.Run(gv.Group+"/"+tc.kind, func(t *testing.T) {
			crd := loadCRD(t, tc.api, file)
			if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), crd); len(errs) > 0 {
				t.Fatalf("%s is not a valid CRD: %v", file, errs.ToAggregate())
			}
			if crd.Spec.Group != gv.Group || crd.Spec.Names.Kind != tc.kind || crd.Spec.Scope != tc.scope {
				t.Fatalf("%s defines %s %s (%s), want %s %s (%s)", file, crd.Spec.Group, crd.Spec.Names.Kind, crd.Spec.Scope, gv.Group, tc.kind, tc.scope)
			}
			if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != gv.Version || !crd.Spec.Versions[0].Served || !crd.Spec.Versions[0].Storage {
				t.Fatalf("%s versions %+v, want %s served and stored", file, crd.Spec.Versions, gv.Version)
			}
			v := crd.Spec.Versions[0]
			// The internal form holds a schema and columns that every
			// version shares at the top.
			sch, columns := crd.Spec.Validation, crd.Spec.AdditionalPrinterColumns
			if v.Schema != nil {
				sch = v.Schema
			}
			if len(v.AdditionalPrinterColumns) > 0 {
				columns = v.AdditionalPrinterColumns
			}
			if sch == nil || sch.OpenAPIV3Schema == nil {
				t.Fatalf("%s has no schema", file)
			}
			cols := []string{}
			for _, c := range columns {
				if c.Priority == 0 {
					cols = append(cols, c.Name)
				}
			}
			if got := cols; len(got) != 6 || got[0] != "Pass" || got[1] != "Fail" || got[2] != "Warn" || got[3] != "Error" || got[4] != "Skip" || got[5] != "Age" {
				t.Errorf("printer columns %v, want Pass Fail Warn Error Skip Age", got)
			}
			s, err := structuralschema.NewStructural(sch.OpenAPIV3Schema)
			if err != nil {
				t.Fatal(err)
			}
			if errs := structuralschema.ValidateStructural(nil, s); len(errs) > 0 {
				t.Fatalf("%s schema is not structural: %v", file, errs.ToAggregate())
			}
			rep := reports[tc.namespace]
			if len(rep.Results) == 0 {
				t.Fatalf("no results to check for %q", tc.namespace)
			}
			u, err := newObject(tc.api, rep)
			if err != nil {
				t.Fatal(err)
			}
			if u.GetKind() != tc.kind {
				t.Fatalf("the writer writes kind %s into %s", u.GetKind(), file)
			}
			if got, _ := u.Object["source"].(string); got != tc.api.ReportSource {
				t.Errorf("the report's source %q, want %q", got, tc.api.ReportSource)
			}
			obj := runtime.DeepCopyJSON(u.Object)
			obj["metadata"] = map[string]any{"name": u.GetName(), "namespace": u.GetNamespace(), "labels": map[string]any{ManagedByLabel: ManagedBy}}
			opts := structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}
			if pruned := pruning.PruneWithOptions(obj, s, true, opts); len(pruned) > 0 {
				t.Errorf("the API server would drop fields the writer writes: %v", pruned)
			}
			validator, _, err := validation.NewSchemaValidator(sch.OpenAPIV3Schema)
			if err != nil {
				t.Fatal(err)
			}
			if errs := validation.ValidateCustomResource(nil, u.Object, validator); len(errs) > 0 {
				t.Errorf("the writer's %s fails the schema: %v", tc.kind, errs.ToAggregate())
			}

			// The schema is not a formality: a result value outside the
			// enum fails it.
			bad := runtime.DeepCopyJSON(u.Object)
			bad["results"].([]any)[0].(map[string]any)["result"] = "failed"
			if errs := validation.ValidateCustomResource(nil, bad, validator); len(errs) == 0 {
				t.Error("a result \"failed\" passed the schema")
			}

			// What other producers write into the same CRDs is kept too:
			// scope, and, in openreports.io, the configuration.
			full := runtime.DeepCopyJSON(obj)
			full["scope"] = map[string]any{"apiVersion": "v1", "kind": "Namespace", "name": "team-a"}
			if tc.api == OpenReports() {
				full["configuration"] = map[string]any{"limits": map[string]any{"maxResults": int64(MaxResults), "statusFilter": []any{"fail", "warn"}}}
			}
			if pruned := pruning.PruneWithOptions(full, s, true, opts); len(pruned) > 0 {
				t.Errorf("the API server would drop fields of the %s format: %v", gv, pruned)
			}
			if tc.api == OpenReports() {
				bad := runtime.DeepCopyJSON(full)
				bad["configuration"] = map[string]any{"limits": map[string]any{"statusFilter": []any{"failed"}}}
				if errs := validation.ValidateCustomResource(nil, bad, validator); len(errs) == 0 {
					t.Error("a statusFilter \"failed\" passed the schema")
				}
			}
		})
	}
}
