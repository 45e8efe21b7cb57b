package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pipeguard/pipeguard/controller/policyreport"
)

// outputInput is policy eval's -o input: the rego input document of each
// reviewed object.
const outputInput = "input"

// evalOptions are the flags of pipeguard policy eval.
type evalOptions struct {
	files           []string
	recursive       bool
	kustomize       []string
	policies        []string
	namespaceLabels []string
	namespace       string
	output          string
	policyReport    string
	policyReportAPI string
	reportAPI       policyreport.API // of policyReportAPI
	cluster         clusterOptions

	namespaceSet bool   // -n was given
	outputSet    bool   // -o was given
	cmdPath      string // as the messages name the command
}

// unreadHint is what the warning about the subdirectories of a -f
// directory that were not read tells to do.
const unreadHint = "-R (--recursive) reads them"

func newPolicyEvalCommand(name string, s streams) *cobra.Command {
	o := &evalOptions{}
	c := &cobra.Command{
		Use:   "eval -f FILE [-f FILE...] [-k DIR] [--policy FILE...] [--namespace-labels NS=k=v,...]",
		Short: "Evaluate manifests (or a cluster) against pipe access policies",
		Long: `Evaluates every object against pipe access policies, as admission would
decide on it when it is created: manifests offline (-f, -k), or with
--cluster what runs in a cluster now.

Each object gets one line, DECISION KIND NAMESPACE/NAME (cluster-scoped
objects have no namespace), with its messages below it:
  DENY   admission would reject it
  WARN   admission would admit it with warnings
  ALLOW  admission would admit it
  SKIP   admission does not review it, with the reason: pipeguard reviews
         Pod, PodTemplate, ReplicationController, PersistentVolume, apps
         Deployment, ReplicaSet, StatefulSet and DaemonSet, and batch Job and
         CronJob objects; Namespaces supply labels; a kustomization or YAML
         that is no Kubernetes object is not reviewed either.
A summary line ends the list: N denied, N warned, N allowed, N skipped.
-o json and -o yaml print {results, summary}, each decision spelled allow,
warn, dryrun, deny or skip; see docs/cli.md.

Manifests may be multi-document YAML, JSON or kind: List; a key given
twice in one mapping takes its last value, as kubectl and the API server
read it, with a warning. A directory given with -f is read without its
subdirectories unless -R is given (a warning names those that hold
manifests). -k DIR builds a kustomization as kubectl kustomize does; -f and
-k may be combined. Without --policy the built-in default policy is in
force; a --policy directory that holds a kustomization.yaml is built with
kustomize. Namespace objects in the manifests supply their labels, unless
--namespace-labels gives that namespace's.

With --cluster, the kubeconfig flags (--kubeconfig, --context, --as, ...)
choose the cluster and user as for kubectl; -n NAMESPACE shows only that
namespace's objects (no PersistentVolumes), -A or no -n every object.

--policy-report FILE (or - for standard output) writes the results as
wgpolicyk8s.io/v1alpha2 PolicyReports, one per namespace, and a
ClusterPolicyReport for cluster-scoped objects; with
--policy-report-api openreports.io/v1alpha1, as openreports.io Reports and
a ClusterReport (Kyverno 1.15 and later).

Exit code: 0 nothing denied, 1 something denied, 2 bad input.`,
		Example: examples(name, `
  # A DaemonSet against the default policy, its namespace labelled
  %[1]s policy eval -f daemonset.yaml --namespace-labels csi-smb=pipeguard.io/allow-csi-proxy=true

  # Every manifest under ./deploy, and what a kustomization builds, against your policies
  %[1]s policy eval -R -f ./deploy -k ./overlays/prod --policy policies/

  # What your rego rules will see for a pod
  %[1]s policy eval -f pod.yaml -o input

  # The results as PolicyReports
  %[1]s policy eval -f ./deploy --policy-report report.yaml

  # What runs in the cluster, against the policies in force there
  %[1]s policy eval --cluster --context prod -n csi-smb`),
		RunE: func(c *cobra.Command, args []string) error {
			o.cmdPath = c.CommandPath()
			o.namespaceSet, o.outputSet = c.Flags().Changed("namespace"), c.Flags().Changed("output")
			if len(args) > 0 {
				return usageFailure("unexpected argument %q: give the manifests with -f FILE (or -f - for stdin)", args[0])
			}
			if err := o.validate(c); err != nil {
				return err
			}
			return o.run(c.Context(), s)
		},
	}
	f := c.Flags()
	f.StringArrayVarP(&o.files, "filename", "f", nil, "manifest `FILE`, directory (its .yaml, .yml and .json files) or - for stdin (repeatable)")
	f.BoolVarP(&o.recursive, "recursive", "R", false, "read the directories given with -f recursively, as kubectl -R does")
	f.StringArrayVarP(&o.kustomize, "kustomize", "k", nil, "kustomization `DIR` to build and evaluate, as kubectl kustomize DIR builds it (repeatable; may be combined with -f)")
	f.StringArrayVar(&o.policies, "policy", nil, "PipeAccessPolicy `FILE` or directory (repeatable; a directory with a kustomization.yaml is built with kustomize); without it the built-in default policy is in force")
	f.StringArrayVar(&o.namespaceLabels, "namespace-labels", nil, "labels of a namespace, `NS=K=V`[,K2=V2] (repeatable); a namespace given nowhere has no labels")
	f.StringVarP(&o.namespace, "namespace", "n", "default", "`NAMESPACE` of the objects that name none; with --cluster, show only the objects of this namespace")
	addOutputFlag(c, &o.output, "input prints the rego input document of each reviewed object, for writing rules", outputTable, outputJSON, outputYAML, outputInput)
	f.StringVar(&o.policyReport, "policy-report", "", "write the results as wgpolicyk8s.io/v1alpha2 PolicyReport and ClusterPolicyReport YAML to `FILE`, or to standard output (in place of the table) with -")
	f.StringVar(&o.policyReportAPI, "policy-report-api", policyreport.WGPolicy().GroupVersion.String(), "the `API` of the reports --policy-report writes: "+reportAPINames())
	o.cluster.addFlags(c)
	_ = c.MarkFlagFilename("filename", "yaml", "yml", "json")
	_ = c.MarkFlagDirname("kustomize")
	_ = c.MarkFlagFilename("policy", "yaml", "yml", "json")
	_ = c.MarkFlagFilename("policy-report", "yaml", "yml")
	return c
}

