package policy_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/policy"
)

func diskPipeMount() policy.Mount {
	return policy.Mount{
		Container: "driver", ContainerKind: policy.KindContainer, Volume: "pipe", VolumeSource: "hostPath",
		RawPath: `\\.\pipe\csi-proxy-disk-v1`, Path: `\\.\pipe\csi-proxy-disk-v1`, PathClass: "pipe", Pipe: "csi-proxy-disk-v1",
	}
}

func podInput(ns string, labels map[string]string, mounts ...policy.Mount) *policy.Input {
	return &policy.Input{
		Namespace: &policy.Namespace{Name: ns, Labels: labels},
		Pod:       &policy.Pod{ServiceAccountName: "default"},
		Mounts:    mounts,
	}
}

func newEngine(t *testing.T) *policy.Engine {
	t.Helper()
	e, err := policy.NewEngine(context.Background(), policy.Options{})
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	return e
}

func pap(name string, mutate func(*v1alpha1.PipeAccessPolicySpec)) v1alpha1.PipeAccessPolicy {
	p := v1alpha1.PipeAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.PipeAccessPolicySpec{Pipes: []string{"csi-proxy-*"}}}
	if mutate != nil {
		mutate(&p.Spec)
	}
	return p
}

func TestDefaultPolicy(t *testing.T) {
	e := newEngine(t)
	privileged := diskPipeMount()
	privileged.Privileged = true
	cases := map[string]struct {
		in       *policy.Input
		wantDeny string // substring of the single deny message; empty: no deny
	}{
		"unlabelled namespace is denied": {
			in:       podInput("team-a", nil, diskPipeMount()),
			wantDeny: `[protected-pipe-mount] container "driver" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe", but it is not HostProcess and namespace "team-a" is not allowed; to allow it, label the namespace pipeguard.io/allow-csi-proxy=true, or run the container as HostProcess`,
		},
		"allow label is honoured": {
			in: podInput("csi", map[string]string{policy.AllowLabel: "true"}, diskPipeMount()),
		},
		"allow label must be exactly true": {
			in:       podInput("csi", map[string]string{policy.AllowLabel: "yes"}, diskPipeMount()),
			wantDeny: `namespace "csi" is not allowed`,
		},
		"kube-system is not allowed implicitly": {
			in:       podInput("kube-system", nil, diskPipeMount()),
			wantDeny: `namespace "kube-system" is not allowed`,
		},
		"a privileged container is not allowed: Windows ignores the flag": {
			in:       podInput("team-a", nil, privileged),
			wantDeny: `[protected-pipe-mount] container "driver" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe", but it is not HostProcess (securityContext.privileged has no effect on Windows) and namespace "team-a" is not allowed; to allow it, label the namespace pipeguard.io/allow-csi-proxy=true, or run the container as HostProcess`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := e.Evaluate(context.Background(), tc.in)
			if err != nil {
				t.Fatal(err)
			}
			msgs := policy.Messages(d.Deny)
			if tc.wantDeny == "" {
				if len(msgs) != 0 {
					t.Fatalf("denied: %q", msgs)
				}
				return
			}
			if len(msgs) != 1 || !strings.Contains(msgs[0], tc.wantDeny) {
				t.Fatalf("deny messages %q, want one containing %q", msgs, tc.wantDeny)
			}
		})
	}
}

func TestNoMountsSkipsRego(t *testing.T) {
	e := newEngine(t)
	d, err := e.Evaluate(context.Background(), podInput("team-a", nil))
	if err != nil {
		t.Fatal(err)
	}
	if d.Evaluated || d.Denied() {
		t.Fatalf("decision %+v, want an allow without evaluation", d)
	}
}

