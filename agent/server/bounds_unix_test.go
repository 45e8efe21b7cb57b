//go:build !windows

package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// countingFS counts the calls that reach the handler.
type countingFS struct {
	fsv1.UnimplementedFilesystemServer
	calls atomic.Int64
}

func (c *countingFS) PathExists(context.Context, *fsv1.PathExistsRequest) (*fsv1.PathExistsResponse, error) {
	c.calls.Add(1)
	return &fsv1.PathExistsResponse{Exists: true}, nil
}

// serveCounting serves filesystem v1 with a countingFS and returns the
// socket's address.
func serveCounting(t *testing.T, creds credentials.TransportCredentials) (string, *countingFS, *Metrics) {
	t.Helper()
	h := &countingFS{}
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	address := listenAndServe(t, Options{
		Metrics:     m,
		Endpoints:   []Endpoint{{Group: "filesystem", Version: "v1", Register: func(g *grpc.Server) { fsv1.RegisterFilesystemServer(g, h) }}},
		Credentials: creds,
	})[0]
	return address, h, m
}

func dialFS(t *testing.T, address string, opts ...grpc.DialOption) (fsv1.FilesystemClient, *grpc.ClientConn) {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+address, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return fsv1.NewFilesystemClient(conn), conn
}

// rawH2 is an HTTP/2 client that follows none of the server's settings, as
// an attacker's would.
type rawH2 struct {
	conn net.Conn
	fr   *http2.Framer
	// settings the server sent first.
	settings map[http2.SettingID]uint32
}

func dialRaw(t *testing.T, address string) *rawH2 {
	t.Helper()
	c, err := net.Dial("unix", address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	r := &rawH2{conn: c, fr: http2.NewFramer(c, c), settings: map[http2.SettingID]uint32{}}
	r.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := r.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	f, err := r.fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok {
		t.Fatalf("first frame %T, want SETTINGS", f)
	}
	_ = sf.ForeachSetting(func(s http2.Setting) error { r.settings[s.ID] = s.Val; return nil })
	return r
}

// headers sends the request headers of a PathExists call on stream id,
// with extra bytes of user agent, in frames the server accepts. A write
// error (the server closed the connection before the last frame, as it may
// for headers over its bound) is returned.
func (r *rawH2) headers(t *testing.T, id uint32, userAgent int, endStream bool) error {
	t.Helper()
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, hf := range []hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"},
		{Name: ":path", Value: "/v1.Filesystem/PathExists"}, {Name: ":authority", Value: "localhost"},
		{Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"},
		{Name: "user-agent", Value: "grpc-go/1" + strings.Repeat("x", userAgent)},
	} {
		_ = enc.WriteField(hf)
	}
	b := block.Bytes()
	const frame = 16 << 10
	first := b[:min(frame, len(b))]
	if err := r.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndHeaders: len(b) <= frame, EndStream: endStream}); err != nil {
		return err
	}
	for rest := b[len(first):]; len(rest) > 0; {
		n := min(frame, len(rest))
		if err := r.fr.WriteContinuation(id, n == len(rest), rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

// emptyMessage ends stream id with an empty request message.
func (r *rawH2) emptyMessage(t *testing.T, id uint32) {
	t.Helper()
	if err := r.fr.WriteData(id, true, []byte{0, 0, 0, 0, 0}); err != nil && !errors.Is(err, io.ErrClosedPipe) {
		t.Logf("writing the message: %v", err)
	}
}

// answerOf reads frames until stream id is reset or ends, and returns how:
// "reset <code>", "status <grpc-status>", or "closed".
func (r *rawH2) answerOf(id uint32) string {
	for {
		f, err := r.fr.ReadFrame()
		if err != nil {
			return "closed"
		}
		switch f := f.(type) {
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				return "reset " + f.ErrCode.String()
			}
		case *http2.GoAwayFrame:
			return "goaway " + f.ErrCode.String()
		case *http2.MetaHeadersFrame:
			if f.StreamID == id && f.StreamEnded() {
				return "status " + f.PseudoValue("status") + " grpc-status " + headerValue(f, "grpc-status")
			}
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = r.fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			_ = r.fr.WritePing(true, f.Data)
		}
	}
}

func headerValue(f *http2.MetaHeadersFrame, name string) string {
	for _, hf := range f.Fields {
		if hf.Name == name {
			return hf.Value
		}
	}
	return ""
}

// TestBoundsOnTheWire checks that the server announces its bounds to every
// client: a well-behaved client keeps to them by itself.
func TestBoundsOnTheWire(t *testing.T) {
	address, _, _ := serveCounting(t, nil)
	r := dialRaw(t, address)
	if got := r.settings[http2.SettingMaxHeaderListSize]; got != MaxHeaderListBytes {
		t.Errorf("SETTINGS_MAX_HEADER_LIST_SIZE = %d, want %d", got, MaxHeaderListBytes)
	}
	if got := r.settings[http2.SettingMaxConcurrentStreams]; got != MaxStreamsPerConnection {
		t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS = %d, want %d", got, MaxStreamsPerConnection)
	}
}

// TestOversizedHeadersNeverReachTheHandler sends a user agent of 15 MiB's
// worth in pieces, ignoring the announced bound: the call is refused and
// the handler never runs, and the server keeps serving.
func TestOversizedHeadersNeverReachTheHandler(t *testing.T) {
	address, h, _ := serveCounting(t, nil)
	r := dialRaw(t, address)
	got := "closed" // the server may close the connection while the headers are written
	if err := r.headers(t, 1, 4*MaxHeaderListBytes, false); err == nil {
		r.emptyMessage(t, 1)
		got = r.answerOf(1)
	}
	if got != "closed" && !strings.HasPrefix(got, "reset ") && !strings.HasPrefix(got, "goaway ") {
		t.Fatalf("a call with %d bytes of headers was answered %q", 4*MaxHeaderListBytes, got)
	}
	if n := h.calls.Load(); n != 0 {
		t.Fatalf("the handler ran %d times for calls over the header bound", n)
	}

	// A grpc-go client refuses to send them at all, and says why.
	c, _ := dialFS(t, address, grpc.WithUserAgent(strings.Repeat("u", 2*MaxHeaderListBytes)))
	_, err := c.PathExists(context.Background(), &fsv1.PathExistsRequest{Path: "/x"})
	if err == nil || !strings.Contains(err.Error(), "header list size") {
		t.Fatalf("oversized user agent: err = %v, want the header list size named", err)
	}
	ok, _ := dialFS(t, address)
	if _, err := ok.PathExists(context.Background(), &fsv1.PathExistsRequest{Path: "/x"}); err != nil {
		t.Fatalf("a normal call after the oversized ones: %v", err)
	}
	if n := h.calls.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want 1 (the normal call)", n)
	}
}

