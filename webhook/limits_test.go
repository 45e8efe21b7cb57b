package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// countingEngine counts the evaluations it passes on.
type countingEngine struct {
	webhook.Evaluator
	calls atomic.Int64
}

func (e *countingEngine) Evaluate(ctx context.Context, in *policy.Input) (*policy.Decision, error) {
	e.calls.Add(1)
	return e.Evaluator.Evaluate(ctx, in)
}

func countingHandler(t *testing.T) (*webhook.Handler, *countingEngine) {
	t.Helper()
	e, err := policy.NewEngine(context.Background(), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &countingEngine{Evaluator: e}
	return webhook.NewHandler(webhook.Options{Engine: c, Namespaces: testNamespaces}), c
}

// TestHostPathBounds: an object above MaxHostPathVolumes or
// MaxHostPathMounts is denied, saying what it has, the bound and what to
// do, and rego never runs; one at the bounds is decided by the rules as
// any other (here denied for its pipe mounts, or allowed in a namespace
// with the allowance).
func TestHostPathBounds(t *testing.T) {
	volumes, mounts := webhook.MaxHostPathVolumes, webhook.MaxHostPathMounts
	for name, tc := range map[string]struct {
		pod       *corev1.Pod
		want      want
		evaluated bool
	}{
		"volumes at the bound: decided by the rules": {
			pod: manyMountsPod(volumes, volumes), evaluated: true,
			want: denied(`[protected-pipe-mount] container "c-0000" mounts \\.\pipe\csi-proxy-disk-v0 through volume "pipe-0000", \\.\pipe\csi-proxy-disk-v1 through volume "pipe-0001"`),
		},
		"volumes and mounts at the bounds, in an allowed namespace: allowed": {
			pod: manyMountsPod(volumes, mounts, inNamespace("csi")), evaluated: true, want: allowed,
		},
		"one volume over the bound": {
			pod: manyMountsPod(volumes+1, 1),
			want: denied(fmt.Sprintf(`[too-many-host-paths] Pod "many" has %d hostPath volumes, more than the %d pipeguard reviews; an object with more is denied without review, since no real workload needs that many; mount one hostPath volume in several containers, or split the workload`,
				volumes+1, volumes)),
		},
		"one mount over the bound": {
			pod: manyMountsPod(volumes, mounts+1),
			want: denied(fmt.Sprintf(`[too-many-host-paths] Pod "many" has %d volumeMounts of hostPath volumes over its containers, more than the %d pipeguard reviews; an object with more is denied without review, since no real workload needs that many; mount fewer host paths per container, or split the workload`,
				mounts+1, mounts)),
		},
		"one mount over the bound, in an allowed namespace: still denied": {
			pod:  manyMountsPod(volumes, mounts+1, inNamespace("csi")),
			want: denied(`[too-many-host-paths] Pod "many" has 1025 volumeMounts`),
		},
	} {
		t.Run(name, func(t *testing.T) {
			h, e := countingHandler(t)
			check(t, h.Handle(context.Background(), podRequest(t, tc.pod)), tc.want)
			if got := e.calls.Load() > 0; got != tc.evaluated {
				t.Errorf("rego evaluated: %v, want %v", got, tc.evaluated)
			}
		})
	}
}

// TestHostPathBoundsOnWorkloads: the bound holds for a workload's pod
// template as for a pod, and for the old object of a pod's UPDATE.
func TestHostPathBoundsOnWorkloads(t *testing.T) {
	h, _ := countingHandler(t)
	big := manyMountsPod(webhook.MaxHostPathVolumes+1, 1)
	ds := azurediskNode()
	ds.Spec.Template.Spec = big.Spec
	check(t, h.Handle(context.Background(), request(t, admissionv1.Create, daemonSetKind, "team-a", ds.Name, ds)),
		denied(`[too-many-host-paths] DaemonSet "csi-azuredisk-node-win" has 257 hostPath volumes`))

	update := podRequest(t, big)
	update.Operation = admissionv1.Update
	update.OldObject.Raw = mustJSON(t, big)
	check(t, h.Handle(context.Background(), update), denied(`[too-many-host-paths] Pod "many" has 257 hostPath volumes`))
}

// TestEndedReviewStops: a review whose context has ended (the API server
// gave up) stops before rego runs and answers with an internal error,
// never an allow.
func TestEndedReviewStops(t *testing.T) {
	h, e := countingHandler(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	resp := h.Handle(ctx, podRequest(t, manyMountsPod(webhook.MaxHostPathVolumes, webhook.MaxHostPathMounts)))
	check(t, resp, want{code: http.StatusInternalServerError, message: `internal error: the review of Pod "many" ended before a decision (context canceled); the request is rejected`})
	if n := e.calls.Load(); n != 0 {
		t.Errorf("rego evaluated %d times after the review's context ended", n)
	}
}

// TestDenialLogIsBounded: a denial whose messages are longer than
// MaxLoggedDenialBytes is logged cut, with how many bytes were left out,
// while the response carries every message.
func TestDenialLogIsBounded(t *testing.T) {
	h := newHandler(t)
	p := manyMountsPod(webhook.MaxHostPathVolumes, webhook.MaxHostPathMounts)
	var lines []string
	ctx := logContext(&lines)
	resp := h.Handle(ctx, podRequest(t, p))
	check(t, resp, denied(`[protected-pipe-mount] container "c-0003" mounts`))
	if len(lines) != 1 {
		t.Fatalf("logged %d lines, want one", len(lines))
	}
	line := lines[0]
	if len(line) > webhook.MaxLoggedDenialBytes+2048 {
		t.Errorf("log line of %d bytes, want about %d at most", len(line), webhook.MaxLoggedDenialBytes)
	}
	if !strings.Contains(line, `"bytesNotLogged"=`) || !strings.Contains(line, "…") {
		t.Errorf("log line %.300s…\nsays neither that it was cut nor how much", line)
	}
	if n := len(resp.Result.Message); n < 10*webhook.MaxLoggedDenialBytes {
		t.Errorf("response message of %d bytes: the response must carry every message", n)
	}
	if !strings.Contains(resp.Result.Message, `\\.\pipe\csi-proxy-disk-v255 through volume "pipe-0255"`) {
		t.Errorf("response message lacks the last volume")
	}
}

// TestLoggedValuesAreBounded: a review that did not come from the API
// server may carry names of any length; each logged value is cut.
func TestLoggedValuesAreBounded(t *testing.T) {
	h := newHandler(t)
	p := pod(diskPipe)
	p.Name = strings.Repeat("n", 100_000)
	req := podRequest(t, p)
	req.UserInfo.Username = strings.Repeat("u", 100_000)
	var lines []string
	check(t, h.Handle(logContext(&lines), req), denied(`[protected-pipe-mount] container "app" mounts`))
	if len(lines) != 1 || len(lines[0]) > webhook.MaxLoggedDenialBytes+4*webhook.MaxLoggedValueBytes {
		t.Fatalf("logged %d lines, the first of %d bytes; want one line within the bounds", len(lines), len(lines[0]))
	}
	if !strings.Contains(lines[0], "… (99011 bytes not logged)") {
		t.Errorf("log line %s\ndoes not say how much of the name and user it left out", lines[0])
	}
}

// logContext is a context whose logger appends each line to lines.
func logContext(lines *[]string) context.Context {
	return logr.NewContext(context.Background(), lineLogger(lines))
}

// lineLogger appends each line it logs to lines, safe for concurrent use.
func lineLogger(lines *[]string) logr.Logger {
	var mu sync.Mutex
	return funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		*lines = append(*lines, args)
	}, funcr.Options{})
}

