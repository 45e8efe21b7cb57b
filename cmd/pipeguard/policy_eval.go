package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kjson "sigs.k8s.io/json"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/controller/inventory"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// clusterScoped lists the kinds evaluated without a namespace.
var clusterScoped = map[string]bool{"PersistentVolume": true, "Namespace": true, "PipeAccessPolicy": true}

// evalResult is one object's outcome, as -o json prints it.
type evalResult struct {
	Source     string             `json:"source"`
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Namespace  string             `json:"namespace,omitempty"`
	Name       string             `json:"name"`
	Decision   string             `json:"decision"` // ALLOW, WARN or DENY
	Deny       []policy.Violation `json:"deny,omitempty"`
	Warn       []policy.Violation `json:"warn,omitempty"`
	DryRun     []policy.Violation `json:"dryrun,omitempty"`
	Generation int64              `json:"policyGeneration,omitempty"`
}

func policyEval(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pipeguard policy eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var files, policies, nsLabels repeated
	fs.Var(&files, "f", "manifest file, directory or - for stdin (repeatable); multi-document YAML, JSON and kind: List")
	fs.Var(&files, "filename", "same as -f")
	fs.Var(&policies, "policy", "PipeAccessPolicy YAML file (repeatable); without it the default policy is used")
	fs.Var(&nsLabels, "namespace-labels", "labels of a namespace, NS=key=value[,key2=value2] (repeatable); a namespace not given has no labels")
	defaultNS := fs.String("namespace", "default", "namespace of objects that name none")
	output := fs.String("o", "text", "output format: text, json, or input (the rego input document of each reviewed object, for writing rules)")
	cluster := fs.Bool("cluster", false, "evaluate the live Pods, workloads and PersistentVolumes of the cluster, with its namespace labels and the policies in force, instead of manifests")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster, with --cluster (default: $KUBECONFIG or ~/.kube/config)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: pipeguard policy eval -f FILE [flags]\n       pipeguard policy eval --cluster [--kubeconfig FILE] [-o text|json]\n\nEvaluates every object against pipe access policies: manifests offline,\nor with --cluster what runs in a cluster, as admission would decide it now.\nExit code: 0 nothing denied, 1 something denied, 2 bad input.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitBadInput
	}
	if *cluster {
		if len(files) > 0 || len(policies) > 0 || len(nsLabels) > 0 || fs.NArg() > 0 || *output == "input" {
			fmt.Fprintln(stderr, "pipeguard policy eval: --cluster reads the objects, namespace labels and policies from the cluster: leave out -f, --policy, --namespace-labels and -o input")
			return exitBadInput
		}
		return evalCluster(*kubeconfig, *output, stdout, stderr)
	}
	if *kubeconfig != "" {
		fmt.Fprintln(stderr, "pipeguard policy eval: --kubeconfig is for --cluster")
		return exitBadInput
	}
	if len(files) == 0 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "pipeguard policy eval: give the manifests with -f FILE (or -f - for stdin)")
		return exitBadInput
	}
	if *output != "text" && *output != "json" && *output != "input" {
		fmt.Fprintf(stderr, "pipeguard policy eval: -o %q: want text, json or input\n", *output)
		return exitBadInput
	}
	labels, err := namespaceLabels(nsLabels)
	if err != nil {
		fmt.Fprintf(stderr, "pipeguard policy eval: %v\n", err)
		return exitBadInput
	}

	ctx := context.Background()
	warn := func(msg string) { fmt.Fprintf(stderr, "pipeguard policy eval: warning: %s\n", msg) }
	engine, err := loadEngine(ctx, policies, stdin, warn)
	if err != nil {
		fmt.Fprintf(stderr, "pipeguard policy eval: %v\n", err)
		return exitBadInput
	}
	docs, err := readManifests(files, stdin, warn)
	if err != nil {
		fmt.Fprintf(stderr, "pipeguard policy eval: %v\n", err)
		return exitBadInput
	}
	// Namespaces in the manifests supply labels, unless given on the command line.
	namespaces := webhook.StaticNamespaces{}
	for _, d := range docs {
		if d.meta.Kind == "Namespace" && d.meta.APIVersion == "v1" {
			namespaces[d.meta.Metadata.Name] = d.meta.Metadata.Labels
		}
	}
	for ns, l := range labels {
		namespaces[ns] = l
	}
	last := &lastReview{}
	handler := webhook.NewHandler(webhook.Options{Engine: engine, Namespaces: namespaces, Observer: last})

	if *output == "input" {
		return printInputs(ctx, stdout, stderr, handler, engine, docs, *defaultNS)
	}

	var results []evalResult
	denied := false
	for i, d := range docs {
		r, err := evaluate(ctx, handler, last, d, *defaultNS, i)
		if err != nil {
			fmt.Fprintf(stderr, "pipeguard policy eval: %v\n", err)
			return exitBadInput
		}
		denied = denied || r.Decision == "DENY"
		results = append(results, r)
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if results == nil {
			results = []evalResult{}
		}
		_ = enc.Encode(results)
	} else {
		printText(stdout, results)
	}
	if denied {
		return exitDenied
	}
	return exitOK
}

