//go:build !windows

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os/exec"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// localURL is where config/local points every webhook.
const localURL = "https://127.0.0.1:9443/validate"

// installLocal applies config/local as its comment says, with two
// adjustments for the demo: the webhook listens on the free port envtest
// picked rather than 9443, and the caBundle is the CA of the certificate
// envtest issued for 127.0.0.1.
func installLocal(ctx context.Context, kubectl, kubeconfig string, w envtest.WebhookInstallOptions) error {
	run := func(stdin []byte, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	rendered, err := run(nil, "kustomize", "config/local")
	if err != nil {
		return err
	}
	webhooks := strings.Count(rendered, "url: "+localURL)
	if webhooks == 0 {
		return fmt.Errorf("config/local has no webhook calling %s", localURL)
	}
	url := fmt.Sprintf("https://%s:%d/validate", w.LocalServingHost, w.LocalServingPort)
	rendered = strings.ReplaceAll(rendered, localURL, url)
	fmt.Printf("$ kubectl apply --server-side -k config/local   # webhook URL %s\n", url)
	out, err := run([]byte(rendered), "apply", "--server-side", "-f", "-")
	if err != nil {
		return err
	}
	fmt.Print(out)

	ca := base64.StdEncoding.EncodeToString(w.LocalServingCAData)
	ops := make([]string, webhooks)
	for i := range ops {
		ops[i] = fmt.Sprintf(`{"op":"add","path":"/webhooks/%d/clientConfig/caBundle","value":"%s"}`, i, ca)
	}
	fmt.Println("$ kubectl patch validatingwebhookconfiguration pipeguard --type=json -p '[... caBundle of every webhook ...]'")
	if out, err = run(nil, "patch", "validatingwebhookconfiguration", "pipeguard", "--type=json", "-p", "["+strings.Join(ops, ",")+"]"); err != nil {
		return err
	}
	fmt.Print(out)
	_, err = run(nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/pipeaccesspolicies.pipeguard.io")
	return err
}
