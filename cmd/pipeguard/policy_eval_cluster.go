package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"

	"github.com/pipeguard/pipeguard/controller/inventory"
)

// clusterOptions are the flags of policy eval --cluster: kubectl's
// kubeconfig flags (k8s.io/cli-runtime's ConfigFlags, but -n, which policy
// eval reads itself) and -A.
type clusterOptions struct {
	enabled       bool
	allNamespaces bool
	config        *genericclioptions.ConfigFlags
	names         []string // the flags that need --cluster, in help order
}

// addFlags adds --cluster, -A and the kubeconfig flags to c.
func (o *clusterOptions) addFlags(c *cobra.Command) {
	f := c.Flags()
	f.BoolVar(&o.enabled, "cluster", false, "evaluate the live Pods, workloads and PersistentVolumes of the cluster, with its namespace labels and the policies in force, instead of manifests")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "with --cluster, show the objects of every namespace and the cluster-scoped ones (the default without -n)")
	o.names = append(o.names, "all-namespaces")
	o.config = genericclioptions.NewConfigFlags(false)
	// -n is policy eval's own flag; the discovery cache is not used; and
	// --cluster says whether to read a cluster at all, so kubectl's
	// --cluster NAME is --kubeconfig-cluster NAME here.
	clusterName := o.config.ClusterName
	o.config.Namespace, o.config.CacheDir, o.config.ClusterName = nil, nil, nil
	kube := pflag.NewFlagSet("kubeconfig", pflag.ContinueOnError)
	o.config.AddFlags(kube)
	o.config.ClusterName = clusterName
	kube.StringVar(clusterName, "kubeconfig-cluster", "", "the `NAME` of the kubeconfig cluster to use (kubectl's --cluster)")
	kube.VisitAll(func(fl *pflag.Flag) {
		if fl.Name == "kubeconfig" {
			fl.Usage = "kubeconfig `FILE` of the cluster, with --cluster (default: $KUBECONFIG or ~/.kube/config)"
		} else {
			fl.Usage += " (with --cluster)"
		}
		f.AddFlag(fl)
		o.names = append(o.names, fl.Name)
	})
	_ = c.MarkFlagFilename("kubeconfig")
}

// changed returns the name of the first flag given that only --cluster
// reads, or "".
func (o *clusterOptions) changed(c *cobra.Command) string {
	for _, n := range o.names {
		if c.Flags().Changed(n) {
			return n
		}
	}
	return ""
}

// checkSomeCluster fails when nothing names a cluster: no kubeconfig file
// (or none that names a cluster), no --server and no in-cluster
// configuration. client-go would otherwise fall back to
// http://localhost:8080 and fail with a connection error.
func (o *clusterOptions) checkSomeCluster() error {
	if *o.config.APIServer != "" {
		return nil
	}
	if _, err := rest.InClusterConfig(); err == nil {
		return nil
	}
	loader := o.config.ToRawKubeConfigLoader()
	raw, err := loader.RawConfig()
	if err != nil {
		return badInput("reading the kubeconfig: %v", err)
	}
	if len(raw.Clusters) > 0 {
		return nil
	}
	files := loader.ConfigAccess().GetLoadingPrecedence()
	if p := loader.ConfigAccess().GetExplicitFile(); p != "" {
		files = []string{p}
	}
	var read []string
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			read = append(read, f)
		}
	}
	where := "there is no kubeconfig file"
	if len(read) > 0 {
		where = joinLast(read, " and ") + " " + byCount(len(read), "names", "name") + " no cluster"
	}
	return badInput("no cluster to read: set --kubeconfig, $KUBECONFIG, or run in a pod with a service account (in-cluster configuration); %s", where)
}

// runCluster evaluates what runs in the cluster the kubeconfig flags
// name, with its policies in force, and prints it as the offline
// evaluation does.
func (o *evalOptions) runCluster(ctx context.Context, s streams) error {
	if err := o.cluster.checkSomeCluster(); err != nil {
		return err
	}
	cfg, err := o.cluster.config.ToRESTConfig()
	if err != nil {
		return badInput("reading the kubeconfig: %v", err)
	}
	opts := inventory.Options{}
	if o.namespaceSet {
		opts.Namespace = o.namespace
	}
	found, err := inventory.EvaluateCluster(ctx, cfg, opts)
	if err != nil {
		return badInput("%v", err)
	}
	results := make([]evalResult, 0, len(found))
	for _, r := range found {
		results = append(results, evalResult{Source: "cluster", APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
			Decision: decided(r.Verdict), Deny: r.Deny, Warn: r.Warn, DryRun: r.DryRun, Generation: r.Generation})
	}
	return o.print(s, results, nil)
}
