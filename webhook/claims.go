package webhook

import (
	"context"
	"fmt"

	"github.com/pipeguard/pipeguard/pipepath"
	"github.com/pipeguard/pipeguard/webhook/decode"
)

// ClaimSource is the volumeSource of a mount fact whose volume is a
// PersistentVolumeClaim bound to a PersistentVolume that reaches a pipe, or
// may: a pod that mounts the claim mounts the PersistentVolume's path.
const ClaimSource = "persistentVolumeClaim"

// BoundVolume is the host path of the PersistentVolume a claim is bound to.
type BoundVolume struct {
	// Name is the PersistentVolume's; Source is "hostPath" or "local".
	Name, Source, Path string
}

// Claims finds the PersistentVolume a PersistentVolumeClaim is bound to
// (its spec.volumeName). BoundVolume returns nil, without an error, for a
// claim that is unknown, not bound, or bound to a PersistentVolume with no
// host path.
type Claims interface {
	BoundVolume(ctx context.Context, namespace, claim string) (*BoundVolume, error)
}

// StaticClaims serves BoundVolume from a map of "namespace/claim", for
// offline evaluation and tests.
type StaticClaims map[string]BoundVolume

// BoundVolume implements Claims.
func (s StaticClaims) BoundVolume(_ context.Context, namespace, claim string) (*BoundVolume, error) {
	if v, ok := s[namespace+"/"+claim]; ok {
		return &v, nil
	}
	return nil, nil
}

// claimedVolumes returns the claim volumes of spec whose PersistentVolume
// reaches a pipe or may, by volume name, as host volumes; nil when the
// handler has no Claims. A claim bound to an ordinary host path, or to no
// host path at all, is no fact. More claim volumes than MaxClaimVolumes
// get an overBoundError: each may cost two lookups.
func (h *Handler) claimedVolumes(ctx context.Context, namespace string, spec *decode.PodSpec) (map[string]*hostVolume, error) {
	if h.opts.Claims == nil || spec == nil {
		return nil, nil
	}
	n := 0
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			n++
		}
	}
	if n == 0 {
		return nil, nil
	}
	if n > MaxClaimVolumes {
		return nil, &overBoundError{what: "persistentVolumeClaim volumes", count: n, max: MaxClaimVolumes,
			remedy: "mount one claim in several containers, or split the workload"}
	}
	var out map[string]*hostVolume
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pv, err := h.opts.Claims.BoundVolume(ctx, namespace, v.PersistentVolumeClaim.ClaimName)
		if err != nil {
			return nil, fmt.Errorf("internal error: looking up the PersistentVolume of claim %q in namespace %q: %w", v.PersistentVolumeClaim.ClaimName, namespace, err)
		}
		if pv == nil || pipepath.Classify(pv.Path).Class == pipepath.NotPipe {
			continue
		}
		if out == nil {
			out = map[string]*hostVolume{}
		}
		out[v.Name] = &hostVolume{source: ClaimSource, path: pv.Path}
	}
	return out, nil
}
