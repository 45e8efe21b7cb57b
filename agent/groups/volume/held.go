package volume

import (
	"context"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/agent/groups/inflight"
)

// The operations that change a volume run one at a time per volume:
// FormatVolume and ResizeVolume rewrite it, and a mount or unmount while
// they run would publish or pull a half-written file system. A host call
// past its deadline may leave the storage provider working (a format goes
// on after its worker is killed), so the volume stays held until the
// operation's settle check says the provider is done: FormatVolume when
// IsVolumeFormatted answers true. ResizeVolume has no reliable
// post-condition (a growth under 100MB is skipped, size 0 means as large
// as possible), and MountVolume and UnmountVolume are Win32 calls whose
// thread may stay blocked in Windows: they hold the volume for
// inflight.SettleTime. Read-only calls never take the volume.

// TrackOperations counts the refusals and releases of the volume group's
// held volumes in m and logs the releases to log.
func (s *Server) TrackOperations(m *inflight.Metrics, log logr.Logger) *Server {
	s.ops = inflight.New(Group, m, log)
	return s
}

// held runs call, op of volumeID, holding the volume: refused while
// another operation of it runs or may still run; check settles it if call
// ends by its deadline (nil: inflight.SettleTime).
func (s *Server) held(ctx context.Context, volumeID, op string, check inflight.Check, call func() error) error {
	return s.ops.Do(ctx, inflight.Volume(volumeID), op, check, call)
}

// formatted is FormatVolume's settle check: the volume has a file system.
func (s *Server) formatted(volumeID string) inflight.Check {
	return func(ctx context.Context) (bool, error) { return s.host.IsVolumeFormatted(ctx, volumeID) }
}
