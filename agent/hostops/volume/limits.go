package volume

import (
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
)

// Limits are the default limits of the volume host calls: their deadline, below
// the kubelet's 2-minute timeout of a CSI operation so that the agent answers
// before the driver gives up, and the group's cap (limits.DefaultConcurrency).
// The agent's settings may give the deadline another value.
var Limits = limits.Limits{Timeout: 90 * time.Second, Concurrency: limits.DefaultConcurrency}

// DefaultFormatConcurrency is how many formats and resizes run at once,
// together.
const DefaultFormatConcurrency = 2

// FormatOps are the operations, as the volume group names them, that share
// the format cap (DefaultFormatConcurrency): MSFT_Volume.Format and
// MSFT_Partition.Resize.
func FormatOps() []string { return []string{OpFormat, OpResize} }