func TestAdminPolicies(t *testing.T) {
	e := newEngine(t)
	smbOnly := pap("smb-only", func(s *v1alpha1.PipeAccessPolicySpec) {
		s.Pipes = []string{"csi-proxy-smb-*"}
		s.Allow.Namespaces = []string{"csi-smb"}
		s.Rego = []v1alpha1.RegoModule{{Name: "sa.rego", Source: `package pipeguard.admission.smbonly

violation contains {"rule": "smb-sa-only", "msg": sprintf("container %q mounts the smb pipe but runs as %q; only csi-smb-node may", [m.container, input.pod.serviceAccountName])} if {
	some m in input.mounts
	m.pipe == "csi-proxy-smb-v1"
	input.pod.serviceAccountName != "csi-smb-node"
}
`}}
	})
	warnOnly := pap("rollout", func(s *v1alpha1.PipeAccessPolicySpec) {
		s.Pipes = []string{"CSI-PROXY-ISCSI-*"} // patterns are case-insensitive
		s.EnforcementAction = v1alpha1.Warn
	})
	if _, err := e.Load(context.Background(), []v1alpha1.PipeAccessPolicy{smbOnly, warnOnly}); err != nil {
		t.Fatalf("Load: %v", err)
	}
	smb := diskPipeMount()
	smb.Pipe, smb.Path = "csi-proxy-smb-v1", `\\.\pipe\csi-proxy-smb-v1`
	iscsi := diskPipeMount()
	iscsi.Pipe, iscsi.Path = "csi-proxy-iscsi-v1alpha2", `\\.\pipe\csi-proxy-iscsi-v1alpha2`

	d, err := e.Evaluate(context.Background(), podInput("csi-smb", nil, smb))
	if err != nil {
		t.Fatal(err)
	}
	if got := policy.Messages(d.Deny); len(got) != 1 || got[0] != `[smb-sa-only] container "driver" mounts the smb pipe but runs as "default"; only csi-smb-node may` {
		t.Fatalf("deny = %q, want the custom rule's message only", got)
	}
	if d.Deny[0].Policies[0] != "smb-only" {
		t.Errorf("custom violation policies = %v, want [smb-only]", d.Deny[0].Policies)
	}

	d, err = e.Evaluate(context.Background(), podInput("team-a", nil, iscsi))
	if err != nil {
		t.Fatal(err)
	}
	if d.Denied() || len(d.Warn) != 1 || !strings.Contains(d.Warn[0].String(), "csi-proxy-iscsi-v1alpha2") {
		t.Fatalf("decision %+v, want one warning for the iscsi pipe", d)
	}
}

