package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/policy"
)

// The CLI's exit codes, output lines and messages are a contract with
// scripts and CI checks outside the repository.

const deniedSneaky = `DENY Pod default/sneaky
    [protected-pipe-mount] container "shell" mounts \\.\pipe\csi-proxy-disk-v1 through volume "disk", but it is not HostProcess and namespace "default" is not allowed; to allow it, label the namespace pipeguard.io/allow-csi-proxy=true, or run the container as HostProcess
`

func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// cliCase is one run of the CLI and what it must give: the exit code;
// stdout exactly, or, when stdoutHas is set, each of stdoutHas and none of
// stdoutHasNot; stderr exactly, or, when stderrHas is set, each of those.
type cliCase struct {
	args                    []string
	wantCode                int
	wantStdout              string
	stdoutHas, stdoutHasNot []string
	wantStderr              string
	stderrHas               []string
}

func (tc cliCase) check(t *testing.T) {
	t.Helper()
	code, out, errOut := runCLI(t, "", tc.args...)
	if code != tc.wantCode {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, out, errOut)
	}
	if tc.stdoutHas == nil && out != tc.wantStdout {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, tc.wantStdout)
	}
	for _, want := range tc.stdoutHas {
		if !strings.Contains(out, want) {
			t.Errorf("stdout:\n%s\nwant it to contain:\n%s", out, want)
		}
	}
	for _, not := range tc.stdoutHasNot {
		if strings.Contains(out, not) {
			t.Errorf("stdout:\n%s\nwant it not to contain %q", out, not)
		}
	}
	if tc.stderrHas == nil && errOut != tc.wantStderr {
		t.Errorf("stderr:\n%s\nwant:\n%s", errOut, tc.wantStderr)
	}
	for _, want := range tc.stderrHas {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr:\n%s\nwant it to contain:\n%s", errOut, want)
		}
	}
}

