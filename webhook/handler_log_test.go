package webhook_test

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
)

// A denial is logged with the request it answers (uid, kind, namespace,
// name, operation, user) and the messages the user reads; a review that
// admits writes nothing, since its logger is never made.
func TestReviewLogs(t *testing.T) {
	h := newHandler(t)
	tests := map[string]struct {
		pod  *corev1.Pod
		want []string
	}{
		"denied": {pod: pod(`\\.\pipe\csi-proxy-disk-v1`), want: []string{
			`"msg"="denied"`, `"uid"="uid-1"`, `"kind"="Pod"`, `"namespace"="team-a"`, `"name"="web"`, `"operation"="CREATE"`,
			`"violations"=["[protected-pipe-mount] container \"app\" mounts \\\\.\\pipe\\csi-proxy-disk-v1 through volume \"pipe\"`,
		}},
		"admitted": {pod: pod(`\\.\pipe\csi-proxy-disk-v1`, inNamespace("csi"))},
		"no host path": {pod: pod(`\\.\pipe\csi-proxy-disk-v1`, func(p *corev1.Pod) {
			p.Spec.Volumes[0].HostPath = nil
			p.Spec.Volumes[0].EmptyDir = &corev1.EmptyDirVolumeSource{}
		})},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var lines []string
			log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
			h.Handle(logr.NewContext(context.Background(), log), podRequest(t, tc.pod))
			if tc.want == nil {
				if len(lines) > 0 {
					t.Fatalf("logged %q, want nothing", lines)
				}
				return
			}
			if len(lines) != 1 {
				t.Fatalf("logged %q, want one line", lines)
			}
			for _, w := range tc.want {
				if !strings.Contains(lines[0], w) {
					t.Errorf("log line %s\nlacks %s", lines[0], w)
				}
			}
		})
	}
}
