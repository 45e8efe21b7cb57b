package confine

import "fmt"

// MountMet says where a recursive removal met a mount point.
type MountMet int

const (
	// MountAt: the path itself is a mount point.
	MountAt MountMet = iota
	// MountAbove: the path lies below a mount point inside its root.
	MountAbove
	// MountBelow: the path holds a mount point, found before anything was
	// removed.
	MountBelow
	// MountAppeared: a mount point appeared below the path while it was
	// being emptied, after a first look found none.
	MountAppeared
)

// RefuseMount returns the mount-point refusal of op (a method name), a
// recursive removal of the path of h that met a mount point: met says
// where, and at names it (a host path) unless met is MountAt.
func (h *Handle) RefuseMount(op string, met MountMet, at string) error {
	what, outcome := "is a mount point", "removed nothing"
	switch met {
	case MountAbove:
		what = "lies below a mount point at " + Quote(at)
	case MountBelow:
		what = "holds a mount point at " + Quote(at)
	case MountAppeared:
		what = "holds a mount point at " + Quote(at)
		outcome = "stopped there, as it appeared while " + op + " ran"
	}
	return &Refusal{Rule: RuleMountPoint, Path: h.path, Reason: fmt.Sprintf(
		"%s (a bind mount or another file system, whose files are not the allowed root's to remove); %s does not cross mount points and %s: unmount it first",
		what, op, outcome)}
}