// TestStreamsBeyondTheBoundAreRefused opens more streams on one connection
// than announced, each stopping after its headers: the excess are refused
// and the connection's in-flight calls stay bounded.
func TestStreamsBeyondTheBoundAreRefused(t *testing.T) {
	address, _, _ := serveCounting(t, nil)
	r := dialRaw(t, address)
	const extra = 4
	for i := range MaxStreamsPerConnection + extra {
		if err := r.headers(t, uint32(2*i+1), 0, false); err != nil {
			t.Fatal(err)
		}
	}
	refused := 0
	for {
		_ = r.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		f, err := r.fr.ReadFrame()
		if err != nil {
			break
		}
		if rst, ok := f.(*http2.RSTStreamFrame); ok && rst.ErrCode == http2.ErrCodeRefusedStream {
			if refused++; refused == extra {
				break
			}
		}
	}
	if refused != extra {
		t.Fatalf("%d streams over the bound of %d were refused, want %d", refused, MaxStreamsPerConnection, extra)
	}
}

// TestOversizedRequestIsRefused sends a request message over the bound: it
// is refused before it is decoded, and says what was exceeded.
func TestOversizedRequestIsRefused(t *testing.T) {
	address, h, _ := serveCounting(t, nil)
	c, _ := dialFS(t, address, grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(4*MaxRequestBytes)))
	_, err := c.PathExists(context.Background(), &fsv1.PathExistsRequest{Path: "/" + strings.Repeat("p", MaxRequestBytes)})
	s := status.Convert(err)
	if s.Code() != codes.ResourceExhausted || !strings.Contains(s.Message(), fmt.Sprint(MaxRequestBytes)) {
		t.Fatalf("oversized request: %v %q, want ResourceExhausted naming %d", s.Code(), s.Message(), MaxRequestBytes)
	}
	if n := h.calls.Load(); n != 0 {
		t.Fatalf("the handler ran %d times for an oversized request", n)
	}
}

