package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestExampleSuite runs the suite shipped in docs/examples, so the
// decisions it documents are the ones pipeguard makes.
func TestExampleSuite(t *testing.T) {
	code, out, errOut := runCLI(t, "", "policy", "test", "../../docs/examples/policy-test-suite.yaml")
	want := `../../docs/examples/policy-test-suite.yaml: PolicyTestSuite csi-proxy-pipes
  the built-in default policy
    PASS  Pod team-a/disk-tool: deny as expected, message matches /container "tool" mounts .*csi-proxy-disk-v1 .*namespace "team-a" is not allowed/
    PASS  Pod csi-smb/smb-node: allow as expected
    PASS  Pod team-a/privileged-node: deny as expected, message matches /securityContext.privileged has no effect on Windows/
    PASS  DaemonSet team-a/hostprocess-node: allow as expected
    PASS  PersistentVolume pipe-pv: deny as expected, message matches /^\[protected-pipe-pv\]/
    PASS  ConfigMap team-a/settings: skip as expected
  namespace labels given by the suite
    PASS  Pod team-a/disk-tool: allow as expected
  warn before enforcing
    PASS  Pod team-a/disk-tool: warn as expected, message matches /^warning: \[protected-pipe-mount\] container "tool"/
    PASS  Pod csi-smb/smb-node: allow as expected
  an inline policy allowing one ServiceAccount's pods
    PASS  Pod storage/node: allow as expected
    PASS  Pod storage/debug: deny as expected, message matches /ServiceAccount/
` + strings.Repeat("-", 80) + "\nPASS: 11/11\n"
	if code != exitOK || out != want || errOut != "" {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 0 and:\n%s", code, out, errOut, want)
	}
}

// TestFailingSuite: every expectation that does not hold is FAIL with the
// reason, where it is, and what admission said; the run exits 1.
func TestFailingSuite(t *testing.T) {
	code, out, errOut := runCLI(t, "", "policy", "test", "testdata/suites/failing.yaml")
	if code != exitDenied {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"    FAIL  Pod team-a/disk-tool: want allow, got deny\n          at testdata/suites/failing.yaml:11\n          [protected-pipe-mount] container \"tool\" mounts \\\\.\\pipe\\csi-proxy-disk-v1",
		"    FAIL  Pod team-a/disk-tool: deny as expected, but no message matches /csi-proxy-smb-v1/\n          at testdata/suites/failing.yaml:12\n",
		"    FAIL  Pod team-a/no-such-pod: no Pod team-a/no-such-pod among the test's manifests\n          at testdata/suites/failing.yaml:13\n",
		"    FAIL  ConfigMap team-a/settings: want allow, got skip\n          at testdata/suites/failing.yaml:14\n          not reviewed: pipeguard reviews only Pod,",
		"    PASS  Pod csi-smb/smb-node: allow as expected\n",
		"PASS: 1/5\nFAIL: 4/5\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout:\n%s\nwant it to contain:\n%s", out, want)
		}
	}

	code, out, _ = runCLI(t, "", "policy", "test", "testdata/suites/failing.yaml", "-o", "json")
	var rep testReport
	if err := yaml.Unmarshal([]byte(out), &rep); err != nil || code != exitDenied {
		t.Fatalf("-o json: exit %d, %v\n%s", code, err, out)
	}
	if rep.Passed != 1 || rep.Failed != 4 || len(rep.Suites) != 1 || len(rep.Suites[0].Cases) != 5 {
		t.Fatalf("-o json: %+v", rep)
	}
	if c := rep.Suites[0].Cases[0]; c.Pass || c.Want != "allow" || c.Got != "deny" || c.Where != "testdata/suites/failing.yaml:11" || c.Reason != "want allow, got deny" {
		t.Errorf("first case: %+v", c)
	}
}

