package system

import (
	"context"
	"errors"
	"slices"
	"strings"

	sysv1alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/system/v1alpha1"
	"google.golang.org/grpc"

	"github.com/pipeguard/pipeguard/agent/apierr"
	"github.com/pipeguard/pipeguard/agent/confine"
	"github.com/pipeguard/pipeguard/agent/groups/validate"
	hostsys "github.com/pipeguard/pipeguard/agent/hostops/system"
	"github.com/pipeguard/pipeguard/agent/server"
	"github.com/pipeguard/pipeguard/internal/option"
)

// Group is the API group name.
const Group = "system"

// RuleAllowedServices names the rule that refuses services not allowed.
const RuleAllowedServices = hostsys.RuleAllowedServices

// OptionAllowedServices is the key of New's allowed services, which the
// refusals name (see package option).
const OptionAllowedServices = hostsys.OptionAllowedServices

// allowedServicesOption is the allowed services as refusals name them.
var allowedServicesOption = option.Name{Key: OptionAllowedServices, Field: "AllowedServices"}

// Server is the system server.
type Server struct {
	host    hostsys.API
	allowed []string
	namer   option.Namer
}

// New returns a Server that lets StartService and StopService touch only the
// allowed services (compared case-insensitively, as Windows does).
func New(host hostsys.API, allowed []string) (*Server, error) {
	if host == nil {
		return nil, errors.New("system server needs host operations")
	}
	for _, name := range allowed {
		if err := validate.ServiceName("allowed service", name); err != nil {
			return nil, err
		}
	}
	return &Server{host: host, allowed: append([]string(nil), allowed...)}, nil
}

// NameOptions makes the refusals name the allowed services as n names
// them (the agent names its flag); without it they name them by their Go
// name, AllowedServices.
func (s *Server) NameOptions(n option.Namer) *Server {
	s.namer = n
	return s
}

// Endpoints returns the served system API version.
func (s *Server) Endpoints() []server.Endpoint {
	return []server.Endpoint{{Group: Group, Version: "v1alpha1", Register: func(g *grpc.Server) {
		sysv1alpha1.RegisterSystemServer(g, serverV1alpha1{s})
	}}}
}

// Allowed reports whether name is one of the allowed services, compared as
// Windows compares service names (case-insensitively).
func Allowed(allowed []string, name string) bool {
	return slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(a, name) })
}

func (s *Server) checkAllowed(method, name string) error {
	if err := validate.ServiceName("name", name); err != nil {
		return err
	}
	if Allowed(s.allowed, name) {
		return nil
	}
	allowed := "none are allowed"
	if len(s.allowed) > 0 {
		allowed = "allowed: [" + strings.Join(s.allowed, " ") + "]"
	}
	return &apierr.Denied{Rule: RuleAllowedServices, Msg: option.Sprintf(
		"%s of service %s refused: it is not an allowed service (%s); to allow it, start the agent with %s=%s",
		method, confine.Quote(name), allowed, allowedServicesOption, name).Render(s.namer)}
}

// hostError answers a host refusal of a service that is not allowed
// (hostsys.NotAllowedError) as a denial under its rule, with its words.
// Other errors are returned as they are.
func hostError(err error) error {
	var na *hostsys.NotAllowedError
	if !errors.As(err, &na) {
		return err
	}
	d := &apierr.Denied{Rule: na.Rule, Msg: na.Msg}
	if err == error(na) {
		return d
	}
	return &wrappedDenial{msg: err.Error(), denied: d}
}

// wrappedDenial is a denial the host returned inside more context: it reads
// as the whole error and is the denial (errors.As).
type wrappedDenial struct {
	msg    string
	denied *apierr.Denied
}

func (e *wrappedDenial) Error() string { return e.msg }
func (e *wrappedDenial) Unwrap() error { return e.denied }

type serverV1alpha1 struct{ s *Server }

func (a serverV1alpha1) GetBIOSSerialNumber(ctx context.Context, _ *sysv1alpha1.GetBIOSSerialNumberRequest) (*sysv1alpha1.GetBIOSSerialNumberResponse, error) {
	sn, err := a.s.host.BIOSSerialNumber(ctx)
	if err != nil {
		return nil, err
	}
	return &sysv1alpha1.GetBIOSSerialNumberResponse{SerialNumber: sn}, nil
}

func (a serverV1alpha1) StartService(ctx context.Context, r *sysv1alpha1.StartServiceRequest) (*sysv1alpha1.StartServiceResponse, error) {
	if err := a.s.checkAllowed("StartService", r.GetName()); err != nil {
		return nil, err
	}
	if err := a.s.host.StartService(ctx, r.GetName()); err != nil {
		return nil, hostError(err)
	}
	return &sysv1alpha1.StartServiceResponse{}, nil
}

func (a serverV1alpha1) StopService(ctx context.Context, r *sysv1alpha1.StopServiceRequest) (*sysv1alpha1.StopServiceResponse, error) {
	if err := a.s.checkAllowed("StopService", r.GetName()); err != nil {
		return nil, err
	}
	if err := a.s.host.StopService(ctx, r.GetName(), r.GetForce()); err != nil {
		return nil, hostError(err)
	}
	return &sysv1alpha1.StopServiceResponse{}, nil
}

// GetService only reads, so any validly named service may be queried.
func (a serverV1alpha1) GetService(ctx context.Context, r *sysv1alpha1.GetServiceRequest) (*sysv1alpha1.GetServiceResponse, error) {
	if err := validate.ServiceName("name", r.GetName()); err != nil {
		return nil, err
	}
	svc, err := a.s.host.GetService(ctx, r.GetName())
	if err != nil {
		return nil, err
	}
	return &sysv1alpha1.GetServiceResponse{
		DisplayName: svc.DisplayName,
		StartType:   sysv1alpha1.StartType(svc.StartType),
		Status:      sysv1alpha1.ServiceStatus(svc.Status),
	}, nil
}
