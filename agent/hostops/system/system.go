package system

import "context"

// Service describes a Windows service. StartType and Status use the numbering
// of .NET's ServiceStartMode and ServiceControllerStatus, which is the
// numbering of the CSI Proxy system API enums.
type Service struct {
	DisplayName string
	StartType   uint32
	Status      uint32
}

// API is the system host operations. Service names have been validated and
// checked against the allowed services by the caller.
type API interface {
	BIOSSerialNumber(ctx context.Context) (string, error)
	StartService(ctx context.Context, name string) error
	StopService(ctx context.Context, name string, force bool) error
	GetService(ctx context.Context, name string) (Service, error)
}