// writeSuite writes files into a new directory and returns it.
func writeSuite(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const suiteHead = "apiVersion: pipeguard.io/v1alpha1\nkind: PolicyTestSuite\nmetadata: {name: s}\n"

// oneTest is a suite of one test evaluating pod.yaml; extra is added to
// the test, expect to its expect list.
func oneTest(extra, expect string) string {
	return suiteHead + "tests:\n- name: t\n  manifests:\n  - file: pod.yaml\n" + extra + "  expect:\n" + expect
}

// TestSuiteErrors: a suite that cannot be what its author meant is an
// error naming file and line (exit 2), never a pass.
func TestSuiteErrors(t *testing.T) {
	deny := "  - {kind: Pod, namespace: team-a, name: sneaky, decision: deny}\n"
	cases := map[string]struct {
		suite string
		files map[string]string
		want  string // stderr, after "pipeguard policy test: DIR/suite.yaml"
	}{
		"unknown field in a test": {
			suite: oneTest("  expected: []\n", deny),
			want:  `:8: unknown field "expected" in a test; its fields are name, namespace, namespaceLabels, policies, manifests or expect`,
		},
		"unknown field in an expectation": {
			suite: oneTest("", "  - {kind: Pod, namespace: team-a, name: sneaky, decison: deny}\n"),
			want:  `:9: unknown field "decison" in an expect entry; its fields are kind, namespace, name, decision or message`,
		},
		"unknown top-level field": {
			suite: suiteHead + "spec: {}\ntests: []\n",
			want:  `:4: unknown field "spec" in a PolicyTestSuite; its fields are apiVersion, kind, metadata or tests`,
		},
		"a misspelt decision": {
			suite: oneTest("", "  - {kind: Pod, namespace: team-a, name: sneaky, decision: denied}\n"),
			want:  `:9: decision "denied": want allow, warn, dryrun, deny or skip`,
		},
		"a message that is no regular expression": {
			suite: oneTest("", "  - {kind: Pod, namespace: team-a, name: sneaky, decision: deny, message: 'csi-proxy-(disk'}\n"),
			want:  `:9: message "csi-proxy-(disk" is not a regular expression: error parsing regexp: missing closing ): ` + "`csi-proxy-(disk`",
		},
		"an expectation without a name": {
			suite: oneTest("", "  - {kind: Pod, decision: deny}\n"),
			want:  `:9: an expectation names its object by kind and name (and namespace, for a namespaced object)`,
		},
		"file and inline together": {
			suite: oneTest("  policies:\n  - file: p.yaml\n    inline: {}\n", deny),
			want:  `:9: test "t": each entry of policies takes either file: (a path relative to the suite) or inline: (the objects), not both or neither`,
		},
		"a test that expects nothing": {
			suite: suiteHead + "tests:\n- name: t\n  manifests:\n  - file: pod.yaml\n",
			want:  `:5: test "t" expects nothing; list the decision expected on each object under expect:`,
		},
		"a test without manifests": {
			suite: suiteHead + "tests:\n- name: t\n  expect:\n" + deny,
			want:  `:5: test "t" has no manifests; list the objects to evaluate under manifests:`,
		},
		"no tests": {
			suite: suiteHead,
			want:  `:1: PolicyTestSuite "s" has no tests; list them under tests:`,
		},
		"two tests of one name": {
			suite: oneTest("", deny) + "- name: t\n  manifests: [{file: pod.yaml}]\n  expect:\n" + deny,
			want:  `:10: test "t" is named twice (first at line 5); give each test its own name`,
		},
		"a key given twice": {
			suite: oneTest("", "  - {kind: Pod, namespace: team-a, name: sneaky, decision: allow, decision: deny}\n"),
			want:  `:9: mapping key "decision" already defined at line 9`,
		},
		"wrong apiVersion": {
			suite: strings.Replace(oneTest("", deny), "pipeguard.io/v1alpha1", "pipeguard.io/v1", 1),
			want:  `:1: apiVersion "pipeguard.io/v1", kind "PolicyTestSuite": want apiVersion pipeguard.io/v1alpha1, kind PolicyTestSuite`,
		},
		"YAML that does not parse": {
			suite: oneTest("", "  - {kind: Pod\n"),
			want:  `:8: did not find expected ',' or '}'`,
		},
		"a manifest file that is missing": {
			suite: oneTest("", deny),
			files: map[string]string{},
			want:  `:5: test "t": cannot read `,
		},
		"a policy file that is no PipeAccessPolicy": {
			suite: oneTest("  policies: [{file: pod.yaml}]\n", deny),
			want:  `:5: test "t": ` + "DIR/pod.yaml: document 1: Pod \"sneaky\" is not a PipeAccessPolicy (apiVersion pipeguard.io/v1alpha1); policies takes only PipeAccessPolicy objects",
		},
		"an inline policy whose rego does not parse": {
			suite: oneTest("  policies:\n  - inline: {apiVersion: pipeguard.io/v1alpha1, kind: PipeAccessPolicy, metadata: {name: broken}, spec: {pipes: ['x'], rego: [{name: r.rego, source: 'package pipeguard.admission.x\n\ndeny contains x if {'}]}}\n", deny),
			want:  `:5: test "t": invalid policy: PipeAccessPolicy "broken": 1 error occurred: broken/r.rego:`,
		},
		"an inline policy with an unknown field": {
			suite: oneTest("  policies:\n  - inline: {apiVersion: pipeguard.io/v1alpha1, kind: PipeAccessPolicy, metadata: {name: typo}, spec: {pipes: ['x'], allow: {namespace: [a]}}}\n", deny),
			want:  `:5: test "t": DIR/suite.yaml:9 (inline): document 1: invalid PipeAccessPolicy "typo": unknown field "spec.allow.namespace"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			files := map[string]string{"suite.yaml": tc.suite, "pod.yaml": pipePod}
			if tc.files != nil {
				files = map[string]string{"suite.yaml": tc.suite}
			}
			dir := writeSuite(t, files)
			suite := filepath.Join(dir, "suite.yaml")
			code, out, errOut := runCLI(t, "", "policy", "test", suite)
			want := "pipeguard policy test: " + suite + strings.ReplaceAll(tc.want, "DIR", dir)
			if code != exitBadInput || !strings.HasPrefix(errOut, want) {
				t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s\nwant stderr to start with:\n%s", code, out, errOut, want)
			}
		})
	}
}

// TestSuiteCases covers how expectations find their object: a namespace
// left out matches any, but two matches are a failure, not a guess; an
// object of another test is not found.
func TestSuiteCases(t *testing.T) {
	twoPods := pipePod + "---\n" + strings.Replace(pipePod, "namespace: team-a", "namespace: csi", 1)
	suite := suiteHead + `tests:
- name: labels
  namespaceLabels: {csi: {pipeguard.io/allow-csi-proxy: "true"}}
  manifests: [{file: pods.yaml}]
  expect:
  - {kind: Pod, name: sneaky, decision: deny}
  - {kind: Pod, namespace: csi, name: sneaky, decision: ALLOW}
- name: other
  manifests:
  - inline: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: x}}
  expect:
  - {kind: Pod, namespace: team-a, name: sneaky, decision: deny}
  - {kind: ConfigMap, name: c, decision: skip, message: 'not reviewed'}
`
	dir := writeSuite(t, map[string]string{"suite.yaml": suite, "pods.yaml": twoPods})
	code, out, _ := runCLI(t, "", "policy", "test", dir)
	for _, want := range []string{
		"    FAIL  Pod sneaky: Pod sneaky matches 2 objects (team-a/sneaky, csi/sneaky); give the namespace\n",
		"    PASS  Pod csi/sneaky: allow as expected\n",
		"    FAIL  Pod team-a/sneaky: no Pod team-a/sneaky among the test's manifests\n",
		"    PASS  ConfigMap x/c: skip as expected, message matches /not reviewed/\n",
		"PASS: 2/4\nFAIL: 2/4\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout:\n%s\nwant it to contain:\n%s", out, want)
		}
	}
	if code != exitDenied {
		t.Errorf("exit %d, want 1", code)
	}
}

// TestPolicyTestDirectory: a directory gives its rego tests and its
// suites; its other YAML files are manifests, left alone; a broken suite
// in it is reported, not passed over.
func TestPolicyTestDirectory(t *testing.T) {
	files := map[string]string{
		"suites/pod-suite.yaml": oneTest("", "  - {kind: Pod, namespace: team-a, name: sneaky, decision: deny}\n"),
		"suites/pod.yaml":       pipePod,
	}
	for _, f := range []string{"smb.rego", "smb_test.rego"} {
		b, err := os.ReadFile(filepath.Join("testdata/regotests/pass", f))
		if err != nil {
			t.Fatal(err)
		}
		files["rego/"+f] = string(b)
	}
	dir := writeSuite(t, files)
	code, out, errOut := runCLI(t, "", "policy", "test", dir)
	if code != exitOK || !strings.Contains(out, "PASS: 2/2\n\n") || !strings.Contains(out, "suites/pod-suite.yaml: PolicyTestSuite s\n  t\n    PASS  Pod team-a/sneaky: deny as expected\n") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	broken := filepath.Join(dir, "suites", "broken.yaml")
	if err := os.WriteFile(broken, []byte("# a suite with a typo\n"+suiteHead+"test: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, "", "policy", "test", dir)
	if want := broken + `:5: unknown field "test" in a PolicyTestSuite`; code != exitBadInput || !strings.Contains(errOut, want) {
		t.Fatalf("exit %d, stderr %q; want 2 and %q", code, errOut, want)
	}

	code, _, errOut = runCLI(t, "", "policy", "test", filepath.Join(dir, "suites", "pod.yaml"))
	if want := "pod.yaml: not a PolicyTestSuite: want a file of apiVersion pipeguard.io/v1alpha1, kind PolicyTestSuite"; code != exitBadInput || !strings.Contains(errOut, want) {
		t.Fatalf("a manifest as a suite: exit %d, stderr %q; want 2 and %q", code, errOut, want)
	}
}

// TestSuiteKustomizedPolicies: a suite's policies entry that names a
// directory with a kustomization.yaml takes the policies it builds, as
// policy eval --policy does (config/samples/ is one).
func TestSuiteKustomizedPolicies(t *testing.T) {
	samples, err := filepath.Abs("../../config/samples")
	if err != nil {
		t.Fatal(err)
	}
	node, err := filepath.Abs("testdata/csi-node.yaml")
	if err != nil {
		t.Fatal(err)
	}
	suite := filepath.Join(t.TempDir(), "suite.yaml")
	writeFile(t, suite, "apiVersion: pipeguard.io/v1alpha1\nkind: PolicyTestSuite\nmetadata: {name: samples}\ntests:\n- name: the samples\n  policies: [{file: "+samples+"}]\n  manifests: [{file: "+node+"}]\n  expect:\n  - {kind: DaemonSet, namespace: csi-smb, name: csi-smb-node-win, decision: allow}\n")
	code, out, errOut := runCLI(t, "", "policy", "test", suite)
	want := suite + ": PolicyTestSuite samples\n  the samples\n    PASS  DaemonSet csi-smb/csi-smb-node-win: allow as expected\n" + strings.Repeat("-", 80) + "\nPASS: 1/1\n"
	if code != exitOK || out != want || errOut != "" {
		t.Fatalf("exit %d, stderr %q\n%s\nwant:\n%s", code, errOut, out, want)
	}
}

// TestSuiteDryRun: a suite can expect dryrun, the decision of a policy
// that only records what it would deny; allow holds for it too, since
// admission admits it, and deny does not.
func TestSuiteDryRun(t *testing.T) {
	suite := suiteHead + `tests:
- name: rollout
  policies:
  - inline:
      apiVersion: pipeguard.io/v1alpha1
      kind: PipeAccessPolicy
      metadata: {name: rollout}
      spec: {pipes: ["csi-proxy-*"], enforcementAction: dryrun}
  manifests: [{file: pod.yaml}]
  expect:
  - {kind: Pod, name: sneaky, decision: dryrun, message: '^dryrun: \[protected-pipe-mount\]'}
  - {kind: Pod, name: sneaky, decision: allow}
  - {kind: Pod, name: sneaky, decision: deny}
  - {kind: Pod, name: sneaky, decision: warn}
`
	dir := writeSuite(t, map[string]string{"suite.yaml": suite, "pod.yaml": pipePod})
	code, out, _ := runCLI(t, "", "policy", "test", dir)
	for _, want := range []string{
		"    PASS  Pod team-a/sneaky: dryrun as expected, message matches /^dryrun: \\[protected-pipe-mount\\]/\n",
		"    PASS  Pod team-a/sneaky: allow as expected\n",
		"    FAIL  Pod team-a/sneaky: want deny, got dryrun\n",
		"    FAIL  Pod team-a/sneaky: want warn, got dryrun\n",
		"PASS: 2/4\nFAIL: 2/4\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout:\n%s\nwant it to contain:\n%s", out, want)
		}
	}
	if code != exitDenied {
		t.Errorf("exit %d, want 1", code)
	}
}