func (o *evalOptions) validate(c *cobra.Command) error {
	if o.output == "text" { // the name of the table format before -o table
		o.output = outputTable
	}
	if err := checkOutput(o.output, outputTable, outputJSON, outputYAML, outputInput); err != nil {
		return err
	}
	if o.policyReport != "" && o.output == outputInput {
		return usageFailure("--policy-report writes results; -o input prints no results: leave out one of them")
	}
	if c.Flags().Changed("policy-report-api") && o.policyReport == "" {
		return usageFailure("--policy-report-api says which API --policy-report writes: give --policy-report FILE too")
	}
	api, ok := reportAPI(o.policyReportAPI)
	if !ok {
		return usageFailure("--policy-report-api %q: choose %s", o.policyReportAPI, reportAPINames())
	}
	o.reportAPI = api
	if o.policyReport == "-" && o.outputSet {
		return usageFailure("--policy-report - writes the report to standard output in place of -o %s: leave out -o, or write the report to a file", o.output)
	}
	if o.cluster.enabled {
		if len(o.files) > 0 || len(o.kustomize) > 0 || o.recursive || len(o.policies) > 0 || len(o.namespaceLabels) > 0 || o.output == outputInput {
			return usageFailure("--cluster reads the objects, namespace labels and policies from the cluster: leave out -f, -k, -R, --policy, --namespace-labels and -o input")
		}
		if o.policyReport != "" {
			return usageFailure("--policy-report is for manifests; in a cluster, pipeguard-webhook's background audit keeps PolicyReports (kubectl get policyreports -A)")
		}
		if o.cluster.allNamespaces && o.namespaceSet {
			return usageFailure("-A (--all-namespaces) and -n %s contradict each other: give one of them", o.namespace)
		}
		return nil
	}
	if name := o.cluster.changed(c); name != "" {
		return usageFailure("--%s is for --cluster", name)
	}
	if len(o.files) == 0 && len(o.kustomize) == 0 {
		return usageFailure("give the manifests with -f FILE (or -f - for stdin)")
	}
	for _, p := range o.policies {
		if strings.EqualFold(filepath.Ext(p), ".rego") {
			return badInput("--policy %s: a .rego file is not a policy; %s", p, regoNotPolicy)
		}
	}
	return nil
}

func (o *evalOptions) run(ctx context.Context, s streams) error {
	if o.cluster.enabled {
		return o.runCluster(ctx, s)
	}
	labels, err := namespaceLabels(o.namespaceLabels)
	if err != nil {
		return usageFailure("%v", err)
	}
	warn := func(msg string) { fmt.Fprintf(s.ErrOut, "%s: warning: %s\n", o.cmdPath, msg) }
	var policyDocs []document
	if len(o.policies) > 0 {
		if policyDocs, err = readManifests(o.policies, s.In, warn, readOptions{kustomize: true, policies: true, unreadHint: "give each with --policy"}); err != nil {
			return err
		}
		if len(policyDocs) == 0 {
			return badInput("--policy files hold no PipeAccessPolicy")
		}
	}
	pols, err := policiesFrom(policyDocs, "--policy")
	if err != nil {
		return err
	}
	engine, err := newEngine(ctx, pols)
	if err != nil {
		return err
	}
	var docs []document
	if len(o.files) > 0 {
		if docs, err = readManifests(o.files, s.In, warn, readOptions{recursive: o.recursive, unreadHint: unreadHint}); err != nil {
			return err
		}
	}
	for _, dir := range o.kustomize {
		more, err := kustomizeDocuments(dir, warn)
		if err != nil {
			return err
		}
		docs = append(docs, more...)
	}
	if len(docs) == 0 {
		warn("the manifests hold no objects")
	}
	e := newEvaluator(engine, docs, labels, o.namespace)
	if o.output == outputInput {
		inputs, err := e.inputs(ctx, docs)
		if err != nil {
			return err
		}
		return printStructured(s.Out, outputJSON, inputs)
	}
	results, err := e.evaluateAll(ctx, docs)
	if err != nil {
		return err
	}
	return o.print(s, results, engine.Current().Policies)
}

// print writes the results, and the policy report when one is asked for,
// and ends with exit code 1 when one is denied. inForce names the
// policies that decided, for the report's pass results.
func (o *evalOptions) print(s streams, results []evalResult, inForce []string) error {
	if o.policyReport != "" {
		if err := writePolicyReport(o.reportAPI, o.policyReport, s.Out, results, inForce); err != nil {
			return err
		}
	}
	switch {
	case o.policyReport == "-":
	case o.output == outputTable:
		printResults(s.Out, results)
	default:
		if err := printEvalStructured(s.Out, o.output, results); err != nil {
			return err
		}
	}
	if count(results).denied > 0 {
		return exitCode(exitDenied)
	}
	return nil
}
