package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	webAllowed = "ALLOW Pod team-a/web\n"
	diskDenied = "DENY Pod team-a/disk-tool\n" +
		`    [protected-pipe-mount] container "tool" mounts \\.\pipe\csi-proxy-disk-v1 through volume "disk", but it is not HostProcess and namespace "team-a" is not allowed; to allow it, label the namespace pipeguard.io/allow-csi-proxy=true, or run the container as HostProcess` + "\n"
	pvDenied = "DENY PersistentVolume pipe-pv\n" +
		`    [protected-pipe-pv] PersistentVolume "pipe-pv" points at \\.\pipe\csi-proxy-volume-v1 (hostPath); a PersistentVolume cannot carry an allowance, so any pod bound to it would reach the pipe; mount the pipe through a hostPath volume of a HostProcess container instead` + "\n"
	csiNodeDenied = "DENY DaemonSet default/csi-node\n" +
		`    [protected-pipe-mount] container "driver" mounts \\.\pipe\csi-proxy-smb-v1 through volume "smb", but it is not HostProcess and namespace "default" is not allowed; to allow it, label the namespace pipeguard.io/allow-csi-proxy=true, or run the container as HostProcess` + "\n"
	nsSkipped = "SKIP Namespace csi-smb\n    not reviewed: a Namespace mounts no pipe; its labels apply to the objects evaluated in it\n"
)