func TestPolicyEval(t *testing.T) {
	mixed, err := os.ReadFile("testdata/mixed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	csiNode, err := os.ReadFile("testdata/csi-node.yaml")
	if err != nil {
		t.Fatal(err)
	}
	otherSA := strings.Replace(string(csiNode), "serviceAccountName: csi-smb-node-sa", "serviceAccountName: builder", 1)
	cases := map[string]struct {
		stdin      string
		args       []string
		wantCode   int
		wantStdout string // exact, unless empty
		contains   []string
		wantStderr string // substring
	}{
		"mixed manifest": {
			args:     []string{"policy", "eval", "-f", "testdata/mixed.yaml"},
			wantCode: 1,
			wantStdout: "SKIP Namespace storage\n    not reviewed: a Namespace mounts no pipe; its labels apply to the objects evaluated in it\n" +
				"ALLOW Pod storage/driver\n" + deniedSneaky +
				"DENY PersistentVolume pipe-pv\n    [protected-pipe-pv] PersistentVolume \"pipe-pv\" points at \\\\.\\pipe\\csi-proxy-volume-v1 (local); a PersistentVolume cannot carry an allowance, so any pod bound to it would reach the pipe; mount the pipe through a hostPath volume of a HostProcess container instead\n" +
				"SKIP ConfigMap storage/settings\n    not reviewed: " + notReviewed + "\n" +
				"\nSummary: 2 denied, 0 warned, 1 allowed, 2 skipped\n",
		},
		"stdin and --namespace": {
			stdin:    string(mixed),
			args:     []string{"policy", "eval", "-f", "-", "--namespace", "team-b"},
			wantCode: 1,
			contains: []string{"DENY Pod team-b/sneaky", `namespace "team-b" is not allowed`},
		},
		"CSI node DaemonSet in an unlabelled namespace": {
			args:     []string{"policy", "eval", "-f", "testdata/csi-node.yaml"},
			wantCode: 1,
			contains: []string{
				"DENY DaemonSet csi-smb/csi-smb-node-win\n",
				// One block per container: every pipe it mounts, the reason and the remedy once.
				`    [protected-pipe-mount] container "smb" mounts \\.\pipe\csi-proxy-filesystem-v1 through volume "csi-proxy-fs-pipe-v1" and \\.\pipe\csi-proxy-smb-v1 through volume "csi-proxy-smb-pipe-v1", but it is not HostProcess and namespace "csi-smb" is not allowed; to allow it, label the namespace pipeguard.io/allow-csi-proxy=true, or run the container as HostProcess` + "\n",
			},
		},
		"namespace labels from the command line": {
			args:       []string{"policy", "eval", "-f", "testdata/csi-node.yaml", "--namespace-labels", "csi-smb=team=storage,pipeguard.io/allow-csi-proxy=true"},
			wantCode:   0,
			wantStdout: "ALLOW DaemonSet csi-smb/csi-smb-node-win\n\nSummary: 0 denied, 0 warned, 1 allowed, 0 skipped\n",
		},
		"command-line labels replace manifest labels": {
			args:     []string{"policy", "eval", "-f", "testdata/mixed.yaml", "--namespace-labels", "storage="},
			wantCode: 1,
			contains: []string{"DENY Pod storage/driver"},
		},
		"warn policy": {
			args:     []string{"policy", "eval", "-f", "testdata/csi-node.yaml", "--policy", "testdata/warn-policy.yaml"},
			wantCode: 0,
			contains: []string{"WARN DaemonSet csi-smb/csi-smb-node-win\n", `    warning: [protected-pipe-mount] container "smb" mounts \\.\pipe\csi-proxy-filesystem-v1 through volume "csi-proxy-fs-pipe-v1" and \\.\pipe\csi-proxy-smb-v1 through volume "csi-proxy-smb-pipe-v1", but it is not HostProcess and namespace "csi-smb" is not allowed; to allow it, run the container as HostProcess` + "\n"},
		},
		"sample: allow the CSI driver namespace": {
			args:       []string{"policy", "eval", "-f", "testdata/csi-node.yaml", "--policy", "../../config/samples/allow-csi-driver-namespace.yaml"},
			wantCode:   0,
			wantStdout: "ALLOW DaemonSet csi-smb/csi-smb-node-win\n\nSummary: 0 denied, 0 warned, 1 allowed, 0 skipped\n",
		},
		"sample: custom rule admits the driver's ServiceAccount": {
			args:       []string{"policy", "eval", "-f", "testdata/csi-node.yaml", "--policy", "../../config/samples/smb-service-account.yaml"},
			wantCode:   0,
			wantStdout: "ALLOW DaemonSet csi-smb/csi-smb-node-win\n\nSummary: 0 denied, 0 warned, 1 allowed, 0 skipped\n",
		},
		"sample: custom rule denies another ServiceAccount": {
			stdin:    otherSA,
			args:     []string{"policy", "eval", "-f", "-", "--policy", "../../config/samples/smb-service-account.yaml"},
			wantCode: 1,
			wantStdout: "DENY DaemonSet csi-smb/csi-smb-node-win\n" +
				"    [smb-sa-only] container \"smb\" mounts \\\\.\\pipe\\csi-proxy-smb-v1 but the pod runs as ServiceAccount \"builder\"; only csi-smb-node-sa may\n" +
				"\nSummary: 1 denied, 0 warned, 0 allowed, 0 skipped\n",
		},
		"sample: warn rollout": {
			args:     []string{"policy", "eval", "-f", "testdata/csi-node.yaml", "--policy", "../../config/samples/warn-rollout.yaml"},
			wantCode: 0,
			contains: []string{"WARN DaemonSet csi-smb/csi-smb-node-win\n"},
		},
		"broken rego names file and row": {
			args:       []string{"policy", "eval", "-f", "testdata/csi-node.yaml", "--policy", "testdata/broken-policy.yaml"},
			wantCode:   2,
			wantStderr: `invalid policy: PipeAccessPolicy "broken": 1 error occurred: broken/rules.rego:5: rego_parse_error: unexpected } token`,
		},
		"unknown policy field": {
			args:       []string{"policy", "eval", "-f", "testdata/csi-node.yaml", "--policy", "testdata/typo-policy.yaml"},
			wantCode:   2,
			wantStderr: `testdata/typo-policy.yaml: document 1: invalid PipeAccessPolicy "typo": unknown field "spec.allow.namespace"`,
		},
		"a manifest as --policy": {
			args:       []string{"policy", "eval", "-f", "testdata/csi-node.yaml", "--policy", "testdata/csi-node.yaml"},
			wantCode:   2,
			wantStderr: `testdata/csi-node.yaml: document 1: DaemonSet "csi-smb-node-win" is not a PipeAccessPolicy`,
		},
		"invalid YAML names the document": {
			stdin:      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: [\n",
			args:       []string{"policy", "eval", "-f", "-"},
			wantCode:   2,
			wantStderr: "<stdin>: document 2: invalid YAML or JSON",
		},
		"a YAML sequence is no object: SKIP, not ALLOW": {
			stdin:      "- a\n- b\n",
			args:       []string{"policy", "eval", "-f", "-"},
			wantCode:   0,
			wantStdout: "SKIP (<stdin>: document 1)\n    not a Kubernetes object: a YAML sequence, not a mapping with apiVersion and kind\n\nSummary: 0 denied, 0 warned, 0 allowed, 1 skipped\n",
		},
		"missing kind": {
			stdin:      "apiVersion: v1\nmetadata: {name: a}\n",
			args:       []string{"policy", "eval", "-f", "-"},
			wantCode:   2,
			wantStderr: "<stdin>: document 1: not a Kubernetes object: apiVersion and kind are required",
		},
		"undecodable pod": {
			stdin:      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {volumes: [{name: v, hostPath: {path: 7}}]}\n",
			args:       []string{"policy", "eval", "-f", "-"},
			wantCode:   2,
			wantStderr: `<stdin>: document 1: Pod "p": cannot decode request.object as /v1, Kind=Pod`,
		},
		"JSON input": {
			stdin:    `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "j"}, "spec": {"containers": [{"name": "c", "volumeMounts": [{"name": "v", "mountPath": "C:\\p"}]}], "volumes": [{"name": "v", "hostPath": {"path": "\\\\.\\pipe\\csi-proxy-disk-v1"}}]}}`,
			args:     []string{"policy", "eval", "-f", "-"},
			wantCode: 1,
			contains: []string{"DENY Pod default/j\n"},
		},
		"missing file": {
			args:       []string{"policy", "eval", "-f", "testdata/nope.yaml"},
			wantCode:   2,
			wantStderr: "cannot read testdata/nope.yaml",
		},
		"no -f": {
			args:       []string{"policy", "eval"},
			wantCode:   2,
			wantStderr: "give the manifests with -f FILE",
		},
		"bad namespace labels": {
			args:       []string{"policy", "eval", "-f", "testdata/csi-node.yaml", "--namespace-labels", "csi-smb=novalue"},
			wantCode:   2,
			wantStderr: `--namespace-labels "csi-smb=novalue": label "novalue" is not key=value`,
		},
		"unknown command": {
			args:       []string{"policy", "frobnicate"},
			wantCode:   2,
			wantStderr: "pipeguard policy: unknown command \"frobnicate\"\nSee 'pipeguard policy --help' for usage.\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.stdin, tc.args...)
			if code != tc.wantCode {
				t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, out, errOut)
			}
			if tc.wantStdout != "" && out != tc.wantStdout {
				t.Errorf("stdout:\n%s\nwant:\n%s", out, tc.wantStdout)
			}
			for _, c := range tc.contains {
				if !strings.Contains(out, c) {
					t.Errorf("stdout:\n%s\nwant it to contain:\n%s", out, c)
				}
			}
			if !strings.Contains(errOut, tc.wantStderr) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tc.wantStderr)
			}
		})
	}
}

