package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// commandPaths lists every command of the CLI as its arguments, the root
// first, leaving out cobra's hidden completion request commands.
func commandPaths(c *cobra.Command, prefix []string) [][]string {
	out := [][]string{prefix}
	for _, sub := range c.Commands() {
		if sub.Hidden || sub.Name() == "help" {
			continue
		}
		out = append(out, commandPaths(sub, append(append([]string{}, prefix...), sub.Name()))...)
	}
	return out
}

// TestHelpAtEveryLevel: -h and --help answer at every level with the usage,
// the flags and examples, on stdout with exit 0; a group alone prints its
// help too, as kubectl's do.
func TestHelpAtEveryLevel(t *testing.T) {
	root := newRootCommand("pipeguard", streams{})
	paths := commandPaths(root, nil)
	if len(paths) < 13 {
		t.Fatalf("only %d commands: %v", len(paths), paths)
	}
	for _, path := range paths {
		name := strings.TrimSpace("pipeguard " + strings.Join(path, " "))
		for _, flag := range []string{"-h", "--help"} {
			code, out, errOut := runCLI(t, "", append(append([]string{}, path...), flag)...)
			if code != exitOK || errOut != "" {
				t.Errorf("%s %s: exit %d, stderr %q", name, flag, code, errOut)
			}
			for _, want := range []string{"Usage:\n  " + name, "-h, --help"} {
				if !strings.Contains(out, want) {
					t.Errorf("%s %s: help lacks %q:\n%s", name, flag, want, out)
				}
			}
			if !strings.Contains(out, "Examples:\n  ") {
				t.Errorf("%s %s: help has no examples:\n%s", name, flag, out)
			}
		}
	}
	for _, group := range [][]string{{}, {"policy"}, {"audit"}, {"completion"}} {
		code, out, _ := runCLI(t, "", group...)
		if code != exitOK || !strings.Contains(out, "Available Commands:") {
			t.Errorf("%v alone: exit %d\n%s", group, code, out)
		}
	}
	code, out, _ := runCLI(t, "", "help", "policy", "eval")
	if code != exitOK || !strings.Contains(out, "Usage:\n  pipeguard policy eval -f FILE") {
		t.Errorf("help policy eval: exit %d\n%s", code, out)
	}
}

// TestKubectlPlugin: installed as kubectl-pipeguard, the CLI names itself
// kubectl pipeguard in its help, examples and messages.
func TestKubectlPlugin(t *testing.T) {
	for arg0, want := range map[string]string{
		"pipeguard":                        "pipeguard",
		"/usr/local/bin/pipeguard":         "pipeguard",
		"/usr/local/bin/kubectl-pipeguard": "kubectl pipeguard",
		"kubectl-pipeguard.exe":            "kubectl pipeguard",
		"kubectl-pipe_guard":               "kubectl pipe-guard",
		"kubectl-admin-pipeguard":          "kubectl admin pipeguard",
	} {
		if got := commandName(arg0); got != want {
			t.Errorf("commandName(%q) = %q, want %q", arg0, got, want)
		}
	}

	var out, errOut bytes.Buffer
	if code := runAs("kubectl pipeguard", []string{"policy", "eval", "--help"}, strings.NewReader(""), &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"Usage:\n  kubectl pipeguard policy eval -f FILE", "\n  kubectl pipeguard policy eval -f daemonset.yaml"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plugin help lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	errOut.Reset()
	code := runAs("kubectl pipeguard", []string{"policy", "eval"}, strings.NewReader(""), &out, &errOut)
	if want := "kubectl pipeguard policy eval: give the manifests with -f FILE (or -f - for stdin)\nSee 'kubectl pipeguard policy eval --help' for usage.\n"; code != exitBadInput || errOut.String() != want {
		t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut.String(), want)
	}
	out.Reset()
	if code := runAs("kubectl pipeguard", []string{"--help"}, strings.NewReader(""), &out, &errOut); code != exitOK || !strings.Contains(out.String(), "Usage:\n  kubectl pipeguard [command]") {
		t.Errorf("root help as a plugin: exit %d\n%s", code, out.String())
	}
}

// TestCompletion: completion scripts for the shells kubectl supports, and
// completion of flag values.
func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{
		"bash":       "__start_pipeguard",
		"zsh":        "#compdef pipeguard",
		"fish":       "complete -c pipeguard",
		"powershell": "Register-ArgumentCompleter",
	} {
		code, out, errOut := runCLI(t, "", "completion", shell)
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("completion %s: exit %d, stderr %q, script lacks %q", shell, code, errOut, want)
		}
	}
	code, _, errOut := runCLI(t, "", "completion", "tcsh")
	if code != exitBadInput || !strings.Contains(errOut, `pipeguard completion: unknown command "tcsh"`) {
		t.Errorf("completion tcsh: exit %d, stderr %q", code, errOut)
	}

	for args, want := range map[string][]string{
		"policy eval -o ":         {"table", "json", "yaml", "input"},
		"audit query --decision ": {"allow", "deny"},
		"po":                      {"policy"},
		"audit v":                 {"verify"},
	} {
		words := append([]string{"__complete"}, strings.Split(args, " ")...)
		code, out, errOut := runCLI(t, "", words...)
		if code != exitOK {
			t.Fatalf("__complete %s: exit %d: %s", args, code, errOut)
		}
		for _, w := range want {
			if !strings.Contains(out, w+"\n") && !strings.Contains(out, w+"\t") {
				t.Errorf("completing %q: %q lacks %q", args, out, w)
			}
		}
	}
}

