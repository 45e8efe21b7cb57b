package policy_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/policy"
)

func pipeMount(pipe string) policy.Mount {
	m := diskPipeMount()
	m.Volume, m.Pipe = pipe, pipe
	m.RawPath, m.Path = `\\.\pipe\`+pipe, `\\.\pipe\`+pipe
	return m
}

// decide evaluates one mount in namespace team-a (unlabelled) and returns
// the action taken ("allow", "deny", "warn", "dryrun") and the policies
// that reported it.
func decide(t *testing.T, e *policy.Engine, m policy.Mount) (string, []string) {
	t.Helper()
	d, err := e.Evaluate(context.Background(), podInput("team-a", nil, m))
	if err != nil {
		t.Fatal(err)
	}
	for action, vs := range map[string][]policy.Violation{"deny": d.Deny, "warn": d.Warn, "dryrun": d.DryRun} {
		if len(vs) > 0 {
			return action, vs[0].Policies
		}
	}
	return "allow", nil
}

// TestDefaultProtectionIsNotLostByAccident: a policy set that does not
// cover a CSI Proxy pipe leaves the built-in default protecting it, however
// the set came to be.
func TestDefaultProtectionIsNotLostByAccident(t *testing.T) {
	every := policy.CSIProxyPipes()
	cases := map[string]struct {
		policies []v1alpha1.PipeAccessPolicy
		// byDefault are pipes that must be denied by pipeguard-default.
		byDefault []string
		// byAdmin are pipes the admin's policy decides on (here: allows
		// team-a).
		byAdmin []string
		inForce bool
		says    string
	}{
		"no policy": {
			byDefault: every, inForce: true,
			says: "the built-in default pipeguard-default is in force alone: no PipeAccessPolicy exists",
		},
		"a policy about another pipe": {
			policies:  []v1alpha1.PipeAccessPolicy{pap("docker", func(s *v1alpha1.PipeAccessPolicySpec) { s.Pipes = []string{"docker_engine"} })},
			byDefault: every, byAdmin: []string{"docker_engine"}, inForce: true,
			says: "the built-in default pipeguard-default still protects every CSI Proxy pipe: no policy covers csi-proxy pipes",
		},
		"a policy about some CSI Proxy pipes": {
			policies:  []v1alpha1.PipeAccessPolicy{pap("smb", func(s *v1alpha1.PipeAccessPolicySpec) { s.Pipes = []string{"csi-proxy-smb-*"} })},
			byDefault: []string{"csi-proxy-disk-v1", "csi-proxy-filesystem-v1", "csi-proxy-volume-v2alpha1", "csi-proxy-system-v1alpha1"},
			byAdmin:   []string{"csi-proxy-smb-v1", "csi-proxy-smb-v1beta1"}, inForce: true,
			says: "the built-in default pipeguard-default still protects the CSI Proxy pipes no policy covers: " +
				"csi-proxy-disk-v1, csi-proxy-disk-v1alpha1, csi-proxy-disk-v1beta1, csi-proxy-disk-v1beta2, csi-proxy-disk-v1beta3, " +
				"csi-proxy-filesystem-v1, csi-proxy-filesystem-v1alpha1, csi-proxy-filesystem-v1beta1, csi-proxy-filesystem-v1beta2, csi-proxy-filesystem-v2alpha1, " +
				"csi-proxy-iscsi-v1alpha1, csi-proxy-iscsi-v1alpha2, csi-proxy-system-v1alpha1, " +
				"csi-proxy-volume-v1, csi-proxy-volume-v1alpha1, csi-proxy-volume-v1beta1, csi-proxy-volume-v1beta2, csi-proxy-volume-v1beta3, csi-proxy-volume-v2alpha1",
		},
		"a policy naming today's pipes one by one": {
			policies:  []v1alpha1.PipeAccessPolicy{pap("listed", func(s *v1alpha1.PipeAccessPolicySpec) { s.Pipes = every })},
			byDefault: []string{"csi-proxy-disk-v2", "csi-proxy-newgroup-v1"},
			byAdmin:   every, inForce: true,
			says: "the built-in default pipeguard-default still protects csi-proxy pipes of future API versions (such as csi-proxy-disk-v2): the policies list today's pipes only",
		},
		"a case-insensitive pattern covers them": {
			policies: []v1alpha1.PipeAccessPolicy{pap("upper", func(s *v1alpha1.PipeAccessPolicySpec) { s.Pipes = []string{"CSI-PROXY-*"} })},
			byAdmin:  append([]string{"csi-proxy-disk-v2"}, every...),
			says:     "the built-in default pipeguard-default is not in force: the policies cover every CSI Proxy pipe",
		},
		"two policies that cover them together": {
			policies: []v1alpha1.PipeAccessPolicy{
				pap("disk", func(s *v1alpha1.PipeAccessPolicySpec) { s.Pipes = []string{"csi-proxy-disk-*", "csi-proxy-volume-*"} }),
				pap("rest", func(s *v1alpha1.PipeAccessPolicySpec) {
					s.Pipes = []string{"csi-proxy-[!dv]*"}
				}),
			},
			byAdmin: every,
			says:    "the built-in default pipeguard-default is not in force: the policies cover every CSI Proxy pipe",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEngine(t)
			for i := range tc.policies {
				tc.policies[i].Spec.Allow.Namespaces = []string{"team-a"}
			}
			gen, err := e.Load(context.Background(), tc.policies)
			if err != nil {
				t.Fatal(err)
			}
			if gen.Default.InForce != tc.inForce {
				t.Errorf("built-in default in force: %v, want %v", gen.Default.InForce, tc.inForce)
			}
			if got := gen.Default.String(); got != tc.says {
				t.Errorf("protection is described as\n%q, want\n%q", got, tc.says)
			}
			if got := slices.Contains(gen.Policies, policy.DefaultPolicyName); got != tc.inForce {
				t.Errorf("generation lists %q; want pipeguard-default listed: %v", gen.Policies, tc.inForce)
			}
			for _, pipe := range tc.byDefault {
				if action, by := decide(t, e, pipeMount(pipe)); action != "deny" || !slices.Equal(by, []string{policy.DefaultPolicyName}) {
					t.Errorf("%s: %s by %q, want deny by pipeguard-default", pipe, action, by)
				}
			}
			for _, pipe := range tc.byAdmin {
				if action, by := decide(t, e, pipeMount(pipe)); action != "allow" {
					t.Errorf("%s: %s by %q, want the admin's allowance of team-a to decide", pipe, action, by)
				}
			}
		})
	}
}

// TestBuiltinDefaultAndAmbiguousPaths: a path that cannot be resolved is
// protected by every policy, the built-in default among them while it is in
// force, and it could name any of their pipes: a policy about another pipe
// cannot open it, only an allowance that every policy grants can.
func TestBuiltinDefaultAndAmbiguousPaths(t *testing.T) {
	e := newEngine(t)
	docker := pap("docker", func(s *v1alpha1.PipeAccessPolicySpec) {
		s.Pipes = []string{"docker_engine"}
		s.Allow.Namespaces = []string{"team-a"}
	})
	if _, err := e.Load(context.Background(), []v1alpha1.PipeAccessPolicy{docker}); err != nil {
		t.Fatal(err)
	}
	m := diskPipeMount()
	m.PathClass, m.Pipe, m.RawPath, m.AmbiguousReason = "ambiguous", "", `\\.\pipe\`, "path names the pipe namespace itself, which holds every pipe"
	cases := map[string]struct {
		namespace string
		labels    map[string]string
		refusing  []string // empty: allowed
	}{
		// docker allows team-a, but the path may name a CSI Proxy pipe,
		// which only the default protects, and the default does not.
		"allowed for docker_engine only":       {"team-a", nil, []string{policy.DefaultPolicyName}},
		"allowed by neither":                   {"team-b", nil, []string{"docker", policy.DefaultPolicyName}},
		"allowed for the CSI Proxy pipes only": {"team-b", map[string]string{policy.AllowLabel: "true"}, []string{"docker"}},
		"allowed by both":                      {"team-a", map[string]string{policy.AllowLabel: "true"}, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := e.Evaluate(context.Background(), podInput(tc.namespace, tc.labels, m))
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.refusing) == 0 {
				if d.Denied() {
					t.Fatalf("denied: %q", policy.Messages(d.Deny))
				}
				return
			}
			if len(d.Deny) != 1 || !slices.Equal(d.Deny[0].Policies, tc.refusing) {
				t.Fatalf("deny %+v, want one violation of %q", d.Deny, tc.refusing)
			}
		})
	}
}

// TestBuiltinNameIsReserved: a PipeAccessPolicy cannot pose as the
// built-in default.
func TestBuiltinNameIsReserved(t *testing.T) {
	e := newEngine(t)
	fake := pap(policy.DefaultPolicyName, func(s *v1alpha1.PipeAccessPolicySpec) { s.Pipes = []string{"docker_engine"} })
	_, err := e.Load(context.Background(), []v1alpha1.PipeAccessPolicy{fake})
	want := `PipeAccessPolicy "pipeguard-default": the name "pipeguard-default" is reserved for pipeguard's built-in policy; give this PipeAccessPolicy another name`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

// TestSamplesKeepTheDefaultProtection: every shipped sample, applied alone,
// still rejects (or, for the warn-mode rollout sample, warns about) a plain
// container mounting any CSI Proxy pipe in a namespace no policy allows.
func TestSamplesKeepTheDefaultProtection(t *testing.T) {
	files, err := filepath.Glob("../config/samples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var p v1alpha1.PipeAccessPolicy
		if err := yaml.UnmarshalStrict(data, &p); err != nil || p.Kind != "PipeAccessPolicy" {
			continue // the kustomization
		}
		checked++
		t.Run(filepath.Base(f), func(t *testing.T) {
			e := newEngine(t)
			if _, err := e.Load(context.Background(), []v1alpha1.PipeAccessPolicy{p}); err != nil {
				t.Fatal(err)
			}
			want := "deny"
			if p.Spec.EnforcementAction == v1alpha1.Warn {
				want = "warn"
			}
			for _, pipe := range append([]string{"csi-proxy-disk-v2"}, policy.CSIProxyPipes()...) {
				action, by := decide(t, e, pipeMount(pipe))
				if action == "deny" && slices.Equal(by, []string{policy.DefaultPolicyName}) {
					continue // the built-in default kept it
				}
				if action != want {
					t.Errorf("%s: %s by %q, want %s", pipe, action, by, want)
				}
			}
		})
	}
	if checked < 4 {
		t.Fatalf("checked %d samples, want the four in config/samples", checked)
	}
}
