package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"k8s.io/client-go/rest"

	"github.com/pipeguard/pipeguard/agent/confine"
	diskgroup "github.com/pipeguard/pipeguard/agent/groups/disk"
	fsgroup "github.com/pipeguard/pipeguard/agent/groups/filesystem"
	"github.com/pipeguard/pipeguard/agent/groups/inflight"
	iscsigroup "github.com/pipeguard/pipeguard/agent/groups/iscsi"
	smbgroup "github.com/pipeguard/pipeguard/agent/groups/smb"
	sysgroup "github.com/pipeguard/pipeguard/agent/groups/system"
	volgroup "github.com/pipeguard/pipeguard/agent/groups/volume"
	"github.com/pipeguard/pipeguard/agent/guard"
	hostdisk "github.com/pipeguard/pipeguard/agent/hostops/disk"
	hostfs "github.com/pipeguard/pipeguard/agent/hostops/filesystem"
	hostiscsi "github.com/pipeguard/pipeguard/agent/hostops/iscsi"
	hostsmb "github.com/pipeguard/pipeguard/agent/hostops/smb"
	hostsys "github.com/pipeguard/pipeguard/agent/hostops/system"
	hostvol "github.com/pipeguard/pipeguard/agent/hostops/volume"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
	"github.com/pipeguard/pipeguard/agent/identity"
	"github.com/pipeguard/pipeguard/agent/server"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-agent/flagname"
)

// Options configures the agent. The command line maps onto it one to one.
type Options struct {
	// Log is the agent's logger.
	Log logr.Logger
	// KubeletPath is the kubelet's root directory; paths are confined to it
	// and to WorkingDirs.
	KubeletPath string
	// WorkingDirs are further allowed roots.
	WorkingDirs []string
	// SocketDir holds the unix sockets (not Windows).
	SocketDir string
	// PipeSDDL is the security descriptor of the named pipes (Windows);
	// empty means server.DefaultSDDL.
	PipeSDDL string
	// AllowedServices are the Windows services that system StartService and
	// StopService may touch; none by default.
	AllowedServices []string
	// RequirePrivacy makes SMB global mappings require encryption.
	RequirePrivacy bool
	// MetricsBindAddress serves /metrics; empty or "0" disables it.
	MetricsBindAddress string
	// MetricsSecure serves /metrics over HTTPS to callers the API server
	// authenticates (TokenReview) and authorizes for get on the
	// non-resource URL /metrics (SubjectAccessReview); it needs
	// MetricsAuth. Without it /metrics is plain HTTP with no
	// authentication, for local runs.
	MetricsSecure bool
	// MetricsCertDir holds tls.crt and tls.key for MetricsSecure, reloaded
	// when they change; empty means a self-signed certificate made at start.
	MetricsCertDir string
	// MetricsAuth reaches the API server for the reviews of MetricsSecure;
	// the agent's identity there needs create on tokenreviews and
	// subjectaccessreviews.
	MetricsAuth *rest.Config
	// HealthProbeAddr serves the plain HTTP probes /readyz and /healthz
	// (health.go); empty or "0" disables them.
	HealthProbeAddr string
	// httpBounds replaces the bounds of the probe and metrics ports
	// (ports.go), for tests; nil: defaultHTTPBounds.
	httpBounds *httpBounds
	// Registry receives the metrics; nil means a new registry.
	Registry *prometheus.Registry
	// ShutdownTimeout bounds graceful shutdown; 0 means the server default.
	ShutdownTimeout time.Duration
	// Guard, when set, identifies the caller of every connection and gates
	// and audits every request (package guard); its Confiner is the agent's.
	// pipeguard-agent always sets it; without it requests are neither gated
	// nor audited.
	Guard *guard.Options
	// Peer identifies callers when Guard is set; nil means identity.Peer.
	Peer identity.PeerFunc
	// PeerTimeout is the longest Peer takes for one connection (the CRI
	// lookups of its caller); a connection's handshake may take it on top
	// of server.HandshakeTimeout.
	PeerTimeout time.Duration
	// UnaryInterceptors and StreamInterceptors are inserted in every
	// endpoint's chain between the guard and the handler.
	UnaryInterceptors  []grpc.UnaryServerInterceptor
	StreamInterceptors []grpc.StreamServerInterceptor

	// GOOS selects the path flavour and whether the Windows-only groups run;
	// empty means runtime.GOOS.
	GOOS string
	// Filesystem replaces the host filesystem operations; nil means the real ones.
	Filesystem hostfs.API
	// WMI replaces the host's WMI service, through which the Windows
	// groups format, partition, rescan, map SMB shares and do iSCSI; nil
	// means the host's (wmi.New) on Windows, and a Conn that refuses every
	// call elsewhere.
	WMI wmi.Conn
	// Win32 replaces the Win32 calls of the disk, volume and smb groups;
	// nil means the host's (win32.New).
	Win32 win32.Sys
	// System replaces the system group's host operations; nil means
	// hostsys.Native, which calls the service control manager.
	System hostsys.API
	// HostCallTimeouts is the deadline of each host call of a Windows
	// group, by group ("disk", "volume", "smb", "iscsi", "system"); a group
	// not in it has its default (DefaultLimits).
	HostCallTimeouts map[string]time.Duration
	// FormatConcurrency is how many FormatVolume and ResizeVolume host
	// calls run at once; 0 means DefaultFormatConcurrency.
	FormatConcurrency int
}

