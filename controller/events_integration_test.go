package controller_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/controller"
	"github.com/pipeguard/pipeguard/controller/limits"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// logLines collects what a logger writes, one line per call.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, prefix+" "+args)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func counterValue(t *testing.T, reg *prometheus.Registry, name, reason string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestEventWriter: on a real API server, an Event whose note is longer
// than the API server takes is recorded with the note cut; an Event the
// API server refuses for another reason (its namespace is being deleted)
// is counted in pipeguard_event_failures_total and logged with its object.
func TestEventWriter(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	env := testenv.Start(t, testenv.Options{Scheme: scheme, CRDDirectoryPaths: []string{filepath.Join("..", "config", "crd", "bases")}})
	ctx := context.Background()
	c := env.Client
	one, stuck := mountsPod("one", 1), mountsPod("stuck", 1)
	one.UID, stuck.UID, stuck.Namespace = "", "", "leaving"
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "leaving"}},
		one, stuck,
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	reg := prometheus.NewRegistry()
	metrics, err := controller.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	var log logLines
	w := controller.NewEventWriter(c, "pipeguard-audit", metrics, funcr.New(log.add, funcr.Options{}))

	t.Run("the API server takes notes of limits.EventNote bytes, no longer", func(t *testing.T) {
		for _, n := range []int{limits.EventNote, limits.EventNote + 1} {
			e := &eventsv1.Event{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "limit-", Namespace: "default"},
				EventTime:  metav1.NewMicroTime(time.Now()), ReportingController: "pipeguard-test", ReportingInstance: "pipeguard-test-1",
				Action: "Test", Reason: "Test", Type: corev1.EventTypeNormal, Note: strings.Repeat("x", n),
				Regarding: corev1.ObjectReference{Kind: "Namespace", Name: "default", APIVersion: "v1"},
			}
			err := c.Create(ctx, e)
			if n <= limits.EventNote && err != nil {
				t.Errorf("a note of %d bytes: %v", n, err)
			}
			if n > limits.EventNote && !apierrors.IsInvalid(err) {
				t.Errorf("a note of %d bytes: err = %v, want it refused as invalid", n, err)
			}
		}
	})

	t.Run("a note longer than the API server takes is cut", func(t *testing.T) {
		w.Eventf(one, nil, corev1.EventTypeWarning, controller.ReasonAuditViolation, "Audit", "Pod one: %s", strings.Repeat("é", 600))
		var list eventsv1.EventList
		if err := c.List(ctx, &list, client.InNamespace("team-a")); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 {
			t.Fatalf("%d Events in team-a, want 1; log:\n%s", len(list.Items), &log)
		}
		e := list.Items[0]
		// 1024 bytes hold "Pod one: " (9), 506 runes of two bytes and
		// the mark (3); a 507th rune would end past the limit.
		if want := "Pod one: " + strings.Repeat("é", 506) + "…"; e.Note != want {
			t.Errorf("note of %d bytes:\n got %q\nwant %q", len(e.Note), e.Note, want)
		}
		if e.Type != "Warning" || e.Reason != "PipeAccessViolation" || e.Action != "Audit" || e.ReportingController != "pipeguard-audit" ||
			e.Regarding.Kind != "Pod" || e.Regarding.Name != "one" || e.Regarding.UID != one.UID {
			t.Errorf("Event %+v", e)
		}
	})

	t.Run("an Event the API server refuses is counted and logged with its object", func(t *testing.T) {
		if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "leaving"}}); err != nil {
			t.Fatal(err)
		}
		// No namespace controller runs: the namespace stays Terminating.
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			var ns corev1.Namespace
			err := c.Get(ctx, client.ObjectKey{Name: "leaving"}, &ns)
			return err == nil && ns.Status.Phase == corev1.NamespaceTerminating, err
		}); err != nil {
			t.Fatalf("namespace leaving never turned Terminating: %v", err)
		}
		w.Eventf(stuck, nil, corev1.EventTypeWarning, controller.ReasonAuditViolation, "Audit", "Pod stuck: admission would reject this object")
		if got := counterValue(t, reg, "pipeguard_event_failures_total", "PipeAccessViolation"); got != 1 {
			t.Errorf("pipeguard_event_failures_total{reason=PipeAccessViolation} = %v, want 1", got)
		}
		logged := log.String()
		for _, want := range []string{
			`"msg"="cannot record Event"`,
			`"error"="creating Event leaving/stuck.`,
			`because it is being terminated"`,
			`"kind"="Pod" "object"={"name"="stuck" "namespace"="leaving"} "type"="Warning" "reason"="PipeAccessViolation" "note"="Pod stuck: admission would reject this object"`,
		} {
			if !strings.Contains(logged, want) {
				t.Errorf("the log does not say %s:\n%s", want, logged)
			}
		}
	})
}
