package controller

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/client-go/tools/reference"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/controller/limits"
)

// eventWriteTimeout bounds the write of one Event, so that an API server
// that does not answer holds an audit pass up for seconds, not forever.
const eventWriteTimeout = 10 * time.Second

// EventWriter records Events with the events.k8s.io/v1 API, one write per
// call and before it returns, so that no Event is lost unnoticed: a note
// is cut to what the API server accepts (limits.EventNote), and an Event
// the API server refuses anyway, or cannot be reached for, is counted in
// pipeguard_event_failures_total and logged with its object. A recorder
// that sends Events in the background, such as the manager's, can only
// log such a failure in its own log.
type EventWriter struct {
	client     client.Client
	controller string
	instance   string
	metrics    *Metrics
	log        logr.Logger
}

var _ events.EventRecorder = (*EventWriter)(nil)

// NewEventWriter returns an EventWriter that writes with c (whose scheme
// knows the objects Events are about) as controller, the Events'
// reportingController, e.g. "pipeguard-audit".
func NewEventWriter(c client.Client, controller string, m *Metrics, log logr.Logger) *EventWriter {
	host, _ := os.Hostname()
	return &EventWriter{client: c, controller: controller, instance: controller + "-" + host, metrics: m, log: log}
}

// Eventf writes an Event about regarding; related may be nil.
func (w *EventWriter) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	msg := fmt.Sprintf(note, args...)
	ctx, cancel := context.WithTimeout(context.Background(), eventWriteTimeout)
	defer cancel()
	if err := w.write(ctx, regarding, related, eventtype, reason, action, msg); err != nil {
		w.metrics.eventFailed(reason)
		var obj klog.ObjectRef
		if m, err := meta.Accessor(regarding); err == nil {
			obj = klog.KObj(m)
		}
		var kind string
		if gvk, err := w.client.GroupVersionKindFor(regarding); err == nil {
			kind = gvk.Kind
		}
		w.log.Error(err, "cannot record Event", "kind", kind, "object", obj, "type", eventtype, "reason", reason, "note", msg)
	}
}

func (w *EventWriter) write(ctx context.Context, regarding, related runtime.Object, eventtype, reason, action, note string) error {
	ref, err := reference.GetReference(w.client.Scheme(), regarding)
	if err != nil {
		return fmt.Errorf("referring to the object: %w", err)
	}
	var rel *corev1.ObjectReference
	if related != nil {
		if rel, err = reference.GetReference(w.client.Scheme(), related); err != nil {
			return fmt.Errorf("referring to the related object: %w", err)
		}
	}
	// Events about cluster-scoped objects live in the default namespace,
	// as client-go's recorders put them.
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	now := time.Now()
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: util.GenerateEventName(ref.Name, now.UnixNano()), Namespace: ns},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: w.controller,
		ReportingInstance:   w.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *ref,
		Related:             rel,
		Note:                limits.Cut(note, limits.EventNote),
		Type:                eventtype,
	}
	if err := w.client.Create(ctx, ev); err != nil {
		return fmt.Errorf("creating Event %s/%s: %w", ns, ev.Name, err)
	}
	return nil
}
