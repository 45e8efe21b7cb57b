package compare

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path"
	"runtime"
	"slices"
	"strings"

	diskapi "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1"
	fsapi "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	sysapi "github.com/kubernetes-csi/csi-proxy/client/api/system/v1alpha1"
	volapi "github.com/kubernetes-csi/csi-proxy/client/api/volume/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/pipeguard/pipeguard/agent/confine"
	diskgroup "github.com/pipeguard/pipeguard/agent/groups/disk"
	fsgroup "github.com/pipeguard/pipeguard/agent/groups/filesystem"
	sysgroup "github.com/pipeguard/pipeguard/agent/groups/system"
	volgroup "github.com/pipeguard/pipeguard/agent/groups/volume"
	hostdisk "github.com/pipeguard/pipeguard/agent/hostops/disk"
	hostfs "github.com/pipeguard/pipeguard/agent/hostops/filesystem"
	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	hostsys "github.com/pipeguard/pipeguard/agent/hostops/system"
	hostvol "github.com/pipeguard/pipeguard/agent/hostops/volume"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
	"github.com/pipeguard/pipeguard/agent/server"
)

// LocalOptions configure pipeguard's side.
type LocalOptions struct {
	// KubeletPath is the agent's --kubelet-path: paths are confined to it.
	KubeletPath string
	// GOOS selects the path flavour; empty means runtime.GOOS.
	GOOS string
	// Win32 replaces the host's Win32 calls (win32.New).
	Win32 win32.Sys
	// System replaces the system group's host operations (hostsys.Native).
	System hostsys.API
	// Filesystem replaces the filesystem group's (hostfs.Local).
	Filesystem hostfs.API
}

// Local returns pipeguard's side: the agent's disk, volume, filesystem and
// system group servers over the same host operations the agent serves
// with, reached in memory. Nothing listens on the host, no WMI call is
// made (no method compare calls needs one), the system group may
// start or stop no service, and the in-memory server refuses every method
// not in Allowed. The agent's guard and policy are not in the way: this
// side is what the host operations answer.
func Local(o LocalOptions) (Conns, error) {
	if o.GOOS == "" {
		o.GOOS = runtime.GOOS
	}
	if o.KubeletPath == "" {
		return Conns{}, errors.New("no kubelet path")
	}
	flavour := confine.Linux
	var resolver confine.Resolver = confine.OSResolver{}
	if o.GOOS == "windows" {
		flavour, resolver = confine.Windows, nil
	}
	conf, err := confine.New(confine.Options{Flavour: flavour, Roots: []string{o.KubeletPath}, Resolver: resolver})
	if err != nil {
		return Conns{}, fmt.Errorf("kubelet path: %w", err)
	}
	win := o.Win32
	if win == nil {
		win = win32.New()
	}
	// Compare asks only what Win32 answers: its WMI refuses every call.
	none := wmi.Unsupported{GOOS: "compare (it makes no WMI call)"}
	dl, vl := limits.Bound("disk", hostdisk.Limits), limits.Bound("volume", hostvol.Limits)
	diskHost, err := hostdisk.New(hostdisk.Deps{Sys: win, Limits: dl, Cmdlets: hostdisk.WMI{Conn: none, Limits: dl}})
	if err != nil {
		return Conns{}, err
	}
	disk, err := diskgroup.New(diskHost)
	if err != nil {
		return Conns{}, err
	}
	volHost, err := hostvol.New(hostvol.Deps{Sys: win, Limits: vl, Cmdlets: hostvol.WMI{Conn: none, Limits: vl}})
	if err != nil {
		return Conns{}, err
	}
	vol, err := volgroup.New(volHost, conf)
	if err != nil {
		return Conns{}, err
	}
	fsHost := o.Filesystem
	if fsHost == nil {
		fsHost = hostfs.Local{}
	}
	fs, err := fsgroup.New(fsHost, conf)
	if err != nil {
		return Conns{}, err
	}
	sysHost := o.System
	if sysHost == nil {
		never := func(string) bool { return false }
		sysHost = hostsys.Native{Limits: limits.Bound("system", hostsys.Limits), MayStop: never, MayStart: never}
	}
	sys, err := sysgroup.New(readOnlySystem{sysHost}, nil)
	if err != nil {
		return Conns{}, err
	}

	srv := grpc.NewServer(grpc.UnaryInterceptor(allowedOnly), grpc.StreamInterceptor(noStreams))
	var eps []server.Endpoint
	for _, g := range [][]server.Endpoint{disk.Endpoints(), vol.Endpoints(), fs.Endpoints(), sys.Endpoints()} {
		eps = append(eps, g...)
	}
	for _, ep := range eps {
		if Versions[ep.Group] == ep.Version {
			ep.Register(srv)
		}
	}
	lis := bufconn.Listen(1 << 20)
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///pipeguard",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		srv.Stop()
		return Conns{}, err
	}
	return Conns{
		Disk:       diskapi.NewDiskClient(conn),
		Volume:     volapi.NewVolumeClient(conn),
		System:     sysapi.NewSystemClient(conn),
		Filesystem: fsapi.NewFilesystemClient(conn),
		Close: func() {
			_ = conn.Close()
			srv.Stop()
		},
	}, nil
}

// allowedOnly refuses every method not in Allowed.
func allowedOnly(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if !allowedMethod(info.FullMethod) {
		return nil, status.Errorf(codes.PermissionDenied, "compare calls only read-only methods, not %s", info.FullMethod)
	}
	return handler(ctx, req)
}

func noStreams(any, grpc.ServerStream, *grpc.StreamServerInfo, grpc.StreamHandler) error {
	return status.Error(codes.PermissionDenied, "compare makes no streaming calls")
}

// allowedMethod tells whether a full gRPC method name, /v1.Disk/Method, is
// one of Allowed for its group.
func allowedMethod(full string) bool {
	service, method := path.Split(full)
	service = strings.Trim(service, "/")
	version, name, ok := strings.Cut(service, ".")
	if !ok {
		return false
	}
	group := strings.ToLower(name)
	return Versions[group] == version && slices.Contains(Allowed[group], method)
}

// readOnlySystem refuses to start or stop a service.
type readOnlySystem struct{ hostsys.API }

func (readOnlySystem) StartService(context.Context, string) error {
	return errors.New("compare starts no service")
}

func (readOnlySystem) StopService(context.Context, string, bool) error {
	return errors.New("compare stops no service")
}
