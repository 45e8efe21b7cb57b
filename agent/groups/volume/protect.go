package volume

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/pipeguard/pipeguard/agent/apierr"
	"github.com/pipeguard/pipeguard/agent/confine"
)

// RuleProtectedVolume refuses to mount or format a volume the node itself
// stands on: the system volume, or one holding an allowed root or the
// agent.
const RuleProtectedVolume = "protected-volume"

// DefaultSystemRoot is the Windows directory when %SystemRoot% is not set.
const DefaultSystemRoot = `C:\Windows`

// refuseMountAt applies rule pod-link to a new mount point: target is its
// host path, as confined, and path the one the caller sent. A volume
// mount point is a link to the volume, and is placed in a pod's directory
// on the terms of CreateSymlink's links (confine.RefusePodLinkAt).
func (s *Server) refuseMountAt(ctx context.Context, field, path, target string) error {
	return confine.Named(field, s.conf.RefusePodLinkAt(confine.PeerCaller(ctx), path, target))
}

// protectedPaths are the paths whose volumes no caller may mount
// elsewhere: the Windows directory (the system volume), each allowed root
// (the kubelet directory and the working dirs) and, on Windows, the
// agent's own executable.
func (s *Server) protectedPaths() []string {
	sys := os.Getenv("SystemRoot")
	if !filepath.IsAbs(sys) || runtime.GOOS != "windows" {
		sys = DefaultSystemRoot
	}
	out := append([]string{sys}, s.conf.Roots()...)
	if runtime.GOOS == "windows" {
		if exe, err := os.Executable(); err == nil {
			out = append(out, exe)
		}
	}
	return out
}

// protectedOps are the words of the refusals of the operations that
// refuse the node's volumes: what op does, and the past participle.
var protectedOps = map[string][2]string{
	"MountVolume":  {"mounts", "mounted"},
	"FormatVolume": {"formats", "formatted"},
}

// refuseProtectedVolume refuses volumeID for op (a key of protectedOps)
// when it is the volume holding one of protectedPaths, as the host's
// GetClosestVolumeIDFromTargetPath finds it. A volume the host cannot tell
// apart from them is refused too.
func (s *Server) refuseProtectedVolume(ctx context.Context, op, volumeID string) error {
	words, ok := protectedOps[op]
	if !ok {
		return fmt.Errorf("internal error: %s has no protected-volume words; the request was not run", op)
	}
	does, done := words[0], words[1]
	for _, p := range s.protectedPaths() {
		v, err := s.host.GetClosestVolumeIDFromTargetPath(ctx, p)
		if err != nil {
			return &apierr.Denied{Rule: RuleProtectedVolume, Msg: fmt.Sprintf(
				"%s: could not tell whether volume %s is the one holding %s (%v), so it was not %s; retry, or check the volume of %s on the host",
				fieldVolumeID, volumeID, confine.Quote(p), err, done, confine.Quote(p))}
		}
		if sameVolume(v, volumeID) {
			return &apierr.Denied{Rule: RuleProtectedVolume, Msg: fmt.Sprintf(
				"%s: volume %s holds %s, which the node depends on; %s %s only volumes that hold neither the Windows directory, nor the kubelet directory or a working dir, nor the agent: %s a volume of the workload's own disk",
				fieldVolumeID, volumeID, confine.Quote(p), op, does, strings.TrimSuffix(does, "s"))}
		}
	}
	return nil
}

// sameVolume compares volume GUID paths, ignoring case and the trailing
// backslash.
func sameVolume(a, b string) bool {
	return strings.EqualFold(strings.TrimSuffix(a, `\`), strings.TrimSuffix(b, `\`))
}
