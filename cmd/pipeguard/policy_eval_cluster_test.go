package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestPolicyEvalClusterNoKubeconfig: with no kubeconfig anywhere and not
// in a pod, --cluster says there is no cluster to read and how to name one
// (exit 2), rather than client-go's connection error for localhost:8080.
// The CLI runs in a child process with an empty home directory, since
// client-go reads $HOME when the process starts.
func TestPolicyEvalClusterNoKubeconfig(t *testing.T) {
	if os.Getenv("PIPEGUARD_TEST_CHILD") == "1" {
		os.Exit(runAs("pipeguard", []string{"policy", "eval", "--cluster"}, strings.NewReader(""), os.Stdout, os.Stderr))
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPolicyEvalClusterNoKubeconfig$")
	var env []string
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "HOME", "USERPROFILE", "KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "KUBERNETES_MASTER":
		default:
			env = append(env, kv)
		}
	}
	home := t.TempDir()
	cmd.Env = append(env, "PIPEGUARD_TEST_CHILD=1", "HOME="+home, "USERPROFILE="+home)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	const want = "pipeguard policy eval: no cluster to read: set --kubeconfig, $KUBECONFIG, or run in a pod with a service account (in-cluster configuration); there is no kubeconfig file\n"
	if code != exitBadInput || out.String() != "" || errOut.String() != want {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, out.String(), errOut.String(), want)
	}
}

// TestPolicyEvalClusterFlagsNeedCluster: the kubeconfig flags and -A are
// for --cluster; offline they are a usage error naming the flag, and -n
// keeps its offline meaning.
func TestPolicyEvalClusterFlagsNeedCluster(t *testing.T) {
	for _, flag := range [][]string{{"--context", "x"}, {"--as", "x"}, {"--as-group", "g"}, {"--kubeconfig-cluster", "c"}, {"--user", "u"}, {"--request-timeout", "5s"}, {"-A"}, {"--all-namespaces"}, {"--server", "https://x"}} {
		name := strings.TrimLeft(flag[0], "-")
		if name == "A" {
			name = "all-namespaces"
		}
		cliCase{
			args: append([]string{"policy", "eval", "-f", "testdata/csi-node.yaml"}, flag...), wantCode: 2,
			wantStderr: "pipeguard policy eval: --" + name + " is for --cluster\nSee 'pipeguard policy eval --help' for usage.\n",
		}.check(t)
	}
	cliCase{
		args: []string{"policy", "eval", "--cluster", "-A", "-n", "csi"}, wantCode: 2,
		wantStderr: "pipeguard policy eval: -A (--all-namespaces) and -n csi contradict each other: give one of them\nSee 'pipeguard policy eval --help' for usage.\n",
	}.check(t)
	// kubectl's --cluster NAME is --kubeconfig-cluster here: --cluster stays a switch.
	cliCase{
		args: []string{"policy", "eval", "--cluster=prod"}, wantCode: 2,
		stderrHas: []string{`invalid argument "prod" for "--cluster" flag`},
	}.check(t)
}
