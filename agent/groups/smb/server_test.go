package smb

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/pipeguard/pipeguard/agent/confine"
	hostsmb "github.com/pipeguard/pipeguard/agent/hostops/smb"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

const (
	shareRoot    = `\\srv\share`
	stagingLocal = `C:\var\lib\kubelet\plugins\kubernetes.io\csi\smb.csi.k8s.io\0a1b\globalmount`
)

// hostLog records, in order, the WMI queries and method calls and the
// Win32 calls made.
type hostLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *hostLog) add(call string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, call)
}

func (l *hostLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

// loggedConn is a WMI connection that records each query and method call
// in log before the provider answers it: a call as its class, method and
// in-parameters.
type loggedConn struct {
	wmi.Conn
	log *hostLog
}

func (c loggedConn) Query(ctx context.Context, ns, wql string) ([]wmi.Object, error) {
	c.log.add("query " + wql)
	return c.Conn.Query(ctx, ns, wql)
}

func (c loggedConn) Call(ctx context.Context, ns, path, method string, in ...wmi.Param) (wmi.Object, error) {
	class, _, _ := strings.Cut(path, ".")
	c.log.add(class + "." + method + inParams(in))
	return c.Conn.Call(ctx, ns, path, method, in...)
}

// inParams are a call's in-parameters, by name.
func inParams(in []wmi.Param) string {
	var out []string
	for _, p := range in {
		out = append(out, fmt.Sprintf(" %s=%v", p.Name, p.Value))
	}
	sort.Strings(out)
	return strings.Join(out, "")
}

// shareServer returns an smb Server over a WMI provider where the share
// is mapped, its mapping OK, and a fake host where only the paths in
// reachable exist, and the log of what reached the host: each WMI query
// and method call, each Win32 call with its path.
func shareServer(t *testing.T, reachable ...string) (*Server, *hostLog) {
	t.Helper()
	log := &hostLog{}
	p := wmitest.New()
	wmitest.AddSMB(p).AddMapping(shareRoot, wmitest.SmbStatusOK)
	host := win32test.New()
	for _, p := range reachable {
		host.AddFile(p)
	}
	host.Before = func(c win32test.Call) error {
		log.add(c.Func + " " + c.Path)
		return nil
	}
	conf, err := confine.New(confine.Options{Flavour: confine.Windows, Roots: []string{`C:\var\lib\kubelet`}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(nativeHost(t, hostsmb.Deps{Sys: host, Cmdlets: hostsmb.WMI{Conn: loggedConn{p, log}}}), conf, true)
	if err != nil {
		t.Fatal(err)
	}
	return s, log
}

// madeCalls returns, per method call the provider ran, the method and its
// in-parameters.
func madeCalls(p *wmitest.Provider) []string {
	var out []string
	for _, c := range p.Calls() {
		var in []wmi.Param
		for k, v := range c.In {
			in = append(in, wmi.Param{Name: k, Value: v})
		}
		out = append(out, c.Method+inParams(in))
	}
	return out
}

// A working mapping of the share is reused when the caller's subdirectory
// does not exist (yet): the liveness probe asks the share root, as CSI
// Proxy does, so the shared mapping is neither removed nor re-made with the
// caller's credentials.
func TestNewSmbGlobalMappingProbesTheShareRootBeforeReusingAMapping(t *testing.T) {
	s, log := shareServer(t, shareRoot)
	if err := s.NewSmbGlobalMapping(context.Background(), shareRoot+`\pvc-1\missing`, stagingLocal, `DOM\u`, "p"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`query SELECT * FROM MSFT_SmbGlobalMapping WHERE RemotePath = '\\\\srv\\share'`,
		`GetFileAttributesW \\srv\share`,
		`CreateSymbolicLinkW ` + stagingLocal,
	}
	if got := log.list(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ran\n%q\nwant\n%q", got, want)
	}
}

// A mapping whose share root does not answer is replaced.
func TestNewSmbGlobalMappingReplacesAMappingWhoseShareDoesNotAnswer(t *testing.T) {
	s, log := shareServer(t)
	if err := s.NewSmbGlobalMapping(context.Background(), shareRoot+`\pvc-1`, "", `DOM\u`, "p"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`query SELECT * FROM MSFT_SmbGlobalMapping WHERE RemotePath = '\\\\srv\\share'`,
		`GetFileAttributesW \\srv\share`,
		`query SELECT * FROM MSFT_SmbGlobalMapping WHERE RemotePath = '\\\\srv\\share'`,
		`MSFT_SmbGlobalMapping.Remove Force=true`,
		`MSFT_SmbGlobalMapping.Create Credential=DOM\\u:p RemotePath=\\srv\share RequirePrivacy=true`,
	}
	if got := log.list(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ran\n%q\nwant\n%q", got, want)
	}
}
