package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// goRule is pipeguard's default policy written directly in Go: a mount of a
// csi-proxy* pipe (or of a path that looks like a pipe but cannot be
// resolved) is denied unless the container is privileged or HostProcess or
// the namespace has pipeguard.io/allow-csi-proxy=true; a PersistentVolume
// reaching one is always denied. It plugs into pipeguard's own handler in
// place of the rego engine, so decoding, path normalization, facts, the
// namespace lookup, responses and metrics are the same code, and a
// comparison measures only building the rego input and evaluating rego.
type goRule struct{}

var _ webhook.Evaluator = goRule{}

// AllowanceLabels implements webhook.Evaluator.
func (goRule) AllowanceLabels() []string { return []string{policy.AllowLabel} }

// Evaluate implements webhook.Evaluator.
func (goRule) Evaluate(_ context.Context, in *policy.Input) (*policy.Decision, error) {
	d := &policy.Decision{Evaluated: true}
	nsAllowed := in.Namespace != nil && in.Namespace.Labels[policy.AllowLabel] == "true"
	for _, m := range in.Mounts {
		protected := m.PathClass == "ambiguous" || (m.PathClass == "pipe" && strings.HasPrefix(m.Pipe, "csi-proxy"))
		if !protected {
			continue
		}
		v := policy.Violation{Action: "deny", Container: m.Container, ContainerKind: m.ContainerKind,
			Volume: m.Volume, Path: m.RawPath, Pipe: m.Pipe, Policies: []string{policy.DefaultPolicyName}}
		switch {
		case m.ContainerKind == policy.KindPersistentVolume:
			v.Rule = "protected-pipe-pv"
			v.Message = fmt.Sprintf("PersistentVolume %q points at %s (%s)", m.Volume, m.Path, m.VolumeSource)
		case m.Privileged || m.HostProcess || nsAllowed:
			continue
		default:
			v.Rule = "protected-pipe-mount"
			v.Message = fmt.Sprintf("container %q mounts %s through volume %q, but it is not privileged or HostProcess and namespace %q is not allowed; to allow it, label the namespace %s=true, or run the container as privileged or HostProcess",
				m.Container, m.Path, m.Volume, in.Namespace.Name, policy.AllowLabel)
		}
		d.Deny = append(d.Deny, v)
	}
	return d, nil
}