func TestCompileErrors(t *testing.T) {
	cases := map[string]struct {
		policy v1alpha1.PipeAccessPolicy
		want   string
	}{
		"syntax error names file and row": {
			policy: pap("broken", func(s *v1alpha1.PipeAccessPolicySpec) {
				s.Rego = []v1alpha1.RegoModule{{Name: "bad.rego", Source: "package pipeguard.admission.broken\n\nviolation contains x if {\n\tx := \n}\n"}}
			}),
			want: `PipeAccessPolicy "broken": 1 error occurred: broken/bad.rego:5: rego_parse_error`,
		},
		"package outside pipeguard.admission": {
			policy: pap("elsewhere", func(s *v1alpha1.PipeAccessPolicySpec) {
				s.Rego = []v1alpha1.RegoModule{{Name: "x.rego", Source: "package other\n\nviolation contains \"x\" if true\n"}}
			}),
			want: `elsewhere/x.rego:1: package other is not allowed; declare a package below pipeguard.admission, e.g. "package pipeguard.admission.elsewhere"`,
		},
		"the shipped package itself is reserved": {
			policy: pap("sneaky", func(s *v1alpha1.PipeAccessPolicySpec) {
				s.Rego = []v1alpha1.RegoModule{{Name: "x.rego", Source: "package pipeguard.admission\n\nallowed_by(_, _) if true\n"}}
			}),
			want: `package pipeguard.admission is not allowed`,
		},
		"network builtins are not available": {
			policy: pap("net", func(s *v1alpha1.PipeAccessPolicySpec) {
				s.Rego = []v1alpha1.RegoModule{{Name: "x.rego", Source: "package pipeguard.admission.net\n\nviolation contains r.body if r := http.send({\"method\": \"get\", \"url\": \"http://127.0.0.1\"})\n"}}
			}),
			want: `net/x.rego:3: rego_type_error: undefined function http.send`,
		},
		"a package named like a shipped rule": {
			policy: pap("deny", func(s *v1alpha1.PipeAccessPolicySpec) {
				s.Rego = []v1alpha1.RegoModule{{Name: "x.rego", Source: "package pipeguard.admission.deny.extra\n\nviolation contains \"x\" if false\n"}}
			}),
			want: `deny/x.rego:1: package pipeguard.admission.deny.extra is not allowed: deny is a rule of package pipeguard.admission; choose another name, e.g. "package pipeguard.admission.deny_rules"`,
		},
		"a package named like a rule of the generated module": {
			policy: pap("clash", func(s *v1alpha1.PipeAccessPolicySpec) {
				s.Rego = []v1alpha1.RegoModule{{Name: "x.rego", Source: "package pipeguard.admission.admin_violation\n\nviolation contains \"x\" if false\n"}}
			}),
			want: `clash/x.rego:1: package pipeguard.admission.admin_violation is not allowed: admin_violation is a rule of package pipeguard.admission; choose another name, e.g. "package pipeguard.admission.clash"`,
		},
		"a rule that reads the decision it is part of": {
			policy: pap("loop", func(s *v1alpha1.PipeAccessPolicySpec) {
				s.Rego = []v1alpha1.RegoModule{{Name: "x.rego", Source: "package pipeguard.admission.loop\n\nviolation contains \"x\" if count(data.pipeguard.admission.deny) > 0\n"}}
			}),
			want: `PipeAccessPolicy "loop": bundle activation failed: 4 errors occurred:`,
		},
		"bad glob": {
			policy: pap("glob", func(s *v1alpha1.PipeAccessPolicySpec) { s.Pipes = []string{"csi-proxy-[disk"} }),
			want:   `spec.pipes[0] "csi-proxy-[disk" is not a valid glob pattern`,
		},
		"prefixed pipe pattern": {
			policy: pap("prefixed", func(s *v1alpha1.PipeAccessPolicySpec) { s.Pipes = []string{`\\.\pipe\csi-proxy-disk-v1`} }),
			want:   `must be a pipe name without a prefix`,
		},
		"no pipes": {
			policy: pap("empty", func(s *v1alpha1.PipeAccessPolicySpec) { s.Pipes = nil }),
			want:   `spec.pipes is empty`,
		},
		"unknown action": {
			policy: pap("action", func(s *v1alpha1.PipeAccessPolicySpec) { s.EnforcementAction = "block" }),
			want:   `spec.enforcementAction "block" is not one of deny, warn, dryrun`,
		},
		"bad selector": {
			policy: pap("selector", func(s *v1alpha1.PipeAccessPolicySpec) {
				s.Allow.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}
			}),
			want: `spec.allow.namespaceSelector: "Near" is not a valid label selector operator`,
		},
		"matchLabels on a label a tenant can set": {
			policy: pap("tier", func(s *v1alpha1.PipeAccessPolicySpec) {
				s.Allow.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}
			}),
			want: `PipeAccessPolicy "tier": spec.allow.namespaceSelector reads label "tier", which anyone who may edit a namespace can set, whenever they set it; select only labels under pipeguard.io/ (for example "pipeguard.io/tier"), which only users with the "grant" verb on pipeaccesspolicies.pipeguard.io may set, or kubernetes.io/metadata.name, or list the namespaces in spec.allow.namespaces`,
		},
		"matchExpressions on a label a tenant can set": {
			policy: pap("env", func(s *v1alpha1.PipeAccessPolicySpec) {
				s.Allow.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "pipeguard.io/tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"gold"}},
					{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod"}}}}
			}),
			want: `spec.allow.namespaceSelector reads label "env", which anyone`,
		},
		"look-alike keys outside the guarded domain": {
			policy: pap("lookalike", func(s *v1alpha1.PipeAccessPolicySpec) {
				s.Allow.NamespaceSelector = &metav1.LabelSelector{
					MatchLabels: map[string]string{"pipeguard.io.example.com/tier": "gold", "notpipeguard.io/tier": "gold"},
					MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: "pipeguard.io.example.com/tier", Operator: metav1.LabelSelectorOpExists},
						{Key: "kubernetes.io/metadata.name-x", Operator: metav1.LabelSelectorOpExists}}}
			}),
			want: `spec.allow.namespaceSelector reads label "kubernetes.io/metadata.name-x", "notpipeguard.io/tier", "pipeguard.io.example.com/tier", which anyone`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEngine(t)
			before := e.Current()
			_, err := e.Load(context.Background(), []v1alpha1.PipeAccessPolicy{pap("good", nil), tc.policy})
			var ce *policy.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("Load error = %v, want a *CompileError", err)
			}
			if len(ce.Policies) != 1 || ce.Policies[0].Policy != tc.policy.Name {
				t.Fatalf("failed policies = %v, want only %q", err, tc.policy.Name)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q\nwant it to contain %q", err, tc.want)
			}
			if e.Current() != before {
				t.Fatal("a failed compile replaced the generation in force")
			}
		})
	}
}

