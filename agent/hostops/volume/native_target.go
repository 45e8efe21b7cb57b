package volume

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
)

// volumeTargetRe is a reparse point's target that is a volume: its volume
// GUID path, with \??\ taken off.
var volumeTargetRe = regexp.MustCompile(`^Volume\{[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\}\\?$`)

// reparseTarget is what a mount point, junction or symbolic link leads to.
type reparseTarget struct {
	// volume is the volume it mounts (\\?\Volume{GUID}\), or "".
	volume string
	// path is the target otherwise, as PowerShell's Get-Item reports it in
	// Target: the substitute name without its \??\ prefix (a target under
	// a volume GUID path keeps \\?\, and \??\UNC\server\share is
	// \\server\share).
	path string
	// relative is a symbolic link whose path is relative to its folder
	// (SYMLINK_FLAG_RELATIVE).
	relative bool
}

// readReparse reads the reparse point at p. ok is false when p is none,
// or one of a tag other than a mount point or symbolic link.
func (n Native) readReparse(ctx context.Context, p string) (t reparseTarget, tag uint32, ok bool, err error) {
	op := win32.DeviceIoControlFunc(win32.FSCTL_GET_REPARSE_POINT)
	data, err := win32.Call(ctx, n.Limits, op, func() ([]byte, error) { return n.Sys.ReadReparsePoint(p) })
	if errors.Is(err, win32.ErrNotReparsePoint) {
		return reparseTarget{}, 0, false, nil
	}
	if err != nil {
		return reparseTarget{}, 0, false, err
	}
	rp, err := win32.ParseReparsePoint(data)
	if err != nil {
		return reparseTarget{}, 0, false, fmt.Errorf("the reparse point at %s is malformed: %w", p, err)
	}
	if rp.Tag != win32.IO_REPARSE_TAG_MOUNT_POINT && rp.Tag != win32.IO_REPARSE_TAG_SYMLINK {
		return reparseTarget{}, rp.Tag, false, nil
	}
	name := rp.SubstituteName
	for _, prefix := range []string{`\??\`, `\\?\`} {
		if len(name) >= len(prefix) && strings.EqualFold(name[:len(prefix)], prefix) {
			name = name[len(prefix):]
			break
		}
	}
	if volumeTargetRe.MatchString(name) {
		return reparseTarget{volume: win32.VolumeRoot(`\\?\` + name)}, rp.Tag, true, nil
	}
	if strings.HasPrefix(name, "Volume{") {
		name = `\\?\` + name
	}
	if rp.SubstituteName != name && len(name) >= 4 && strings.EqualFold(name[:4], `UNC\`) {
		name = `\\` + name[4:] // \??\UNC\server\share is \\server\share
	}
	relative := rp.Tag == win32.IO_REPARSE_TAG_SYMLINK && rp.Flags&win32.SYMLINK_FLAG_RELATIVE != 0
	return reparseTarget{path: name, relative: relative}, rp.Tag, true, nil
}

// GetVolumeIDFromTargetPath returns the volume mounted at targetPath, read
// from its reparse point (FSCTL_GET_REPARSE_POINT). A junction or symbolic
// link to a path is a *LinkError with that path, as Get-Item's Target
// reports it; a path that is no mount point is an error.
func (n Native) GetVolumeIDFromTargetPath(ctx context.Context, targetPath string) (string, error) {
	t, tag, ok, err := n.readReparse(ctx, targetPath)
	switch {
	case err != nil:
		return "", fmt.Errorf("reading the volume mounted at %s: %w", targetPath, err)
	case !ok && tag != 0:
		return "", fmt.Errorf("%s is not a volume mount point: it is a reparse point of tag 0x%08X", targetPath, tag)
	case !ok:
		return "", fmt.Errorf("%s is not a volume mount point", targetPath)
	case t.volume != "":
		return t.volume, nil
	}
	return "", &LinkError{Path: targetPath, Target: t.path}
}

// maxClosestSteps bounds the folders and links GetClosestVolumeIDFromTargetPath
// visits.
const maxClosestSteps = 256

// GetClosestVolumeIDFromTargetPath walks up from targetPath to the first
// folder that is a volume mount point, following junctions and symbolic
// links to paths (a relative link from its folder), and ends at the root:
// a drive root answers its volume (GetVolumeNameForVolumeMountPointW), a
// volume root itself. It gives up after 256 steps (a loop of links).
func (n Native) GetClosestVolumeIDFromTargetPath(ctx context.Context, targetPath string) (string, error) {
	p := targetPath
	if _, _, ok := splitRoot(p); !ok {
		return "", fmt.Errorf("finding the volume of %s: it is not an absolute local path (C:\\... or \\\\?\\Volume{GUID}\\...)", targetPath)
	}
	for range maxClosestSteps {
		t, _, ok, err := n.readReparse(ctx, p)
		if err != nil {
			return "", fmt.Errorf("finding the volume of %s: %w", targetPath, err)
		}
		if ok && t.volume != "" {
			return t.volume, nil
		}
		if ok {
			next, local := resolveTarget(p, t.path, t.relative)
			if !local {
				return "", fmt.Errorf("finding the volume of %s: %s links to %s, which is not a local path", targetPath, p, t.path)
			}
			p = next
			continue
		}
		if isRoot(p) {
			return n.rootVolume(ctx, targetPath, p)
		}
		p, _ = parentDir(p)
	}
	return "", fmt.Errorf("finding the volume of %s: no volume found within %d steps: the links on the way may form a loop", targetPath, maxClosestSteps)
}

// rootVolume returns the volume of a drive or volume root.
func (n Native) rootVolume(ctx context.Context, targetPath, root string) (string, error) {
	root, _, _ = splitRoot(root)
	if win32.IsVolumeName(root) {
		return root, nil
	}
	v, err := win32.Call(ctx, n.Limits, "GetVolumeNameForVolumeMountPointW", func() (string, error) {
		return n.Sys.VolumeNameForMountPoint(root)
	})
	if err != nil {
		return "", fmt.Errorf("finding the volume of %s: %w", targetPath, err)
	}
	if !win32.IsVolumeName(v) {
		return "", fmt.Errorf("finding the volume of %s: GetVolumeNameForVolumeMountPointW answered %q for %s, which is not a volume GUID path", targetPath, v, root)
	}
	return win32.VolumeRoot(v), nil
}
