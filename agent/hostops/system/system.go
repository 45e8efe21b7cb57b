package system

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
)

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

// The scripts. They are constants: request values are read from $Env:.
const (
	scriptBIOSSerial = `(Get-CimInstance -ClassName Win32_BIOS).SerialNumber`
	scriptStart      = `Start-Service -Name $Env:servicename`
	scriptStop       = `Stop-Service -Name $Env:servicename`
	scriptStopForce  = `Stop-Service -Name $Env:servicename -Force`
	scriptGetService = `Get-Service -Name $Env:servicename | Select-Object DisplayName, StartType, Status | ConvertTo-Json -Compress`
)

// PowerShell is API on Windows.
type PowerShell struct {
	Runner runner.Runner
}

var _ API = PowerShell{}

// BIOSSerialNumber reads Win32_BIOS.
func (p PowerShell) BIOSSerialNumber(ctx context.Context) (string, error) {
	out, err := runner.Script(ctx, p.Runner, "Get-CimInstance Win32_BIOS", scriptBIOSSerial)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// StartService runs Start-Service.
func (p PowerShell) StartService(ctx context.Context, name string) error {
	_, err := runner.Script(ctx, p.Runner, "Start-Service", scriptStart, runner.Env("servicename", name))
	return err
}

// StopService runs Stop-Service; force also stops the services that depend on it.
func (p PowerShell) StopService(ctx context.Context, name string, force bool) error {
	script := scriptStop
	if force {
		script = scriptStopForce
	}
	_, err := runner.Script(ctx, p.Runner, "Stop-Service", script, runner.Env("servicename", name))
	return err
}

// GetService runs Get-Service.
func (p PowerShell) GetService(ctx context.Context, name string) (Service, error) {
	out, err := runner.Script(ctx, p.Runner, "Get-Service", scriptGetService, runner.Env("servicename", name))
	if err != nil {
		return Service{}, err
	}
	var s Service
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(out))), &s); err != nil {
		return Service{}, fmt.Errorf("parsing Get-Service output %q: %w", out, err)
	}
	return s, nil
}