func TestPackageClash(t *testing.T) {
	mod := v1alpha1.RegoModule{Name: "a.rego", Source: "package pipeguard.admission.shared\n\nviolation contains \"x\" if false\n"}
	a := pap("a", func(s *v1alpha1.PipeAccessPolicySpec) { s.Rego = []v1alpha1.RegoModule{mod} })
	b := pap("b", func(s *v1alpha1.PipeAccessPolicySpec) { s.Rego = []v1alpha1.RegoModule{mod} })
	_, err := newEngine(t).Load(context.Background(), []v1alpha1.PipeAccessPolicy{a, b})
	if err == nil || !strings.Contains(err.Error(), `PipeAccessPolicy "b": b/a.rego: package pipeguard.admission.shared is already used by PipeAccessPolicy "a"`) {
		t.Fatalf("error = %v", err)
	}
}

func TestGenerationsSwap(t *testing.T) {
	e := newEngine(t)
	first := e.Current()
	gen, err := e.Load(context.Background(), []v1alpha1.PipeAccessPolicy{pap("only-disk", func(s *v1alpha1.PipeAccessPolicySpec) { s.Pipes = []string{"csi-proxy-disk-*"} })})
	if err != nil {
		t.Fatal(err)
	}
	if gen.Number <= first.Number || e.Current() != gen {
		t.Fatalf("generation %d after %d, current %d", gen.Number, first.Number, e.Current().Number)
	}
	d, err := e.Evaluate(context.Background(), podInput("team-a", nil, diskPipeMount()))
	if err != nil {
		t.Fatal(err)
	}
	if !d.Denied() || d.Generation != gen.Number {
		t.Fatalf("decision %+v, want a deny from generation %d", d, gen.Number)
	}
	// Back to no policies: the default is in force again.
	gen, err = e.Load(context.Background(), nil)
	if err != nil || len(gen.Policies) != 1 || gen.Policies[0] != policy.DefaultPolicyName {
		t.Fatalf("Load(nil) = %v, %v; want the default policy", gen, err)
	}
}

func TestEvaluateRespectsContext(t *testing.T) {
	e, err := policy.NewEngine(context.Background(), policy.Options{MaxConcurrent: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// A cancelled request gets no decision, even with a slot free.
	if d, err := e.Evaluate(ctx, podInput("team-a", nil, diskPipeMount())); err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Evaluate with a cancelled context = %+v, %v; want context.Canceled", d, err)
	}
	deadline, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	if _, err := e.Evaluate(deadline, podInput("team-a", nil, diskPipeMount())); err != nil {
		t.Fatalf("Evaluate after a cancelled call: %v (a slot leaked?)", err)
	}
}