// TestSilentConnectionIsClosed connects and sends nothing: the server closes
// the connection after HandshakeTimeout, so idle sockets cannot pile up.
func TestSilentConnectionIsClosed(t *testing.T) {
	address, _, _ := serveCounting(t, nil)
	c, err := net.Dial("unix", address)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(HandshakeTimeout + 30*time.Second))
	_, err = io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("a connection that sent nothing was still open %v after it was accepted", HandshakeTimeout+30*time.Second)
	}
}

// TestEndpointConnectionPlaces fills every place of an endpoint: the next
// connection's call waits (it is not refused, and costs the agent nothing),
// and is served as soon as one connection closes.
func TestEndpointConnectionPlaces(t *testing.T) {
	address, h, _ := serveCounting(t, nil)
	conns := make([]*grpc.ClientConn, 0, MaxConnectionsPerEndpoint)
	for range MaxConnectionsPerEndpoint {
		c, conn := dialFS(t, address)
		if _, err := c.PathExists(context.Background(), &fsv1.PathExistsRequest{Path: "/x"}); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
	}
	late, _ := dialFS(t, address)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_, err := late.PathExists(ctx, &fsv1.PathExistsRequest{Path: "/x"}, grpc.WaitForReady(true))
	cancel()
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("a connection past %d places: err = %v, want it to wait (DeadlineExceeded)", MaxConnectionsPerEndpoint, err)
	}
	conns[0].Close()
	if _, err := late.PathExists(context.Background(), &fsv1.PathExistsRequest{Path: "/x"}, grpc.WaitForReady(true)); err != nil {
		t.Fatalf("after a place was freed: %v", err)
	}
	if n := h.calls.Load(); n != MaxConnectionsPerEndpoint+1 {
		t.Fatalf("handler ran %d times, want %d", n, MaxConnectionsPerEndpoint+1)
	}
}

// keyedCreds names the caller of each new connection by the key the test
// set last.
type keyedCreds struct {
	credentials.TransportCredentials
	mu  sync.Mutex
	key string
}

type keyedInfo struct {
	credentials.CommonAuthInfo
	key string
}

func (keyedInfo) AuthType() string        { return "keyed" }
func (k keyedInfo) ConnectionKey() string { return k.key }

func (k *keyedCreds) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return c, keyedInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}, key: k.key}, nil
}

func (k *keyedCreds) Clone() credentials.TransportCredentials { return k }

func (k *keyedCreds) set(key string) { k.mu.Lock(); k.key = key; k.mu.Unlock() }

// TestCallerConnectionPlaces: one caller holding its every place cannot
// open another, while a second caller still connects and is served.
func TestCallerConnectionPlaces(t *testing.T) {
	creds := &keyedCreds{TransportCredentials: insecure.NewCredentials()}
	address, h, m := serveCounting(t, creds)
	creds.set("pod hostile")
	for range MaxConnectionsPerCaller {
		c, _ := dialFS(t, address)
		if _, err := c.PathExists(context.Background(), &fsv1.PathExistsRequest{Path: "/x"}); err != nil {
			t.Fatal(err)
		}
	}
	over, _ := dialFS(t, address)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_, err := over.PathExists(ctx, &fsv1.PathExistsRequest{Path: "/x"})
	cancel()
	if code := status.Code(err); code != codes.Unavailable && code != codes.DeadlineExceeded {
		t.Fatalf("caller's connection %d: err = %v, want it closed", MaxConnectionsPerCaller+1, err)
	}
	creds.set("pod driver")
	driver, _ := dialFS(t, address)
	if _, err := driver.PathExists(context.Background(), &fsv1.PathExistsRequest{Path: "/x"}); err != nil {
		t.Fatalf("another caller while the first holds its every place: %v", err)
	}
	if n := h.calls.Load(); n != MaxConnectionsPerCaller+1 {
		t.Fatalf("handler ran %d times, want %d", n, MaxConnectionsPerCaller+1)
	}
	if n := testutil.ToFloat64(m.refused.WithLabelValues("filesystem", "v1")); n < 1 {
		t.Fatalf("pipeguard_agent_connections_refused_total = %v, want the refusals counted", n)
	}
}