func TestPolicyEvalJSON(t *testing.T) {
	code, out, errOut := runCLI(t, "", "policy", "eval", "-f", "testdata/mixed.yaml", "-o", "json")
	if code != 1 {
		t.Fatalf("exit code %d, want 1; stderr %s", code, errOut)
	}
	var doc evalOutput
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("-o json output is not JSON: %v\n%s", err, out)
	}
	results := doc.Results
	if len(results) != 5 {
		t.Fatalf("%d results, want 5", len(results))
	}
	pv := results[3]
	if pv.Kind != "PersistentVolume" || pv.Decision != "deny" || pv.Source != "testdata/mixed.yaml: document 4, item 1" ||
		len(pv.Deny) != 1 || pv.Deny[0].Rule != "protected-pipe-pv" || pv.Deny[0].Pipe != "csi-proxy-volume-v1" {
		t.Fatalf("PersistentVolume result %+v", pv)
	}
}

func TestPolicyTest(t *testing.T) {
	cases := map[string]struct {
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		"shipped rules":       {args: []string{"policy", "test"}, wantCode: 0, wantStdout: "PASS: "},
		"admin rules pass":    {args: []string{"policy", "test", "testdata/regotests/pass"}, wantCode: 0, wantStdout: "PASS: 2/2"},
		"admin rules fail":    {args: []string{"policy", "test", "testdata/regotests/fail"}, wantCode: 1, wantStdout: "data.pipeguard.admission.smbonly_test.test_expects_the_wrong_thing: FAIL"},
		"rego does not parse": {args: []string{"policy", "test", "testdata/regotests/broken"}, wantCode: 2, wantStderr: "testdata/regotests/broken/broken_test.rego:5: rego_parse_error"},
		"no such directory":   {args: []string{"policy", "test", "testdata/none"}, wantCode: 2, wantStderr: "pipeguard policy test: cannot read testdata/none: "},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tc.args...)
			if code != tc.wantCode {
				t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, out, errOut)
			}
			if !strings.Contains(out, tc.wantStdout) || !strings.Contains(errOut, tc.wantStderr) {
				t.Fatalf("stdout:\n%s\nstderr:\n%s\nwant stdout to contain %q and stderr %q", out, errOut, tc.wantStdout, tc.wantStderr)
			}
		})
	}
}