// evalCluster evaluates what runs in the cluster of kubeconfig with its
// policies in force, and prints it as the offline evaluation does.
func evalCluster(kubeconfig, output string, stdout, stderr io.Writer) int {
	if output != "text" && output != "json" {
		fmt.Fprintf(stderr, "pipeguard policy eval: -o %q: want text or json with --cluster\n", output)
		return exitBadInput
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		fmt.Fprintf(stderr, "pipeguard policy eval: reading the kubeconfig: %v\n", err)
		return exitBadInput
	}
	found, err := inventory.EvaluateCluster(context.Background(), cfg, inventory.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "pipeguard policy eval: %v\n", err)
		return exitBadInput
	}
	results := make([]evalResult, 0, len(found))
	denied := false
	for _, r := range found {
		denied = denied || r.Decision == "DENY"
		results = append(results, evalResult{Source: "cluster", APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
			Decision: r.Decision, Deny: r.Deny, Warn: r.Warn, DryRun: r.DryRun, Generation: r.Generation})
	}
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(results)
	} else {
		printText(stdout, results)
	}
	if denied {
		return exitDenied
	}
	return exitOK
}

// loadEngine compiles the policies from files, or the default policy.
func loadEngine(ctx context.Context, files []string, stdin io.Reader, warn func(string)) (*policy.Engine, error) {
	engine, err := policy.NewEngine(ctx, policy.Options{})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return engine, nil
	}
	docs, err := readManifests(files, stdin, warn)
	if err != nil {
		return nil, err
	}
	var pols []v1alpha1.PipeAccessPolicy
	for _, d := range docs {
		if d.meta.Kind != "PipeAccessPolicy" || d.meta.APIVersion != v1alpha1.GroupVersion.String() {
			return nil, badInput("%s: %s %q is not a PipeAccessPolicy (apiVersion %s); --policy takes only PipeAccessPolicy objects", d.source, d.meta.Kind, d.meta.Metadata.Name, v1alpha1.GroupVersion)
		}
		var p v1alpha1.PipeAccessPolicy
		strictErrs, err := kjson.UnmarshalStrict(d.raw, &p)
		if err == nil && len(strictErrs) > 0 {
			err = errors.Join(strictErrs...)
		}
		if err != nil {
			return nil, badInput("%s: invalid PipeAccessPolicy %q: %v", d.source, d.meta.Metadata.Name, err)
		}
		if p.Name == "" {
			return nil, badInput("%s: PipeAccessPolicy has no metadata.name", d.source)
		}
		pols = append(pols, p)
	}
	if len(pols) == 0 {
		return nil, badInput("--policy files hold no PipeAccessPolicy")
	}
	if _, err := engine.Load(ctx, pols); err != nil {
		return nil, badInput("invalid policy: %v", err)
	}
	return engine, nil
}