// TestFlagSpelling: flags are GNU style and may follow the arguments;
// the single-dash long flags earlier releases took still work, with a
// warning naming the two-dash form; a mistyped flag gets a message saying
// what to type, never a misread value.
func TestFlagSpelling(t *testing.T) {
	mixed, err := os.ReadFile("testdata/mixed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		stdin      []byte
		args       []string
		wantCode   int
		wantStdout string // substring
		wantStderr string // exact, unless contains is set
		contains   bool
	}{
		"policy test DIR -v, as its usage line shows": {
			args: []string{"policy", "test", "testdata/regotests/pass", "-v"}, wantCode: 0,
			wantStdout: "data.pipeguard.admission.smbonly_test.test_",
		},
		"--verbose before the argument": {
			args: []string{"policy", "test", "--verbose", "testdata/regotests/pass"}, wantCode: 0,
			wantStdout: "data.pipeguard.admission.smbonly_test.test_",
		},
		"single-dash long flag with a value": {
			args: []string{"policy", "eval", "-f", "testdata/mixed.yaml", "-namespace", "team-b"}, wantCode: 1,
			wantStdout: "DENY Pod team-b/sneaky",
			wantStderr: "pipeguard policy eval: warning: -namespace is read as --namespace; long flags take two dashes\n",
		},
		"single-dash long flag with =": {
			args: []string{"policy", "eval", "-filename=testdata/csi-node.yaml", "-output=json"}, wantCode: 1,
			wantStdout: `"decision": "deny"`,
			wantStderr: "pipeguard policy eval: warning: -filename=testdata/csi-node.yaml is read as --filename=testdata/csi-node.yaml; long flags take two dashes\n" +
				"pipeguard policy eval: warning: -output=json is read as --output=json; long flags take two dashes\n",
		},
		// pflag alone would read -filename as -f ilename.
		"-filename is never -f ilename": {
			args: []string{"policy", "eval", "-filename", "testdata/csi-node.yaml"}, wantCode: 1,
			wantStdout: "DENY DaemonSet csi-smb/csi-smb-node-win",
			wantStderr: "is read as --filename", contains: true,
		},
		"a value that starts with a dash is left alone": {
			stdin: mixed, args: []string{"policy", "eval", "-f", "-", "--namespace", "-namespace"}, wantCode: 1,
			wantStdout: "DENY Pod -namespace/sneaky\n",
		},
		"unknown single-dash long flag": {
			args: []string{"policy", "eval", "-f", "testdata/mixed.yaml", "-polcy", "x"}, wantCode: 2,
			wantStderr: "pipeguard policy eval: unknown flag -polcy: long flags take two dashes, and pipeguard policy eval has no flag --polcy\nSee 'pipeguard policy eval --help' for usage.\n",
		},
		"unknown flag": {
			args: []string{"audit", "verify", "--frob"}, wantCode: 2,
			wantStderr: "pipeguard audit verify: unknown flag: --frob\nSee 'pipeguard audit verify --help' for usage.\n",
		},
		"unknown command": {
			args: []string{"polcy", "eval"}, wantCode: 2,
			wantStderr: "pipeguard: unknown command \"polcy\"; did you mean \"policy\"?\nSee 'pipeguard --help' for usage.\n",
		},
		"a manifest without -f": {
			args: []string{"policy", "eval", "pod.yaml"}, wantCode: 2,
			wantStderr: "pipeguard policy eval: unexpected argument \"pod.yaml\": give the manifests with -f FILE (or -f - for stdin)\nSee 'pipeguard policy eval --help' for usage.\n",
		},
		"two audit logs": {
			args: []string{"audit", "query", "a.log", "b.log"}, wantCode: 2,
			wantStderr: "pipeguard audit query: accepts at most 1 arg(s), received 2\nSee 'pipeguard audit query --help' for usage.\n",
		},
		"--kubeconfig without --cluster": {
			args: []string{"policy", "eval", "-f", "testdata/mixed.yaml", "--kubeconfig", "k"}, wantCode: 2,
			wantStderr: "pipeguard policy eval: --kubeconfig is for --cluster\nSee 'pipeguard policy eval --help' for usage.\n",
		},
		"--cluster with -f": {
			args: []string{"policy", "eval", "--cluster", "-f", "testdata/mixed.yaml"}, wantCode: 2,
			wantStderr: "--cluster reads the objects, namespace labels and policies from the cluster", contains: true,
		},
		"-o text is -o table": {
			args: []string{"policy", "eval", "-f", "testdata/csi-node.yaml", "-o", "text"}, wantCode: 1,
			wantStdout: "DENY DaemonSet csi-smb/csi-smb-node-win\n",
		},
		"bad -o": {
			args: []string{"policy", "eval", "-f", "testdata/csi-node.yaml", "-o", "wide"}, wantCode: 2,
			wantStderr: "pipeguard policy eval: --output \"wide\": want table, json, yaml or input\nSee 'pipeguard policy eval --help' for usage.\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runCLI(t, string(tc.stdin), tc.args...)
			if code != tc.wantCode {
				t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, out, errOut)
			}
			if !strings.Contains(out, tc.wantStdout) {
				t.Errorf("stdout:\n%s\nwant it to contain %q", out, tc.wantStdout)
			}
			if tc.contains && !strings.Contains(errOut, tc.wantStderr) || !tc.contains && errOut != tc.wantStderr {
				t.Errorf("stderr:\n%s\nwant:\n%s", errOut, tc.wantStderr)
			}
		})
	}
}