// TestDocumentedInput: docs/examples/admission-input.json is what `-o input`
// prints for docs/examples/pod.yaml, so the schema admins read is the one
// their rules get. Regenerate it with
// `pipeguard policy eval -f docs/examples/pod.yaml -o input`.
func TestDocumentedInput(t *testing.T) {
	want, err := os.ReadFile("../../docs/examples/admission-input.json")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "", "policy", "eval", "-f", "../../docs/examples/pod.yaml", "-o", "input")
	if code != 0 {
		t.Fatalf("exit code %d: %s", code, errOut)
	}
	if out != string(want) {
		t.Fatalf("-o input differs from docs/examples/admission-input.json; regenerate it:\n%s", out)
	}
}

// A manifest that names a key twice is read as kubectl and the API server
// read it: the last value counts. Otherwise a harmless first value would
// hide the pipe the cluster then sees.
func TestPolicyEvalDuplicateKeys(t *testing.T) {
	pod := func(paths ...string) string {
		s := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: twice\n  namespace: team-a\nspec:\n  containers:\n  - name: shell\n    image: shell\n    volumeMounts: [{name: disk, mountPath: 'C:\\pipe'}]\n  volumes:\n  - name: disk\n    hostPath:\n"
		for _, p := range paths {
			s += "      path: " + p + "\n"
		}
		return s
	}
	const harmless, pipe = `C:\var\log`, `\\.\pipe\csi-proxy-disk-v1`
	deny := "DENY Pod team-a/twice\n    [protected-pipe-mount] container \"shell\" mounts \\\\.\\pipe\\csi-proxy-disk-v1 through volume \"disk\""
	cases := map[string]struct {
		stdin      string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		"harmless path, then the pipe": {
			stdin: pod(harmless, pipe), wantCode: 1, wantStdout: deny,
			wantStderr: "pipeguard policy eval: warning: <stdin>: document 1: line 15: key \"path\" is given more than once; the last value is used, as kubectl and the API server do\n",
		},
		"the pipe, then a harmless path": {
			stdin: pod(pipe, harmless), wantCode: 0, wantStdout: "ALLOW Pod team-a/twice\n",
			wantStderr: `line 15: key "path" is given more than once`,
		},
		"second document of a stream, inside a List": {
			stdin: "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n---\napiVersion: v1\nkind: List\nitems:\n- " +
				strings.ReplaceAll(strings.TrimSuffix(pod(harmless, pipe), "\n"), "\n", "\n  ") + "\n",
			wantCode: 1, wantStdout: "SKIP Namespace team-a\n    not reviewed: a Namespace mounts no pipe; its labels apply to the objects evaluated in it\n" + deny,
			wantStderr: `<stdin>: document 2: line 18: key "path" is given more than once`,
		},
		"JSON": {
			stdin:    `{"apiVersion":"v1","kind":"Pod","kind":"Pod","metadata":{"name":"twice","namespace":"team-a"},"spec":{"containers":[{"name":"shell","image":"shell","volumeMounts":[{"name":"disk","mountPath":"C:\\pipe"}]}],"volumes":[{"name":"disk","hostPath":{"path":"C:\\var","path":"\\\\.\\pipe\\csi-proxy-disk-v1"}}]}}`,
			wantCode: 1, wantStdout: deny,
			wantStderr: "warning: <stdin>: document 1: line 1: key \"kind\" is given more than once; the last value is used, as kubectl and the API server do\npipeguard policy eval: warning: <stdin>: document 1: line 1: key \"path\" is given more than once",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wantEval(t, tc.stdin, tc.wantCode, tc.wantStdout, tc.wantStderr)
		})
	}

	t.Run("in a policy file", func(t *testing.T) {
		dir := t.TempDir()
		p := dir + "/policy.yaml"
		if err := os.WriteFile(p, []byte("apiVersion: pipeguard.io/v1alpha1\nkind: PipeAccessPolicy\nmetadata: {name: twice}\nspec:\n  pipes: ['csi-proxy-*']\n  enforcementAction: deny\n  enforcementAction: warn\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runCLI(t, pod(pipe), "policy", "eval", "-f", "-", "--policy", p)
		if code != 0 || !strings.HasPrefix(out, "WARN Pod team-a/twice\n") {
			t.Fatalf("exit code %d, stdout:\n%s\nwant WARN: the last enforcementAction counts", code, out)
		}
		if want := p + `: document 1: line 7: key "enforcementAction" is given more than once`; !strings.Contains(errOut, want) {
			t.Errorf("stderr:\n%s\nwant it to contain %q", errOut, want)
		}
	})
}

// TestInputIsWhatTheRulesSee: -o input prints the input of each object
// the rules are asked about, as the review gives it to them, and nothing
// for an object no rule can see (no host path, HostProcess container or
// claim), whose review never reaches rego.
func TestInputIsWhatTheRulesSee(t *testing.T) {
	manifests := pipePod + `---
apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: team-a}
spec:
  containers: [{name: app, image: app, volumeMounts: [{name: scratch, mountPath: /scratch}]}]
  volumes: [{name: scratch, emptyDir: {}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: team-a}
`
	code, out, errOut := runCLI(t, manifests, "policy", "eval", "-f", "-", "-o", "input")
	if code != 0 {
		t.Fatalf("exit code %d: %s", code, errOut)
	}
	var inputs []policy.Input
	if err := json.Unmarshal([]byte(out), &inputs); err != nil {
		t.Fatalf("-o input is not a JSON list of inputs: %v\n%s", err, out)
	}
	if len(inputs) != 1 || inputs[0].Object.Name != "sneaky" || len(inputs[0].Mounts) == 0 {
		t.Fatalf("-o input gave %d inputs, want the pipe pod's alone, with its mounts:\n%s", len(inputs), out)
	}
}

// TestVulnerableCSIProxyInRealManifests: csi-driver-smb's chart with its
// optional CSI Proxy DaemonSet, and its example CSI Proxy, run CSI Proxy
// v1.1.2 (CVE-2023-3893); policy eval warns about each, by name, and the
// rest of the decision is unchanged.
func TestVulnerableCSIProxyInRealManifests(t *testing.T) {
	const dir = "../../../shared/real-manifests"
	for _, f := range []string{"helm-smb-latest-pipes-csiproxy.yaml", "smb-example-csi-proxy.yaml"} {
		path := filepath.Join(dir, f)
		if _, err := os.Stat(path); err != nil {
			t.Skipf("%s absent: %v", path, err)
		}
		t.Run(f, func(t *testing.T) {
			_, out, errOut := runCLI(t, "", "policy", "eval", "-f", path)
			const want = `warning: [vulnerable-csi-proxy] container "csi-proxy" runs CSI Proxy v1.1.2 (image "ghcr.io/kubernetes-sigs/sig-windows/csi-proxy:v1.1.2")`
			if strings.Count(out, want) != 1 || !strings.Contains(out, "upgrade it to v1.1.3 or later") {
				t.Errorf("stdout:\n%s\nstderr:\n%s\nwant one warning %q", out, errOut, want)
			}
		})
	}
}
