package webhook_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/pipeguard/pipeguard/webhook"
)

// reviewBody is the AdmissionReview the API server would send for req.
func reviewBody(t testing.TB, req admission.Request) []byte {
	t.Helper()
	review := admissionv1.AdmissionReview{Request: &req.AdmissionRequest}
	review.SetGroupVersionKind(admissionv1.SchemeGroupVersion.WithKind("AdmissionReview"))
	return mustJSON(t, review)
}

// post sends body to url and returns the response of the AdmissionReview
// that comes back.
func post(t testing.TB, url string, body []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&review); err != nil || review.Response == nil {
		t.Fatalf("answer is no AdmissionReview (%v), HTTP %d", err, resp.StatusCode)
	}
	return review.Response
}

func checkResponse(t *testing.T, r *admissionv1.AdmissionResponse, uid string, code int32, message string) {
	t.Helper()
	if r.Allowed || r.Result == nil || r.Result.Code != code || string(r.UID) != uid || !strings.Contains(r.Result.Message, message) {
		t.Fatalf("response %+v\nwant not allowed, uid %q, code %d, a message with %q", r, uid, code, message)
	}
}

// serveBounded serves h as pipeguard-webhook does, on plain HTTP.
func serveBounded(t *testing.T, h http.Handler, opts webhook.ServeOptions) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(webhook.Bound(h, opts))
	t.Cleanup(srv.Close)
	return srv
}

// TestOversizedReview: a review above MaxReviewBytes is refused with 413
// before it is decoded, naming the request's uid so that the API server
// shows the message; the handler never sees it. A review just within the
// bound is decided.
func TestOversizedReview(t *testing.T) {
	h, e := countingHandler(t)
	srv := serveBounded(t, &admission.Webhook{Handler: h, RecoverPanic: ptr.To(true)}, webhook.ServeOptions{})
	req := podRequest(t, pod(diskPipe))
	base := reviewBody(t, req)
	pad := func(n int) []byte {
		// Pad the object's annotations up to a body of n bytes.
		p := pod(diskPipe)
		p.Annotations = map[string]string{"pad": ""}
		req := podRequest(t, p)
		body := reviewBody(t, req)
		p.Annotations["pad"] = strings.Repeat("x", n-len(body))
		return reviewBody(t, podRequest(t, p))
	}
	at, over := pad(webhook.MaxReviewBytes), pad(webhook.MaxReviewBytes+1)
	if len(at) != webhook.MaxReviewBytes || len(over) != webhook.MaxReviewBytes+1 {
		t.Fatalf("padded bodies of %d and %d bytes", len(at), len(over))
	}
	checkResponse(t, post(t, srv.URL, base), "uid-1", http.StatusForbidden, "[protected-pipe-mount]")
	checkResponse(t, post(t, srv.URL, at), "uid-1", http.StatusForbidden, "[protected-pipe-mount]")
	calls := e.calls.Load()
	checkResponse(t, post(t, srv.URL, over), "uid-1", http.StatusRequestEntityTooLarge,
		"the AdmissionReview is 3145729 bytes, above the 3145728 bytes pipeguard reads (the API server's own bound on a request); it was refused before decoding")

	// Without a Content-Length, the bounded read finds it too.
	r, err := http.Post(srv.URL, "application/json", struct{ *bytes.Reader }{bytes.NewReader(over)})
	if err != nil {
		t.Fatal(err)
	}
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	checkResponse(t, review.Response, "uid-1", http.StatusRequestEntityTooLarge, "the AdmissionReview is more than 3 MiB")
	if got := e.calls.Load(); got != calls {
		t.Errorf("oversized reviews reached rego (%d evaluations)", got-calls)
	}
}

// blocking is a review handler that holds its slot until release is
// closed, and records the deadline of each review's context.
type blocking struct {
	started   chan struct{}
	release   chan struct{}
	mu        sync.Mutex
	deadlines []time.Duration
}

