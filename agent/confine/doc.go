// Package confine decides whether a path handed to the agent by a caller may be
// used on the host.
//
// CSI Proxy only checks that a path starts with the kubelet path, as a string
// prefix, so C:\var\lib\kubeletX passes. pipeguard is stricter: a path must be
// absolute, free of "." and ".." segments, of control and reserved characters
// and of alternate prefixes (\\?\, \\.\, \??\, UNC, \Device\, reserved device
// names such as NUL), no longer than a limit, and equal to an allowed root or
// below one after a separator. Where a symlink resolver is configured (Linux),
// the path must also stay inside the roots once its symlinks are resolved.
//
// A checked path string is never used on the host. Confiner.Open opens the
// allowed root that holds a path as a handle (os.Root) and resolves the
// path's links inside it; operations then run through that handle, so a
// component swapped for a link while they run cannot lead them out of the
// root (see Handle). Creating and destroying operations refuse an allowed
// root itself (rule root-target, Confiner.RefuseRoot and Handle.RefuseRoot).
// Recursive removals refuse to cross a mount point (rule mount-point,
// Handle.RefuseMount). A link may not be placed in a pod's directory, or
// lead into one, except where the kubelet's layout and the caller's pod
// allow it (rule pod-link, Confiner.RefusePodLinkAt and RefusePodLinkTo).
//
// The rules are lexical and take a Flavour, so the Windows rules are tested on
// any OS. Every refusal is a *Refusal naming the rule that refused.
package confine
