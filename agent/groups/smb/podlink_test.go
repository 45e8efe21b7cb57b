package smb

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/agent/confine"
)

// TestNewSmbGlobalMappingPodLink: the share's link at local_path is placed
// in a pod's directory on the terms of CreateSymlink's links (rule
// pod-link), refused before the share is mapped: at a publish path by
// anyone, in the caller's own pod directory, anywhere by the host, and
// nowhere else in a pod's directory.
func TestNewSmbGlobalMappingPodLink(t *testing.T) {
	const k = `C:\var\lib\kubelet`
	podA := confine.Caller{Kind: confine.CallerInPod, Pod: "aaaa"}
	other := func(path, who string) string {
		return `local_path: path "` + path + `" lies in the directory of pod bbbb (` + k + `\pods\bbbb), and ` + who +
			`; a link may be placed in a pod's directory only by that pod, by a process on the host, or at the pod's CSI publish path ` + k + `\pods\bbbb\volumes\kubernetes.io~csi\<volume>\mount (confinement rule pod-link)`
	}
	cases := map[string]struct {
		caller confine.Caller
		local  string
		want   string
	}{
		"staging path":               {caller: confine.Caller{}, local: stagingLocal},
		"another pod's publish path": {caller: podA, local: k + `\pods\bbbb\volumes\kubernetes.io~csi\pv\mount`},
		"own pod's directory":        {caller: podA, local: k + `\pods\aaaa\volumes\kubernetes.io~empty-dir\x\share`},
		"host, another pod's":        {caller: confine.Caller{Kind: confine.CallerOnHost}, local: k + `\pods\bbbb\share`},
		"another pod's emptyDir": {caller: podA, local: k + `\pods\bbbb\volumes\kubernetes.io~empty-dir\x\share`,
			want: other(k+`\pods\bbbb\volumes\kubernetes.io~empty-dir\x\share`, "the caller runs in pod aaaa")},
		"unattributed, not a publish path": {caller: confine.Caller{}, local: k + `\pods\bbbb\etc-hosts`,
			want: other(k+`\pods\bbbb\etc-hosts`, "the caller could not be attributed to a pod")},
		"the pods directory": {caller: podA, local: k + `\pods`,
			want: `local_path: path "` + k + `\pods" is the pods directory ` + k + `\pods, which holds every pod's directory, and the caller runs in pod aaaa; only a process on the host may place a link there (confinement rule pod-link)`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, log := shareServer(t, shareRoot)
			err := s.NewSmbGlobalMapping(confine.WithCaller(context.Background(), tc.caller), shareRoot+`\pvc-1`, tc.local, `DOM\u`, "p")
			calls := strings.Join(log.list(), "\n")
			if tc.want == "" {
				if err != nil || !strings.Contains(calls, tc.local) {
					t.Fatalf("err %v; host calls:\n%s", err, calls)
				}
				return
			}
			var r *confine.Refusal
			if !errors.As(err, &r) || r.Rule != confine.RulePodLink || err.Error() != tc.want {
				t.Fatalf("err %v\nwant %s", err, tc.want)
			}
			if len(log.list()) != 0 {
				t.Fatalf("a refused mapping ran on the host:\n%s", calls)
			}
		})
	}
}