// TestHostPathBytesBound: the host paths an object mounts, summed over
// its mounts, are bounded by MaxHostPathBytes: one byte over is denied
// with the numbers and what to do, at the bound the rules decide. A
// PersistentVolume's one path has the same bound.
func TestHostPathBytesBound(t *testing.T) {
	withPath := func(n int) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			// Two mounts of one volume: its path counts twice.
			hp := p.Spec.Volumes[0].HostPath
			hp.Path += `\` + strings.Repeat("x", n/2-len(hp.Path)-1)
		}
	}
	h, _ := countingHandler(t)
	at := manyMountsPod(1, 2, withPath(webhook.MaxHostPathBytes))
	check(t, h.Handle(context.Background(), podRequest(t, at)), denied(`[protected-pipe-mount] container "c-0000" mounts`))
	over := manyMountsPod(1, 2, withPath(webhook.MaxHostPathBytes+2))
	check(t, h.Handle(context.Background(), podRequest(t, over)), denied(fmt.Sprintf(
		`[too-many-host-paths] Pod "many" has %d bytes of host paths over its mounts of hostPath volumes, more than the %d pipeguard reviews; an object with more is denied without review, since no real workload needs that many; mount shorter host paths, or fewer of them`,
		webhook.MaxHostPathBytes+2, webhook.MaxHostPathBytes)))

	pv := &corev1.PersistentVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
		ObjectMeta: metav1.ObjectMeta{Name: "pv"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
			Local: &corev1.LocalVolumeSource{Path: `\\.\pipe\` + strings.Repeat("x", webhook.MaxHostPathBytes)}}},
	}
	check(t, h.Handle(context.Background(), request(t, admissionv1.Create, metav1.GroupVersionKind{Version: "v1", Kind: "PersistentVolume"}, "", "pv", pv)),
		denied(fmt.Sprintf(`[too-many-host-paths] PersistentVolume "pv" has %d bytes in its local path, more than the %d pipeguard reviews`, webhook.MaxHostPathBytes+9, webhook.MaxHostPathBytes)))
}

// TestForgedReviewsChangeNoDecision: what a review claims (its user, its
// namespace, dry run, an UPDATE with any old object) decides only its own
// answer. Reviews that an allowed namespace's pods would get, sent first
// and remembered by the decision cache, never make the same pod in an
// unlabelled namespace allowed: the cache is keyed on the facts, which
// include what the namespace's labels allow, read from the cluster, not
// from the review.
func TestForgedReviewsChangeNoDecision(t *testing.T) {
	e, err := policy.NewEngine(context.Background(), policy.Options{DecisionCacheSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	h := webhook.NewHandler(webhook.Options{Engine: e, Namespaces: testNamespaces})
	ctx := context.Background()
	forged := []admission.Request{}
	for _, ns := range []string{"csi", "kube-system", "team-a"} {
		r := podRequest(t, pod(diskPipe, inNamespace(ns)))
		r.UserInfo.Username, r.UserInfo.Groups = "system:admin", []string{"system:masters"}
		r.DryRun = ptr.To(true)
		forged = append(forged, r)
		u := podRequest(t, pod(diskPipe, inNamespace(ns)))
		u.Operation = admissionv1.Update
		u.OldObject.Raw = mustJSON(t, pod(diskPipe, inNamespace(ns)))
		forged = append(forged, u)
	}
	for _, r := range forged {
		h.Handle(ctx, r)
	}
	check(t, h.Handle(ctx, podRequest(t, pod(diskPipe))), denied(`[protected-pipe-mount] container "app" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe", but it is not HostProcess and namespace "team-a" is not allowed`))
	check(t, h.Handle(ctx, podRequest(t, pod(diskPipe, inNamespace("csi")))), allowed)
}