// Agent is an assembled node agent.
type Agent struct {
	opts     Options
	server   *server.Server
	registry *prometheus.Registry
	metrics  *metricsEndpoint // nil: not served
	health   *health
	probes   *healthEndpoint // nil: not served
	conn     wmi.Conn        // closed when Serve ends, if it has a Close
}

// New assembles the agent: confinement, host operations, API servers,
// metrics and the gRPC server. Nothing listens until Listen or Run.
func New(o Options) (*Agent, error) {
	if o.GOOS == "" {
		o.GOOS = runtime.GOOS
	}
	if o.KubeletPath == "" {
		return nil, errors.New("no kubelet path: set --kubelet-path")
	}
	if err := server.ValidateSDDL(o.PipeSDDL); err != nil {
		return nil, err
	}
	if err := validateMetrics(o); err != nil {
		return nil, err
	}
	flavour := confine.Linux
	var resolver confine.Resolver = confine.OSResolver{}
	if o.GOOS == "windows" {
		// On Windows the kubelet dir legitimately links to volumes and SMB
		// shares, so confinement there is lexical (see docs/agent.md).
		flavour, resolver = confine.Windows, nil
	}
	conf, err := confine.New(confine.Options{
		Flavour:  flavour,
		Roots:    append([]string{o.KubeletPath}, o.WorkingDirs...),
		Resolver: resolver,
	})
	if err != nil {
		return nil, fmt.Errorf("kubelet path and working dirs: %w", err)
	}

	reg := o.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	o.Registry = reg
	held, err := inflight.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	conn, err := hostConn(o)
	if err != nil {
		return nil, err
	}
	eps, err := buildEndpoints(o, conn, conf, held)
	if err != nil {
		return nil, err
	}

	m, err := server.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	so := server.Options{
		Log:                o.Log,
		Listen:             server.ListenOptions{SocketDir: o.SocketDir, SDDL: o.PipeSDDL},
		Endpoints:          eps,
		Metrics:            m,
		UnaryInterceptors:  o.UnaryInterceptors,
		StreamInterceptors: o.StreamInterceptors,
		ShutdownTimeout:    o.ShutdownTimeout,
	}
	if o.Guard != nil {
		gopts := *o.Guard
		gopts.Confiner = conf
		if gopts.Registerer == nil {
			gopts.Registerer = reg
		}
		if gopts.Namer == nil {
			gopts.Namer = flagname.Of
		}
		g, err := guard.New(gopts)
		if err != nil {
			return nil, err
		}
		so.Credentials = identity.NewCredentials(o.Log, identity.WithNamer(o.Peer, flagname.Of))
		so.HandshakeTimeout = server.HandshakeTimeout + o.PeerTimeout
		so.UnaryInterceptors = append([]grpc.UnaryServerInterceptor{g.Unary}, o.UnaryInterceptors...)
		so.StreamInterceptors = append([]grpc.StreamServerInterceptor{g.Stream}, o.StreamInterceptors...)
	}
	srv, err := server.New(so)
	if err != nil {
		return nil, err
	}
	a := &Agent{opts: o, server: srv, registry: reg, health: newHealth(nil, o.Log.WithName("health")), conn: conn}
	if o.Guard != nil && o.Guard.Audit != nil {
		a.health = newHealth(o.Guard.Audit, o.Log.WithName("health"))
	}
	return a, nil
}

