package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// DefaultMaxInFlight is how many reviews pipeguard-webhook reads and
// decides at once unless told otherwise. A review at the bounds (a body of
// MaxReviewBytes, every host-path bound reached) takes 25 to 40 MiB of heap
// at its peak; 16 at once, 8 of them waiting, peak at 170 to 205 MiB
// (BenchmarkReviewMemory), under half of the Deployment's 512 MiB limit.
const DefaultMaxInFlight = 8

// ServeOptions bound the HTTP side of the reviews one Bound serves.
type ServeOptions struct {
	// MaxInFlight bounds the reviews read and decided at once;
	// DefaultMaxInFlight when 0. A review waits for a slot until its
	// deadline, then gets an internal error.
	MaxInFlight int
}

// Bound serves AdmissionReviews with next (an admission.Webhook) within
// the bounds of limits.go: a review waits for one of MaxInFlight slots,
// its body is read only up to MaxReviewBytes (a larger one is refused
// with 413 before it is decoded), and its context ends at the deadline the
// API server's call names (?timeout=, DefaultReviewTimeout without one,
// at most MaxReviewTimeout), so that nothing is computed after the API
// server gave up. The peer (address and client certificate) goes into the
// context, for the review's log lines.
func Bound(next http.Handler, opts ServeOptions) http.Handler {
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	return &bounded{next: next, slots: make(chan struct{}, opts.MaxInFlight)}
}

type bounded struct {
	next  http.Handler
	slots chan struct{}
}

func (b *bounded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	timeout := reviewTimeout(r)
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	ctx = WithPeer(ctx, peerOf(r))
	var waited time.Duration
	select {
	case b.slots <- struct{}{}:
	default:
		start := time.Now()
		select {
		case b.slots <- struct{}{}:
			waited = time.Since(start)
		case <-ctx.Done():
			// The body is unread, so the request's uid is unknown; the
			// caller has given up by now anyway.
			refuse(ctx, w, "", http.StatusInternalServerError, fmt.Errorf(
				"internal error: too many reviews in flight (%d); this one waited for %s, its deadline, and is rejected; retry, or give pipeguard-webhook more replicas",
				cap(b.slots), timeout))
			return
		}
	}
	defer func() { <-b.slots }()

	body, err := readBounded(r)
	if err != nil {
		var big *tooLargeError
		if errors.As(err, &big) {
			// Do not read the rest: close the connection once answered.
			w.Header().Set("Connection", "close")
			refuse(ctx, w, types.UID(requestUID(big.prefix)), http.StatusRequestEntityTooLarge, err)
			return
		}
		if waited > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			// The server's read timeout counts from the request's
			// start: a review that waited long for a slot has no time
			// left for its body. Waiting costs no memory this way, and
			// a slow body holds a slot no longer than the timeout.
			refuse(ctx, w, "", http.StatusInternalServerError, fmt.Errorf(
				"internal error: too many reviews in flight (%d); this one waited %s for a slot, leaving no time to read it within the server's read timeout, and is rejected; retry, or give pipeguard-webhook more replicas",
				cap(b.slots), waited.Round(time.Millisecond)))
			return
		}
		refuse(ctx, w, "", http.StatusBadRequest, fmt.Errorf("reading the AdmissionReview: %w; send the whole review within the server's read timeout", err))
		return
	}
	r = r.WithContext(ctx)
	r.Body = io.NopCloser(bytes.NewReader(body))
	b.next.ServeHTTP(w, r)
}

// reviewTimeout is the deadline the call names: the API server calls a
// webhook with ?timeout=<its timeoutSeconds>s.
func reviewTimeout(r *http.Request) time.Duration {
	d, err := time.ParseDuration(r.URL.Query().Get("timeout"))
	switch {
	case err != nil || d <= 0:
		return DefaultReviewTimeout
	case d > MaxReviewTimeout:
		return MaxReviewTimeout
	}
	return d
}

func peerOf(r *http.Request) Peer {
	p := Peer{Addr: r.RemoteAddr}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		p.Subject = r.TLS.PeerCertificates[0].Subject.String()
	}
	return p
}

// tooLargeError is a body above MaxReviewBytes; prefix is its start.
type tooLargeError struct {
	prefix []byte
	length int64 // from Content-Length; -1 when unknown
}

func (e *tooLargeError) Error() string {
	size := "more than 3 MiB"
	if e.length > 0 {
		size = fmt.Sprintf("%d bytes", e.length)
	}
	return fmt.Sprintf("the AdmissionReview is %s, above the %d bytes pipeguard reads (the API server's own bound on a request); it was refused before decoding: "+
		"send reviews from the API server only, of objects it accepts", size, MaxReviewBytes)
}

// uidPrefix is how much of a refused body is read to find the request's
// uid: the API server writes request.uid first.
const uidPrefix = 4 << 10

// readBounded reads r's body, at most MaxReviewBytes of it.
func readBounded(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	if r.ContentLength > MaxReviewBytes {
		prefix, _ := io.ReadAll(io.LimitReader(r.Body, uidPrefix))
		return nil, &tooLargeError{prefix: prefix, length: r.ContentLength}
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(r.Body, MaxReviewBytes+1)); err != nil {
		return nil, err
	}
	if buf.Len() > MaxReviewBytes {
		return nil, &tooLargeError{prefix: buf.Bytes()[:uidPrefix], length: -1}
	}
	return buf.Bytes(), nil
}

// refuse answers a review Bound refuses, and logs it with its peer.
func refuse(ctx context.Context, w http.ResponseWriter, uid types.UID, code int32, err error) {
	log := logr.FromContextOrDiscard(ctx).WithValues("uid", value(string(uid)), "code", code)
	if p, ok := PeerFrom(ctx); ok {
		log = log.WithValues("peer", value(p.Addr), "peerCertificate", value(p.Subject))
	}
	log.Info("review refused", "reason", value(err.Error()))
	answer(w, uid, code, err)
}

// answer writes an AdmissionReview whose response is an error: the API
// server shows its message and rejects the request.
func answer(w http.ResponseWriter, uid types.UID, code int32, err error) {
	resp := admission.Errored(code, err)
	resp.UID = uid
	review := admissionv1.AdmissionReview{Response: &resp.AdmissionResponse}
	review.SetGroupVersionKind(admissionv1.SchemeGroupVersion.WithKind("AdmissionReview"))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// requestUID finds request.uid in the start of an AdmissionReview, so that
// the API server can match a refusal to its request; "" when the prefix
// does not hold it.
func requestUID(prefix []byte) string {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return ""
		}
		if k != "request" {
			if !skipValue(dec) {
				return ""
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return ""
		}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return ""
			}
			if k == "uid" {
				t, _ := dec.Token()
				if s, ok := t.(string); ok && len(s) <= 128 {
					return s
				}
				return ""
			}
			if !skipValue(dec) {
				return ""
			}
		}
		return ""
	}
	return ""
}

// skipValue reads past one JSON value.
func skipValue(dec *json.Decoder) bool {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return true
		}
	}
}
