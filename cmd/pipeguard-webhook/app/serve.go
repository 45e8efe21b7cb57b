package app

import (
	"context"
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// serviceAccountNamespace is where the kubelet mounts the namespace of the
// pod's ServiceAccount.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// serve is the command's run: it sets up the log, builds the App o
// describes and runs it until ctx ends.
func serve(ctx context.Context, o *CommandOptions) error {
	log := zap.New(zap.UseFlagOptions(&o.Zap))
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	opts, err := complete(o, serviceAccountNamespace)
	if err != nil {
		return err
	}
	opts.Logger = log
	a, err := New(ctx, opts)
	if err != nil {
		log.Error(err, "cannot start")
		return logged(err)
	}
	if err := a.Run(ctx); err != nil {
		log.Error(err, "stopped with an error")
		return logged(err)
	}
	log.Info("stopped")
	return nil
}

// complete returns o's Options with what the flags leave to the
// environment looked up: the API server's configuration and, for
// certificate rotation without --namespace, the pod's namespace, read from
// namespaceFile.
func complete(o *CommandOptions, namespaceFile string) (Options, error) {
	opts := o.Options()
	cfg, err := restConfig(o.Kubeconfig)
	if err != nil {
		return Options{}, err
	}
	opts.Config = cfg
	if r := opts.CertRotation; r != nil && r.Namespace == "" {
		if r.Namespace, err = podNamespace(namespaceFile); err != nil {
			return Options{}, badFlag(fmt.Errorf("--namespace: %w", err))
		}
	}
	return opts, nil
}

// restConfig loads the kubeconfig given, or the usual in-cluster or
// KUBECONFIG configuration.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return nil, fmt.Errorf("no API server configuration: %w; run in a cluster, set KUBECONFIG or pass --kubeconfig", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

// podNamespace returns the namespace this pod runs in, which the kubelet
// mounts at file.
func podNamespace(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("not running in a pod (%w); pass the namespace of the certificate Secret and the webhook Service", err)
	}
	return strings.TrimSpace(string(b)), nil
}