// buildEndpoints assembles every API group with its host operations. The
// Windows-only groups make Win32 calls through o.Win32 (the host's by
// default) and do what has no Win32 call (format, partition, rescan,
// disk state, SMB global mappings, iSCSI) as WMI method calls through
// conn, in the agent's own process; each group's limits bound both.
// Elsewhere they are marked NeedsWindows and answer Unimplemented, and
// conn refuses every call.
// The storage operations of disk, volume, smb and iscsi hold their volume,
// disk, share or target (package inflight), counted in held (nil: not
// counted).
func buildEndpoints(o Options, conn wmi.Conn, conf *confine.Confiner, held *inflight.Metrics) ([]server.Endpoint, error) {
	fsHost := o.Filesystem
	if fsHost == nil {
		fsHost = hostfs.Local{}
	}
	onWindows := o.GOOS == "windows"

	fs, err := fsgroup.New(fsHost, conf)
	if err != nil {
		return nil, err
	}
	win := o.Win32
	if win == nil {
		win = win32.New()
	}
	var reg prometheus.Registerer
	if o.Registry != nil {
		reg = o.Registry
	}
	skips, err := newListingSkips(reg, o.Log.WithName("host"))
	if err != nil {
		return nil, err
	}
	diskLimits := bound(o, "disk")
	heldLog := o.Log.WithName("held")
	diskHost, err := hostdisk.New(hostdisk.Deps{Sys: win, Limits: diskLimits, Cmdlets: hostdisk.WMI{Conn: conn, Limits: diskLimits}, Skipped: skips.reporter("disk")})
	if err != nil {
		return nil, err
	}
	disk, err := diskgroup.New(diskHost)
	if err != nil {
		return nil, err
	}
	volLimits := bound(o, "volume")
	volHost, err := hostvol.New(hostvol.Deps{Sys: win, Limits: volLimits, Cmdlets: hostvol.WMI{Conn: conn, Limits: volLimits}, Skipped: skips.reporter("volume")})
	if err != nil {
		return nil, err
	}
	disk.TrackOperations(held, heldLog).WithVolumes(volHost)
	vol, err := volgroup.New(volHost, conf)
	if err != nil {
		return nil, err
	}
	vol.TrackOperations(held, heldLog)
	smbLimits := bound(o, "smb")
	smbHost, err := hostsmb.New(hostsmb.Deps{Sys: win, Limits: smbLimits, Cmdlets: hostsmb.WMI{Conn: conn, Limits: smbLimits}})
	if err != nil {
		return nil, err
	}
	smb, err := smbgroup.New(smbHost, conf, o.RequirePrivacy)
	if err != nil {
		return nil, err
	}
	smb.WithDeadline(hostCallTimeout(o, "smb"), "--host-call-timeout-smb").TrackOperations(held, heldLog)
	sys, err := sysgroup.New(systemHost(o), o.AllowedServices)
	if err != nil {
		return nil, fmt.Errorf("allowed services: %w", err)
	}
	sys.NameOptions(flagname.Of)
	iscsi, err := iscsigroup.New(hostiscsi.WMI{Conn: conn, Limits: bound(o, "iscsi")})
	if err != nil {
		return nil, err
	}
	iscsi.TrackOperations(held, heldLog)

	eps := fs.Endpoints()
	for _, group := range [][]server.Endpoint{disk.Endpoints(), vol.Endpoints(), smb.Endpoints(), sys.Endpoints(), iscsi.Endpoints()} {
		for _, ep := range group {
			ep.NeedsWindows = !onWindows
			eps = append(eps, ep)
		}
	}
	return eps, nil
}

// Listen opens every pipe or socket, the metrics endpoint and the health
// probe endpoint. Metrics and probes are not essential: if their endpoint
// cannot be opened the error is logged and the API is served without it
// (the kubelet's probes then fail).
func (a *Agent) Listen(ctx context.Context) error {
	if err := a.server.Listen(ctx); err != nil {
		return err
	}
	a.health.listening.Store(true)
	if healthEnabled(a.opts.HealthProbeAddr) {
		p, err := listenHealth(ctx, a.opts.HealthProbeAddr, a.bounds().Probes, a.health, a.opts.Log.WithName("health"))
		if err != nil {
			a.opts.Log.Error(err, "health probes are not served")
		}
		a.probes = p
	}
	if metricsEnabled(a.opts.MetricsBindAddress) {
		m, err := listenMetrics(ctx, a.opts, a.bounds().Metrics, a.registry)
		if err != nil {
			a.opts.Log.Error(err, "metrics are not served")
		}
		a.metrics = m
	}
	return nil
}

// Addresses returns the pipes or sockets listened on.
func (a *Agent) Addresses() []string { return a.server.Addresses() }

// MetricsAddress returns where /metrics is served (host:port), or "" when
// it is not.
func (a *Agent) MetricsAddress() string {
	if a.metrics == nil {
		return ""
	}
	return a.metrics.Addr()
}

// HealthProbeAddress returns where /readyz and /healthz are served
// (host:port), or "" when they are not.
func (a *Agent) HealthProbeAddress() string {
	if a.probes == nil {
		return ""
	}
	return a.probes.Addr()
}

// Serve serves the API, the metrics and the health probes until ctx is
// done, then shuts down gracefully; /readyz answers "shutting down" from
// then on, until the in-flight calls have ended; then the host's WMI
// connection is closed. Metrics and probes are not essential: if they cannot be served the
// error is logged and the API keeps serving.
func (a *Agent) Serve(ctx context.Context) error {
	if c, ok := a.conn.(io.Closer); ok {
		defer func() { _ = c.Close() }()
	}
	if a.probes != nil {
		stop, served := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(served)
			if err := a.probes.serve(stop, a.opts.Log.WithName("health")); err != nil {
				a.opts.Log.Error(err, "health probes are not served")
			}
		}()
		defer func() { close(stop); <-served }()
	}
	stopWatch := context.AfterFunc(ctx, func() { a.health.stopping.Store(true) })
	defer stopWatch()
	defer a.health.stopping.Store(true)
	if a.metrics != nil {
		go func() {
			if err := a.metrics.serve(ctx, a.opts.Log.WithName("metrics")); err != nil {
				a.opts.Log.Error(err, "metrics are not served")
			}
		}()
	}
	return a.server.Serve(ctx)
}
