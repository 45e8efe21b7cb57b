// Package runnertest holds the test doubles of the host operations: Fake,
// a runner that records commands and answers them with canned output;
// Hostile, values that would change a command line's meaning; and Run,
// which checks operations against a Fake: the result they parse from its
// output, and the exact program, arguments and environment they run.
package runnertest

import (
	"reflect"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
)

// Case is one host operation: what to call, what the runner answers, and
// the constant script and environment that must run.
type Case[API any] struct {
	Call   func(API) (any, error)
	Out    string
	Script string
	Env    []string
	// Want is the parsed result; nil skips the comparison.
	Want any
}

// Run runs every case against newAPI(a fake runner answering Out) and checks
// the result and that exactly one command, runner.PowerShell(Script,
// Env...), ran.
func Run[API any](t *testing.T, cases map[string]Case[API], newAPI func(runner.Runner) API) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &Fake{Respond: func(runner.Command) ([]byte, error) { return []byte(tc.Out), nil }}
			got, err := tc.Call(newAPI(f))
			if err != nil {
				t.Fatal(err)
			}
			if tc.Want != nil && !reflect.DeepEqual(got, tc.Want) {
				t.Errorf("result %#v, want %#v", got, tc.Want)
			}
			want := []runner.Command{runner.PowerShell(tc.Script, tc.Env...)}
			if cmds := f.Commands(); !reflect.DeepEqual(cmds, want) {
				t.Errorf("ran %#v\nwant %#v", cmds, want)
			}
		})
	}
}