// evaluate runs one object through the same handler the webhook serves, as
// a CREATE.
func evaluate(ctx context.Context, h *webhook.Handler, last *lastReview, d document, defaultNS string, i int) (evalResult, error) {
	req, err := admissionRequest(d, defaultNS, i)
	if err != nil {
		return evalResult{}, err
	}
	ns := req.Namespace
	last.review = webhook.Review{}
	resp := h.Handle(ctx, req)
	r := evalResult{Source: d.source, APIVersion: d.meta.APIVersion, Kind: d.meta.Kind, Namespace: ns, Name: d.meta.Metadata.Name, Decision: "ALLOW"}
	if resp.Result != nil && resp.Result.Code != http.StatusForbidden && !resp.Allowed {
		return r, badInput("%s: %s %q: %s", d.source, d.meta.Kind, d.meta.Metadata.Name, resp.Result.Message)
	}
	if dec := last.review.Decided; dec != nil {
		r.Deny, r.Warn, r.DryRun, r.Generation = dec.Deny, dec.Warn, dec.DryRun, dec.Generation
	}
	switch {
	case !resp.Allowed:
		r.Decision = "DENY"
	case len(resp.Warnings) > 0:
		r.Decision = "WARN"
	}
	return r, nil
}

// admissionRequest wraps a manifest object in the CREATE request the API
// server would send.
func admissionRequest(d document, defaultNS string, i int) (admission.Request, error) {
	gv, err := schema.ParseGroupVersion(d.meta.APIVersion)
	if err != nil {
		return admission.Request{}, badInput("%s: apiVersion %q: %v", d.source, d.meta.APIVersion, err)
	}
	plural, _ := meta.UnsafeGuessKindToResource(gv.WithKind(d.meta.Kind))
	ns := d.meta.Metadata.Namespace
	if clusterScoped[d.meta.Kind] {
		ns = ""
	} else if ns == "" {
		ns = defaultNS
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       types.UID(fmt.Sprintf("pipeguard-cli-%d", i)),
		Kind:      metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: d.meta.Kind},
		Resource:  metav1.GroupVersionResource{Group: gv.Group, Version: gv.Version, Resource: plural.Resource},
		Namespace: ns,
		Name:      d.meta.Metadata.Name,
		Operation: admissionv1.Create,
		UserInfo:  authnv1.UserInfo{Username: "pipeguard-cli"},
		Object:    runtime.RawExtension{Raw: d.raw},
	}}, nil
}

// printInputs prints the rego input of every reviewed object as a JSON
// array.
func printInputs(ctx context.Context, stdout, stderr io.Writer, h *webhook.Handler, engine *policy.Engine, docs []document, defaultNS string) int {
	inputs := []*policy.Input{}
	for i, d := range docs {
		req, err := admissionRequest(d, defaultNS, i)
		if err == nil {
			var in *policy.Input
			if in, err = h.Input(ctx, req); in != nil {
				inputs = append(inputs, engine.Current().Document(in))
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "pipeguard policy eval: %s: %v\n", d.source, err)
			return exitBadInput
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(inputs)
	return exitOK
}

// lastReview keeps the structured outcome of the latest review, which the
// admission response carries only as text.
type lastReview struct{ review webhook.Review }

func (l *lastReview) ObserveReview(_ context.Context, r webhook.Review) { l.review = r }

func printText(w io.Writer, results []evalResult) {
	for _, r := range results {
		ref := r.Name
		if r.Namespace != "" {
			ref = r.Namespace + "/" + r.Name
		}
		fmt.Fprintf(w, "%s %s %s\n", r.Decision, r.Kind, ref)
		for _, m := range policy.Messages(r.Deny) {
			fmt.Fprintf(w, "    %s\n", indent(m))
		}
		for _, m := range policy.Messages(r.Warn) {
			fmt.Fprintf(w, "    warning: %s\n", indent(m))
		}
		for _, m := range policy.Messages(r.DryRun) {
			fmt.Fprintf(w, "    dryrun: %s\n", indent(m))
		}
	}
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n    ") }