func (b *blocking) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if d, ok := r.Context().Deadline(); ok {
		b.mu.Lock()
		b.deadlines = append(b.deadlines, time.Until(d))
		b.mu.Unlock()
	}
	b.started <- struct{}{}
	select {
	case <-b.release:
	case <-r.Context().Done():
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"uid-1","allowed":false,"status":{"code":403,"message":"held"}}}`))
}

// TestInFlightCap: with every slot taken, a review waits; when its
// deadline (the API server's ?timeout=) passes first it gets a clear
// internal error, and when a slot frees first it is served.
func TestInFlightCap(t *testing.T) {
	b := &blocking{started: make(chan struct{}, 4), release: make(chan struct{})}
	srv := serveBounded(t, b, webhook.ServeOptions{MaxInFlight: 1})
	body := reviewBody(t, podRequest(t, pod(diskPipe)))

	held := make(chan *admissionv1.AdmissionResponse, 1)
	go func() { held <- post(t, srv.URL+"?timeout=30s", body) }()
	<-b.started // the one slot is taken

	start := time.Now()
	r := post(t, srv.URL+"?timeout=300ms", body)
	checkResponse(t, r, "", http.StatusInternalServerError, "internal error: too many reviews in flight (1); this one waited for 300ms, its deadline, and is rejected")
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("the review waited %s, less than its deadline", waited)
	}

	waiting := make(chan *admissionv1.AdmissionResponse, 1)
	go func() { waiting <- post(t, srv.URL+"?timeout=30s", body) }()
	close(b.release)
	checkResponse(t, <-held, "uid-1", http.StatusForbidden, "held")
	<-b.started // the waiting review got the slot
	checkResponse(t, <-waiting, "uid-1", http.StatusForbidden, "held")
}

// TestReviewDeadline: a review's context ends at the timeout the API
// server names in its call, at DefaultReviewTimeout without one, and never
// later than MaxReviewTimeout.
func TestReviewDeadline(t *testing.T) {
	for name, tc := range map[string]struct {
		query string
		want  time.Duration
	}{
		"the API server's timeout":   {"?timeout=5s", 5 * time.Second},
		"none":                       {"", webhook.DefaultReviewTimeout},
		"not a duration":             {"?timeout=soon", webhook.DefaultReviewTimeout},
		"above the API server's max": {"?timeout=1h", webhook.MaxReviewTimeout},
	} {
		t.Run(name, func(t *testing.T) {
			b := &blocking{started: make(chan struct{}, 1), release: make(chan struct{})}
			close(b.release)
			srv := serveBounded(t, b, webhook.ServeOptions{})
			post(t, srv.URL+tc.query, reviewBody(t, podRequest(t, pod(diskPipe))))
			b.mu.Lock()
			defer b.mu.Unlock()
			if len(b.deadlines) != 1 || b.deadlines[0] > tc.want || b.deadlines[0] < tc.want-2*time.Second {
				t.Fatalf("deadlines %v, want one of about %s", b.deadlines, tc.want)
			}
		})
	}
}

// TestReviewLogNamesPeer: the log line of a denial served over the network
// names the peer it came from, whatever user the review claims.
func TestReviewLogNamesPeer(t *testing.T) {
	var lines []string
	log := lineLogger(&lines)
	wh := &admission.Webhook{Handler: newHandler(t),
		LogConstructor: func(logr.Logger, *admission.Request) logr.Logger { return log }}
	srv := serveBounded(t, wh, webhook.ServeOptions{})
	req := podRequest(t, pod(diskPipe))
	req.UserInfo.Username = "system:admin"
	checkResponse(t, post(t, srv.URL, reviewBody(t, req)), "uid-1", http.StatusForbidden, "[protected-pipe-mount]")
	if len(lines) != 1 || !strings.Contains(lines[0], `"user"="system:admin"`) || !strings.Contains(lines[0], `"peer"="127.0.0.1:`) {
		t.Fatalf("logged %q, want one line naming the claimed user and the peer 127.0.0.1", lines)
	}
}