// TestPolicyEvalRecursive: a -f directory is read without its
// subdirectories, as kubectl reads it, but never silently: a warning names
// the subdirectories that hold manifests and says that -R reads them; with
// -R a denied pod one or two levels down is found (exit 1).
func TestPolicyEvalRecursive(t *testing.T) {
	onlySubdirs := t.TempDir()
	if err := os.MkdirAll(filepath.Join(onlySubdirs, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, "testdata/tree/sub/disk-tool.yaml", filepath.Join(onlySubdirs, "sub", "pod.yaml"))
	many := t.TempDir()
	copyFile(t, "testdata/tree/web.yaml", filepath.Join(many, "web.yaml"))
	for i := range 7 {
		d := filepath.Join(many, fmt.Sprintf("d%d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		copyFile(t, "testdata/tree/web.yaml", filepath.Join(d, "web.yaml"))
	}
	const summary1 = "\nSummary: 0 denied, 0 warned, 1 allowed, 0 skipped\n"
	for name, tc := range map[string]cliCase{
		"without -R: the subdirectory is named, exit 0 as before": {
			args: []string{"policy", "eval", "-f", "testdata/tree"}, wantCode: 0,
			wantStdout: webAllowed + summary1,
			wantStderr: "pipeguard policy eval: warning: subdirectory testdata/tree/sub of testdata/tree holds manifests that were not read: -R (--recursive) reads them\n",
		},
		"-R reads every level": {
			args: []string{"policy", "eval", "-R", "-f", "testdata/tree"}, wantCode: 1,
			wantStdout: pvDenied + diskDenied + webAllowed + "\nSummary: 2 denied, 0 warned, 1 allowed, 0 skipped\n",
		},
		"--recursive after the file": {
			args: []string{"policy", "eval", "-f", "testdata/tree", "--recursive"}, wantCode: 1,
			wantStdout: pvDenied + diskDenied + webAllowed + "\nSummary: 2 denied, 0 warned, 1 allowed, 0 skipped\n",
		},
		"a directory with manifests only below it is an input error that names them": {
			args: []string{"policy", "eval", "-f", onlySubdirs}, wantCode: 2,
			wantStderr: "pipeguard policy eval: directory " + onlySubdirs + " holds no .yaml, .yml or .json files; its subdirectory " + filepath.Join(onlySubdirs, "sub") + " does: -R (--recursive) reads them\n",
		},
		"many subdirectories: the first five, then how many more": {
			args: []string{"policy", "eval", "-f", many}, wantCode: 0,
			wantStdout: webAllowed + summary1,
			wantStderr: fmt.Sprintf("pipeguard policy eval: warning: subdirectories %[1]s/d0, %[1]s/d1, %[1]s/d2, %[1]s/d3, %[1]s/d4 and 2 more of %[1]s hold manifests that were not read: -R (--recursive) reads them\n", many),
		},
		"a subdirectory without manifests is not named": {
			args: []string{"policy", "eval", "-f", "testdata/tree/sub/deeper"}, wantCode: 1,
			wantStdout: pvDenied + "\nSummary: 1 denied, 0 warned, 0 allowed, 0 skipped\n",
		},
		"-R on a tree without manifests": {
			args: []string{"policy", "eval", "-R", "-f", "testdata/tree/empty"}, wantCode: 2,
			wantStderr: "pipeguard policy eval: directory testdata/tree/empty and its subdirectories hold no .yaml, .yml or .json files\n",
		},
	} {
		t.Run(name, tc.check)
	}
}

// TestPolicyEvalRecursiveLoop: a symbolic link back up the tree does not
// make -R loop; it is named, not followed, as kubectl -R does not follow it.
func TestPolicyEvalRecursiveLoop(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, "testdata/tree/web.yaml", filepath.Join(dir, "web.yaml"))
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(dir, "sub", "up.yaml")); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	cliCase{
		args: []string{"policy", "eval", "-R", "-f", dir}, wantCode: 0,
		wantStdout: webAllowed + "\nSummary: 0 denied, 0 warned, 1 allowed, 0 skipped\n",
		wantStderr: "pipeguard policy eval: warning: " + filepath.Join(dir, "sub", "up.yaml") + ": a symbolic link to a directory is not followed; give its target with -f\n",
	}.check(t)
}

// TestPolicyEvalKustomize: -k builds a kustomization with kustomize, as
// kubectl kustomize does, and evaluates what it builds; it may be combined
// with -f; errors name the directory and say what kustomize said (exit 2).
func TestPolicyEvalKustomize(t *testing.T) {
	cycle := t.TempDir()
	for _, d := range []string{"a", "b"} {
		other := map[string]string{"a": "b", "b": "a"}[d]
		if err := os.MkdirAll(filepath.Join(cycle, d), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(cycle, d, "kustomization.yaml"), "resources: [../"+other+"]\n")
	}
	for name, tc := range map[string]cliCase{
		"a base: the object in the default namespace": {
			args: []string{"policy", "eval", "-k", "testdata/kustomize/base"}, wantCode: 1,
			wantStdout: csiNodeDenied + "\nSummary: 1 denied, 0 warned, 0 allowed, 0 skipped\n",
		},
		"an overlay: namespace set, and its labelled Namespace allows the DaemonSet": {
			args: []string{"policy", "eval", "--kustomize", "testdata/kustomize/overlay"}, wantCode: 0,
			wantStdout: "ALLOW DaemonSet csi-smb/csi-node\n" + nsSkipped + "\nSummary: 0 denied, 0 warned, 1 allowed, 1 skipped\n",
		},
		"-f and -k together: the files first": {
			args: []string{"policy", "eval", "-k", "testdata/kustomize/base", "-f", "testdata/tree/web.yaml"}, wantCode: 1,
			wantStdout: webAllowed + csiNodeDenied + "\nSummary: 1 denied, 0 warned, 1 allowed, 0 skipped\n",
		},
		"-k twice": {
			args: []string{"policy", "eval", "-k", "testdata/kustomize/base", "-k", "testdata/kustomize/overlay"}, wantCode: 1,
			wantStdout: csiNodeDenied + "ALLOW DaemonSet csi-smb/csi-node\n" + nsSkipped + "\nSummary: 1 denied, 0 warned, 1 allowed, 1 skipped\n",
		},
		"a resource that is missing": {
			args: []string{"policy", "eval", "-k", "testdata/kustomize-broken"}, wantCode: 2,
			stderrHas: []string{"pipeguard policy eval: kustomize testdata/kustomize-broken: accumulating resources", "missing.yaml: no such file or directory"},
		},
		"a directory without a kustomization": {
			args: []string{"policy", "eval", "-k", "testdata/tree"}, wantCode: 2,
			wantStderr: "pipeguard policy eval: kustomize testdata/tree: the directory holds no kustomization.yaml, kustomization.yml or Kustomization; give the directory of a kustomization, or its manifests with -f\n",
		},
		"a file": {
			args: []string{"policy", "eval", "-k", "testdata/tree/web.yaml"}, wantCode: 2,
			wantStderr: "pipeguard policy eval: kustomize testdata/tree/web.yaml: not a directory; -k takes the directory that holds a kustomization.yaml\n",
		},
		"no such directory": {
			args: []string{"policy", "eval", "-k", "testdata/nope"}, wantCode: 2,
			wantStderr: "pipeguard policy eval: kustomize testdata/nope: cannot read it: stat testdata/nope: no such file or directory\n",
		},
		"kustomizations that include each other": {
			args: []string{"policy", "eval", "-k", filepath.Join(cycle, "a")}, wantCode: 2,
			stderrHas: []string{"pipeguard policy eval: kustomize " + filepath.Join(cycle, "a") + ": ", "cycle"},
		},
		"-k with --cluster": {
			args: []string{"policy", "eval", "--cluster", "-k", "testdata/kustomize/base"}, wantCode: 2,
			wantStderr: "pipeguard policy eval: --cluster reads the objects, namespace labels and policies from the cluster: leave out -f, -k, -R, --policy, --namespace-labels and -o input\nSee 'pipeguard policy eval --help' for usage.\n",
		},
	} {
		t.Run(name, tc.check)
	}
}

// TestPolicyEvalPolicyFolder: a --policy directory that holds a
// kustomization is built with kustomize (config/samples/ is one); a .rego
// file given as --policy gets a message that says where rego goes.
func TestPolicyEvalPolicyFolder(t *testing.T) {
	regoBeside := t.TempDir()
	copyFile(t, "../../config/samples/allow-csi-driver-namespace.yaml", filepath.Join(regoBeside, "policy.yaml"))
	writeFile(t, filepath.Join(regoBeside, "rules.rego"), "package x\n")
	for name, tc := range map[string]cliCase{
		"config/samples/ with its kustomization.yaml": {
			args: []string{"policy", "eval", "-f", "testdata/csi-node.yaml", "--policy", "../../config/samples/"}, wantCode: 0,
			wantStdout: "ALLOW DaemonSet csi-smb/csi-smb-node-win\n\nSummary: 0 denied, 0 warned, 1 allowed, 0 skipped\n",
		},
		"a kustomization that lists a manifest": {
			args: []string{"policy", "eval", "-f", "testdata/csi-node.yaml", "--policy", "testdata/kustomize/base"}, wantCode: 2,
			wantStderr: "pipeguard policy eval: kustomize testdata/kustomize/base: document 1: DaemonSet \"csi-node\" is not a PipeAccessPolicy (apiVersion pipeguard.io/v1alpha1); --policy takes only PipeAccessPolicy objects\n",
		},
		"a .rego file": {
			args: []string{"policy", "eval", "-f", "testdata/csi-node.yaml", "--policy", "testdata/regotests/pass/smb.rego"}, wantCode: 2,
			wantStderr: "pipeguard policy eval: --policy testdata/regotests/pass/smb.rego: a .rego file is not a policy; policies are PipeAccessPolicy objects, and rego rules go into a PipeAccessPolicy's spec.rego: docs/writing-policies.md, section \"Adding a rule\", shows how\n",
		},
		"a directory of .rego files": {
			args: []string{"policy", "eval", "-f", "testdata/csi-node.yaml", "--policy", "testdata/regotests/pass"}, wantCode: 2,
			wantStderr: "pipeguard policy eval: directory testdata/regotests/pass holds .rego files (testdata/regotests/pass/smb.rego and testdata/regotests/pass/smb_test.rego) but no .yaml, .yml or .json files; policies are PipeAccessPolicy objects, and rego rules go into a PipeAccessPolicy's spec.rego: docs/writing-policies.md, section \"Adding a rule\", shows how\n",
		},
		"a .rego file beside a policy is named, not passed over": {
			args: []string{"policy", "eval", "-f", "testdata/csi-node.yaml", "--policy", regoBeside}, wantCode: 0,
			wantStdout: "ALLOW DaemonSet csi-smb/csi-smb-node-win\n\nSummary: 0 denied, 0 warned, 1 allowed, 0 skipped\n",
			wantStderr: "pipeguard policy eval: warning: " + filepath.Join(regoBeside, "rules.rego") + " not read: policies are PipeAccessPolicy objects, and rego rules go into a PipeAccessPolicy's spec.rego: docs/writing-policies.md, section \"Adding a rule\", shows how\n",
		},
		"a .REGO file": {
			args: []string{"policy", "eval", "-f", "testdata/csi-node.yaml", "--policy", "R.REGO"}, wantCode: 2,
			stderrHas: []string{"--policy R.REGO: a .rego file is not a policy"},
		},
	} {
		t.Run(name, tc.check)
	}
	// The section the message names exists.
	doc, err := os.ReadFile("../../docs/writing-policies.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "\n## Adding a rule\n") || !strings.Contains(string(doc), "rego:") {
		t.Error(`docs/writing-policies.md has no section "Adding a rule" showing spec.rego`)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(b))
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
