package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPolicyTestRun: --run REGEX runs only the rego tests whose full name
// matches and the suite tests whose name or SUITE/TEST matches, as opa
// test --run does; a REGEX that matches nothing, or is no regular
// expression, is an input error (exit 2), never an empty pass.
func TestPolicyTestRun(t *testing.T) {
	const suiteFile = "../../docs/examples/policy-test-suite.yaml"
	line := strings.Repeat("-", 80) + "\n"
	for name, tc := range map[string]cliCase{
		"one rego test by a part of its name": {
			args: []string{"testdata/regotests/pass", "--run", "driver"}, wantCode: 0,
			wantStdout: "PASS: 1/1\n",
		},
		"rego tests by full name, anchored": {
			args: []string{"testdata/regotests/pass", "-v", "--run", `^data\.pipeguard\.admission\.smbonly_test\.test_other`}, wantCode: 0,
			stdoutHas:    []string{"data.pipeguard.admission.smbonly_test.test_other_service_account_is_reported: PASS", "PASS: 1/1\n"},
			stdoutHasNot: []string{"test_driver_service_account_passes"},
		},
		"an empty match selects no test": {
			args: []string{"testdata/regotests/fail", "--run", "^$"}, wantCode: 2,
			wantStderr: "pipeguard policy test: no tests match --run \"^$\": rego tests are matched by their full name (data.PACKAGE.test_NAME), suite tests by their name or SUITE/TEST\n",
		},
		"a suite test by its name": {
			args: []string{suiteFile, "--run", "labels given"}, wantCode: 0,
			wantStdout: suiteFile + ": PolicyTestSuite csi-proxy-pipes\n  namespace labels given by the suite\n    PASS  Pod team-a/disk-tool: allow as expected\n" + line + "PASS: 1/1\n",
		},
		"a suite test by SUITE/TEST": {
			args: []string{suiteFile, "--run", "^csi-proxy-pipes/namespace labels"}, wantCode: 0,
			stdoutHas: []string{"  namespace labels given by the suite\n", "PASS: 1/1\n"}, stdoutHasNot: []string{"built-in default policy"},
		},
		"the failing suite, its failing test not selected": {
			args: []string{"testdata/suites/failing.yaml", suiteFile, "--run", "namespace labels"}, wantCode: 0,
			stdoutHas: []string{"PASS: 1/1\n"}, stdoutHasNot: []string{"wrong-expectations", "FAIL"},
		},
		"the failing suite selected still fails": {
			args: []string{"testdata/suites/failing.yaml", "--run", "default policy"}, wantCode: 1,
			stdoutHas: []string{"FAIL: 4/5\n"},
		},
		"the shipped rules' tests": {
			args: []string{"--run", "no-test-is-named-like-this"}, wantCode: 2,
			wantStderr: "pipeguard policy test: no tests match --run \"no-test-is-named-like-this\": rego tests are matched by their full name (data.PACKAGE.test_NAME), suite tests by their name or SUITE/TEST\n",
		},
		"not a regular expression": {
			args: []string{suiteFile, "--run", "(csi"}, wantCode: 2,
			wantStderr: "pipeguard policy test: --run \"(csi\" is not a regular expression: error parsing regexp: missing closing ): `(csi`\nSee 'pipeguard policy test --help' for usage.\n",
		},
	} {
		tc.args = append([]string{"policy", "test"}, tc.args...)
		t.Run(name, tc.check)
	}

	// -o json lists only what ran, and counts only that.
	code, out, _ := runCLI(t, "", "policy", "test", "testdata/regotests/pass", suiteFile, "--run", "driver|labels given", "-o", "json")
	var rep testReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("-o json: exit %d, %v\n%s", code, err, out)
	}
	if len(rep.Rego) != 1 || rep.Rego[0].Name != "test_driver_service_account_passes" || len(rep.Suites) != 1 || len(rep.Suites[0].Cases) != 1 || rep.Passed != 2 || rep.Failed != 0 {
		t.Errorf("-o json: %+v", rep)
	}
}
