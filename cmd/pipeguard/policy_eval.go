package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/pipeguard/pipeguard/controller/inventory"
)

// outputInput is policy eval's -o input: the rego input document of each
// reviewed object.
const outputInput = "input"

// evalOptions are the flags of pipeguard policy eval.
type evalOptions struct {
	files           []string
	policies        []string
	namespaceLabels []string
	namespace       string
	output          string
	cluster         bool
	kubeconfig      string

	cmdPath string // as the messages name the command
}

func newPolicyEvalCommand(name string, s streams) *cobra.Command {
	o := &evalOptions{}
	c := &cobra.Command{
		Use:   "eval -f FILE [-f FILE...] [--policy FILE...] [--namespace-labels NS=k=v,...]",
		Short: "Evaluate manifests (or a cluster) against pipe access policies",
		Long: `Evaluates every object against pipe access policies, as admission would
decide on it when it is created: manifests offline, or with --cluster what
runs in a cluster now.

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

Manifests may be multi-document YAML, JSON or kind: List; a key given
twice in one mapping takes its last value, as kubectl and the API server
read it, with a warning. Without --policy the built-in default policy is
in force. Namespace objects in the manifests supply their labels, unless
--namespace-labels gives that namespace's.

Exit code: 0 nothing denied, 1 something denied, 2 bad input.`,
		Example: examples(name, `
  # A DaemonSet against the default policy, its namespace labelled
  %[1]s policy eval -f daemonset.yaml --namespace-labels csi-smb=pipeguard.io/allow-csi-proxy=true

  # Rendered manifests from stdin, against your policies
  kubectl kustomize ./deploy | %[1]s policy eval -f - --policy policies/

  # What your rego rules will see for a pod
  %[1]s policy eval -f pod.yaml -o input

  # What runs in the cluster, against the policies in force there
  %[1]s policy eval --cluster`),
		RunE: func(c *cobra.Command, args []string) error {
			o.cmdPath = c.CommandPath()
			if len(args) > 0 {
				return usageFailure("unexpected argument %q: give the manifests with -f FILE (or -f - for stdin)", args[0])
			}
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(c.Context(), s)
		},
	}
	f := c.Flags()
	f.StringArrayVarP(&o.files, "filename", "f", nil, "manifest `FILE`, directory (its .yaml, .yml and .json files) or - for stdin (repeatable)")
	f.StringArrayVar(&o.policies, "policy", nil, "PipeAccessPolicy `FILE` or directory (repeatable); without it the built-in default policy is in force")
	f.StringArrayVar(&o.namespaceLabels, "namespace-labels", nil, "labels of a namespace, `NS=K=V`[,K2=V2] (repeatable); a namespace given nowhere has no labels")
	f.StringVarP(&o.namespace, "namespace", "n", "default", "`NAMESPACE` of the objects that name none")
	addOutputFlag(c, &o.output, "input prints the rego input document of each reviewed object, for writing rules", outputTable, outputJSON, outputYAML, outputInput)
	f.BoolVar(&o.cluster, "cluster", false, "evaluate the live Pods, workloads and PersistentVolumes of the cluster, with its namespace labels and the policies in force, instead of manifests")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig `FILE` of the cluster, with --cluster (default: $KUBECONFIG or ~/.kube/config)")
	_ = c.MarkFlagFilename("filename", "yaml", "yml", "json")
	_ = c.MarkFlagFilename("policy", "yaml", "yml", "json")
	_ = c.MarkFlagFilename("kubeconfig")
	return c
}

func (o *evalOptions) validate() error {
	if o.output == "text" { // the name of the table format before -o table
		o.output = outputTable
	}
	if err := checkOutput(o.output, outputTable, outputJSON, outputYAML, outputInput); err != nil {
		return err
	}
	if o.cluster {
		if len(o.files) > 0 || len(o.policies) > 0 || len(o.namespaceLabels) > 0 || o.output == outputInput {
			return usageFailure("--cluster reads the objects, namespace labels and policies from the cluster: leave out -f, --policy, --namespace-labels and -o input")
		}
		return nil
	}
	if o.kubeconfig != "" {
		return usageFailure("--kubeconfig is for --cluster")
	}
	if len(o.files) == 0 {
		return usageFailure("give the manifests with -f FILE (or -f - for stdin)")
	}
	return nil
}

func (o *evalOptions) run(ctx context.Context, s streams) error {
	if o.cluster {
		return o.runCluster(ctx, s)
	}
	labels, err := namespaceLabels(o.namespaceLabels)
	if err != nil {
		return usageFailure("%v", err)
	}
	warn := func(msg string) { fmt.Fprintf(s.ErrOut, "%s: warning: %s\n", o.cmdPath, msg) }
	var policyDocs []document
	if len(o.policies) > 0 {
		if policyDocs, err = readManifests(o.policies, s.In, warn); err != nil {
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
	docs, err := readManifests(o.files, s.In, warn)
	if err != nil {
		return err
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
	return o.print(s, results)
}

// runCluster evaluates what runs in the cluster of the kubeconfig with its
// policies in force, and prints it as the offline evaluation does.
func (o *evalOptions) runCluster(ctx context.Context, s streams) error {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return badInput("reading the kubeconfig: %v", err)
	}
	found, err := inventory.EvaluateCluster(ctx, cfg, inventory.Options{})
	if err != nil {
		return badInput("%v", err)
	}
	results := make([]evalResult, 0, len(found))
	for _, r := range found {
		results = append(results, evalResult{Source: "cluster", APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
			Decision: cliDecision(r.Verdict), Deny: r.Deny, Warn: r.Warn, DryRun: r.DryRun, Generation: r.Generation})
	}
	return o.print(s, results)
}

// print writes the results and ends with exit code 1 when one is denied.
func (o *evalOptions) print(s streams, results []evalResult) error {
	if o.output == outputTable {
		printResults(s.Out, results)
	} else if err := printStructured(s.Out, o.output, results); err != nil {
		return err
	}
	if count(results).denied > 0 {
		return exitCode(exitDenied)
	}
	return nil
}
