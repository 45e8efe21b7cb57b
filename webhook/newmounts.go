package webhook

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/pipeguard/pipeguard/policy"
)

// newMounts drops the mounts an updated pod already had. A pod's volumes and
// containers cannot change after creation, so on UPDATE only what is new
// (ephemeral containers) needs a decision; re-judging the rest would block
// routine metadata updates of pods admitted under an older policy.
func newMounts(ctx context.Context, gk schema.GroupKind, oldRaw []byte, mounts []policy.Mount, claimed map[string]*hostVolume) ([]policy.Mount, error) {
	if len(oldRaw) == 0 {
		return mounts, nil
	}
	old, err := extract(gk, oldRaw)
	if err != nil {
		return nil, badRequest(fmt.Errorf("cannot decode request.oldObject as a Pod: %w", err))
	}
	oldPod, oldMounts, err := podFacts(ctx, old.spec, claimed)
	if err != nil {
		return nil, err
	}
	oldHP, err := hostProcessFacts(old.spec, oldPod)
	if err != nil {
		return nil, err
	}
	oldMounts = append(oldMounts, oldHP...)
	// The facts of both sides come from podFacts, so equal mounts have
	// equal keys: one set of the old ones makes the comparison linear.
	had := make(map[mountKey]struct{}, len(oldMounts))
	for _, o := range oldMounts {
		had[keyOf(o)] = struct{}{}
	}
	fresh := mounts[:0:0]
	for _, m := range mounts {
		if _, ok := had[keyOf(m)]; !ok {
			fresh = append(fresh, m)
		}
	}
	return fresh, nil
}

// mountKey is a policy.Mount as a comparable value: every fact podFacts
// fills in. ProtectedBy is the engine's, filled in later.
type mountKey struct {
	container, containerKind, volume, volumeSource  string
	rawPath, path, pathClass, pipe, ambiguousReason string
	readOnly, privileged, hostProcess               bool
	image                                           string
}

func keyOf(m policy.Mount) mountKey {
	return mountKey{
		container: m.Container, containerKind: m.ContainerKind, volume: m.Volume, volumeSource: m.VolumeSource,
		rawPath: m.RawPath, path: m.Path, pathClass: m.PathClass, pipe: m.Pipe, ambiguousReason: m.AmbiguousReason,
		readOnly: m.ReadOnly, privileged: m.Privileged, hostProcess: m.HostProcess, image: m.Image,
	}
}
