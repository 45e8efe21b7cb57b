package main

import (
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/pipeguard/pipeguard/cmd/pipeguard-webhook/app"
	"github.com/pipeguard/pipeguard/webhook"
)

// checkServerFlags checks the webhook server's flags before anything
// starts.
func checkServerFlags(opts app.Options) error {
	switch {
	case opts.MaxReviewsInFlight < 1:
		return fmt.Errorf("--max-reviews-in-flight %d: want at least 1 (default %d)", opts.MaxReviewsInFlight, webhook.DefaultMaxInFlight)
	case opts.MaxConnections < 1:
		return fmt.Errorf("--max-connections %d: want at least 1 (default %d)", opts.MaxConnections, webhook.DefaultMaxConnections)
	case opts.ClientCAFile != "":
		if err := app.CheckClientCAFile(opts.ClientCAFile); err != nil {
			return fmt.Errorf("--client-ca-file: %w", err)
		}
	}
	return nil
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

// serviceAccountNamespace is where the kubelet mounts the namespace of the
// pod's ServiceAccount.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// podNamespace returns the namespace this pod runs in.
func podNamespace() (string, error) {
	b, err := os.ReadFile(serviceAccountNamespace)
	if err != nil {
		return "", fmt.Errorf("not running in a pod (%w); pass the namespace of the certificate Secret and the webhook Service", err)
	}
	return strings.TrimSpace(string(b)), nil
}
