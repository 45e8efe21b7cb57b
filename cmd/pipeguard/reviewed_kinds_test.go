package main

import (
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/pipeguard/pipeguard/internal/kinds"
)

// TestNotReviewedWords: the skip reason built from the table of reviewed
// kinds reads word for word as users (and docs/cli.md) know it.
func TestNotReviewedWords(t *testing.T) {
	const want = "pipeguard reviews only Pod, PodTemplate, ReplicationController, PersistentVolume, " +
		"apps Deployment, ReplicaSet, StatefulSet and DaemonSet, and batch Job and CronJob objects; " +
		"the pods any other object makes are reviewed when they are created"
	if notReviewed != want {
		t.Errorf("skip reason:\n got %q\nwant %q", notReviewed, want)
	}
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "not reviewed: "+notReviewed+"\n") {
		t.Errorf("docs/cli.md does not show the skip reason as policy eval prints it: %q", notReviewed)
	}
	help := strings.Join(strings.Fields(newPolicyEvalCommand("pipeguard", streams{}).Long), " ")
	if sentence := "pipeguard reviews " + kindSentence(kinds.All()) + " objects;"; !strings.Contains(help, sentence) {
		t.Errorf("policy eval --help does not name the reviewed kinds as the table has them: want %q in\n%s", sentence, help)
	}
	if len(reviewedKinds) != len(kinds.All()) {
		t.Errorf("reviewedKinds has %d kinds, the table %d", len(reviewedKinds), len(kinds.All()))
	}
}

// TestKindSentence: core kinds are named one by one, other groups before
// their kinds, whatever the table holds.
func TestKindSentence(t *testing.T) {
	k := func(group, kind string) kinds.Kind {
		return kinds.Kind{GVK: schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind}}
	}
	tests := map[string]struct {
		in   []kinds.Kind
		want string
	}{
		"none":             {nil, ""},
		"one core kind":    {[]kinds.Kind{k("", "Pod")}, "Pod"},
		"two core kinds":   {[]kinds.Kind{k("", "Pod"), k("", "Node")}, "Pod, and Node"},
		"one group":        {[]kinds.Kind{k("apps", "Deployment")}, "apps Deployment"},
		"a group of two":   {[]kinds.Kind{k("", "Pod"), k("batch", "Job"), k("batch", "CronJob")}, "Pod, and batch Job and CronJob"},
		"groups reordered": {[]kinds.Kind{k("batch", "Job"), k("", "Pod"), k("batch", "CronJob"), k("apps", "DaemonSet")}, "batch Job and CronJob, Pod, and apps DaemonSet"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := kindSentence(tc.in); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestClusterScopedFromTable: a reviewed kind's scope comes from the
// table, other built-in kinds' from clusterScoped.
func TestClusterScopedFromTable(t *testing.T) {
	for gk, want := range map[schema.GroupKind]bool{
		{Kind: "PersistentVolume"}: true, {Kind: "Pod"}: false, {Group: "batch", Kind: "CronJob"}: false,
		{Kind: "Namespace"}: true, {Kind: "ConfigMap"}: false, {Group: "storage.k8s.io", Kind: "CSIDriver"}: true,
	} {
		if got := isClusterScoped(gk); got != want {
			t.Errorf("isClusterScoped(%s) = %v, want %v", gk, got, want)
		}
	}
}