// TestWaitPastTheReadTimeout: the server's read timeout counts from a
// request's start, so waiting for a slot costs no memory and a slow body
// holds a slot no longer than the timeout; a review that waited so long
// that its body can no longer be read is told it waited for a slot.
func TestWaitPastTheReadTimeout(t *testing.T) {
	b := &blocking{started: make(chan struct{}, 4), release: make(chan struct{})}
	const read = 300 * time.Millisecond
	srv := httptest.NewUnstartedServer(webhook.Bound(b, webhook.ServeOptions{MaxInFlight: 1}))
	srv.Config.ReadTimeout = read
	deadlines := make(chan readDeadline, 16)
	srv.Listener = deadlineListener{Listener: srv.Listener, set: deadlines}
	srv.Start()
	t.Cleanup(srv.Close)
	body := reviewBody(t, podRequest(t, pod(diskPipe)))

	held := make(chan *admissionv1.AdmissionResponse, 1)
	go func() { held <- post(t, srv.URL+"?timeout=30s", body) }()
	<-b.started
	// The second review sends half its body and waits for the slot past
	// the read timeout. The rest is held back until its answer came: the
	// server answers without reading it, and a rest written meanwhile would
	// meet a connection the server has closed.
	waiting := make(chan *admissionv1.AdmissionResponse, 1)
	half, rest := io.Pipe()
	go func() {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"?timeout=30s", half)
		if err != nil {
			t.Error(err)
			waiting <- nil
			return
		}
		req.ContentLength = int64(len(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			waiting <- nil
			return
		}
		defer resp.Body.Close()
		var review admissionv1.AdmissionReview
		_ = json.NewDecoder(resp.Body).Decode(&review)
		waiting <- review.Response
	}()
	_, _ = rest.Write(body[:len(body)/2])
	// The server sets a connection's read deadline when it starts reading
	// a request: the held review's first, then the waiting one's.
	next := func() readDeadline {
		select {
		case d := <-deadlines:
			return d
		case <-time.After(10 * time.Second):
			t.Fatal("the server set no read deadline on the waiting review's connection")
			return readDeadline{}
		}
	}
	first := next()
	d := next()
	for d.conn == first.conn {
		d = next()
	}
	// A poll for the condition itself: the waiting review's read deadline,
	// as the server set it, has passed.
	for time.Now().Before(d.at) {
		time.Sleep(time.Until(d.at)) // poll: until the server's deadline, not a guess
	}
	close(b.release)
	checkResponse(t, <-held, "uid-1", http.StatusForbidden, "held")
	r := <-waiting
	_ = rest.Close()
	if r == nil {
		t.Fatal("the review that waited got no answer")
	}
	checkResponse(t, r, "", http.StatusInternalServerError, "internal error: too many reviews in flight (1); this one waited ")
	select {
	case <-b.started:
		t.Error("a review whose body could not be read reached the handler")
	default:
	}
}

// TestRefusalsAreLogged: a review Bound refuses before it is decoded is
// logged with the peer it came from and why.
func TestRefusalsAreLogged(t *testing.T) {
	var lines []string
	log := lineLogger(&lines)
	bounded := webhook.Bound(&admission.Webhook{Handler: newHandler(t)}, webhook.ServeOptions{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bounded.ServeHTTP(w, r.WithContext(logr.NewContext(r.Context(), log)))
	}))
	t.Cleanup(srv.Close)
	p := pod(diskPipe)
	p.Annotations = map[string]string{"pad": strings.Repeat("x", webhook.MaxReviewBytes)}
	checkResponse(t, post(t, srv.URL, reviewBody(t, podRequest(t, p))), "uid-1", http.StatusRequestEntityTooLarge, "refused before decoding")
	if len(lines) != 1 || !strings.Contains(lines[0], `"msg"="review refused"`) || !strings.Contains(lines[0], `"peer"="127.0.0.1:`) ||
		!strings.Contains(lines[0], `"code"=413`) || !strings.Contains(lines[0], `"uid"="uid-1"`) || !strings.Contains(lines[0], "above the 3145728 bytes pipeguard reads") {
		t.Fatalf("logged %q, want one line naming the refusal, its peer, uid and reason", lines)
	}
}

// readDeadline is a read deadline a server set on one of its connections.
type readDeadline struct {
	conn net.Conn
	at   time.Time
}

// deadlineListener reports on set the read deadlines in the future that
// the server sets on its connections.
type deadlineListener struct {
	net.Listener
	set chan<- readDeadline
}

func (l deadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	d := &deadlineConn{Conn: c, set: l.set}
	return d, nil
}

type deadlineConn struct {
	net.Conn
	set chan<- readDeadline
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	if t.After(time.Now()) {
		select {
		case c.set <- readDeadline{conn: c, at: t}:
		default:
		}
	}
	return c.Conn.SetReadDeadline(t)
}
