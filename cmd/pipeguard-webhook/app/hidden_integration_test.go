package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-webhook/app"
	"github.com/pipeguard/pipeguard/controller"
	"github.com/pipeguard/pipeguard/internal/invisible"
	"github.com/pipeguard/pipeguard/internal/testing/invisibletest"
)

// TestHiddenCharactersNeverReachTheCluster: a pod whose pipe path holds
// every kind of hidden character (line and paragraph separators, blank
// letters, format and control characters), found by the audit, is named in
// the policy's status, an Event and a PolicyReport, by the shipped rule and
// by an admin rule that quotes the path as written, with U+FFFD for each
// of those characters and none of them raw.
func TestHiddenCharactersNeverReachTheCluster(t *testing.T) {
	path := `\\.\pipe\csi-` + invisibletest.All() + `proxy-disk-v1`
	shown := `\\.\pipe\csi-` + strings.Repeat("\uFFFD", len(invisibletest.Samples())) + `proxy-disk-v1`
	quoting := &v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: "quoting"}, Spec: v1alpha1.PipeAccessPolicySpec{
		Pipes: []string{"csi-proxy-*"}, EnforcementAction: v1alpha1.Warn,
		Rego: []v1alpha1.RegoModule{{Name: "quoting.rego", Source: `package pipeguard.admission.quoting

violation contains {"rule": "quote-path", "msg": sprintf("mount of %s", [m.rawPath])} if {
	some m in input.mounts
}
`}}}}
	hidden := pipePod("hidden", "team-a")
	hidden.Spec.Volumes[0].HostPath.Path = path
	e := startReports(t, time.Hour, true, func(c client.Client) {
		mustCreate(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, quoting, hidden)
	}, func(*app.Options) {})

	raw := func(where, s string) {
		t.Helper()
		if strings.ContainsFunc(s, func(r rune) bool { return invisible.Hidden(r) && r != invisible.Replacement }) {
			t.Errorf("%s holds a hidden character raw: %q", where, s)
		}
	}
	shipped := `[ambiguous-pipe-path] container "driver" mounts ` + shown + ` through volume "pipe"`
	admin := `[quote-path] mount of ` + shown

	st := auditStatus(t, e.c, "quoting", "the audit finds the pod", func(s v1alpha1.PipeAccessPolicyStatus) bool { return len(s.Violations) == 2 })
	var msgs []string
	for _, v := range st.Violations {
		raw("status violation", v.Message+v.Container+v.Pipe)
		msgs = append(msgs, v.Message)
	}
	if !strings.HasPrefix(msgs[0], shipped) || msgs[1] != admin {
		t.Errorf("status violations %q\nwant one starting %q and %q", msgs, shipped, admin)
	}

	// The pass at start may come before the policy is in force: wait for
	// the Event of the pass after it, and check every Event.
	var notes []string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var list corev1.EventList
		if err := e.c.List(ctx, &list, client.InNamespace("team-a"), client.MatchingFields{"involvedObject.name": "hidden", "reason": controller.ReasonAuditViolation}); err != nil {
			return false, err
		}
		notes = notes[:0]
		found := false
		for _, ev := range list.Items {
			notes = append(notes, ev.Message)
			found = found || strings.Contains(ev.Message, shipped) && strings.Contains(ev.Message, admin)
		}
		return found, nil
	})
	if err != nil {
		t.Errorf("no Event holds %q and %q: %v; the Events say %q", shipped, admin, err, notes)
	}
	for _, n := range notes {
		raw("Event note", n)
	}

	reports := pollReports(t, e.c, "the pod is reported", func(m map[string][]storedReport) bool {
		r := onlyReport(m, "team-a")
		return r != nil && len(r.Results) == 2
	})
	var results []string
	for _, res := range onlyReport(reports, "team-a").Results {
		raw("PolicyReport result", res.Message)
		for k, v := range res.Properties {
			raw("PolicyReport property "+k, v)
		}
		results = append(results, res.Message)
	}
	if !strings.Contains(strings.Join(results, "\n"), strings.TrimPrefix(shipped, "[ambiguous-pipe-path] ")) ||
		!strings.Contains(strings.Join(results, "\n"), strings.TrimPrefix(admin, "[quote-path] ")) {
		t.Errorf("PolicyReport results %q\nwant them to hold %q and %q", results, shipped, admin)
	}
}
