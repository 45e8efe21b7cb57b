package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// EnforcementAction says what pipeguard does with a request that breaks a
// policy.
// +kubebuilder:validation:Enum=deny;warn;dryrun
type EnforcementAction string

const (
	// Deny rejects the request with the rule's message.
	Deny EnforcementAction = "deny"
	// Warn admits the request and returns the message to the client as an
	// admission warning.
	Warn EnforcementAction = "warn"
	// DryRun admits the request and only records (log line and metric) what
	// would have been denied.
	DryRun EnforcementAction = "dryrun"
)

// Strictness orders actions: a violation reported by several policies takes
// the strictest action among them.
func (a EnforcementAction) Strictness() int {
	switch a {
	case Deny:
		return 3
	case Warn:
		return 2
	case DryRun:
		return 1
	}
	return 0
}

// PipeAccessPolicySpec says which pipes are protected and who may mount them.
type PipeAccessPolicySpec struct {
	// Pipes are glob patterns matched against the canonical pipe name: lower
	// case, without the `\\.\pipe\` prefix, e.g. "csi-proxy-*" or
	// "csi-proxy-smb-v1". `*` matches any run of characters, `?` one
	// character, `[abc]` a class. Patterns are case-insensitive.
	// +kubebuilder:validation:MinItems=1
	// +listType=set
	Pipes []string `json:"pipes"`

	// Allow lists the allowances under which a container may mount a pipe
	// this policy protects. A mount is admitted when any policy that protects
	// its pipe allows it.
	// +optional
	Allow Allowances `json:"allow,omitempty"`

	// EnforcementAction is what happens to a mount no allowance covers:
	// deny (the default), warn or dryrun. When several policies protect the
	// same pipe and none allows the mount, the strictest action wins.
	// +kubebuilder:default=deny
	// +optional
	EnforcementAction EnforcementAction `json:"enforcementAction,omitempty"`

	// Rego holds optional admin-written rego modules. Each must declare a
	// package below pipeguard.admission (for example
	// `package pipeguard.admission.smbonly`) and may add objects to a
	// `violation` set; every violation is handled with this policy's
	// enforcementAction. See docs/writing-policies.md.
	// +optional
	// +listType=map
	// +listMapKey=name
	Rego []RegoModule `json:"rego,omitempty"`
}

// Allowances are the conditions under which a container may mount a
// protected pipe.
type Allowances struct {
	// Privileged allows containers whose securityContext.privileged is true.
	// Defaults to false: Windows ignores the flag (a privileged container on
	// Windows is a HostProcess container), so anyone who may create a pod
	// can set it. Set it only where the cluster's own admission decides who
	// may set securityContext.privileged.
	// +kubebuilder:default=false
	// +optional
	Privileged *bool `json:"privileged,omitempty"`

	// HostProcess allows Windows HostProcess containers (set on the
	// container or inherited from the pod). Defaults to true.
	// +kubebuilder:default=true
	// +optional
	HostProcess *bool `json:"hostProcess,omitempty"`

	// Namespaces allows any container in the named namespaces. A name with
	// no namespace yet gives the allowance to whoever creates it first; the
	// Ready condition warns about each.
	// +optional
	// +listType=set
	Namespaces []string `json:"namespaces,omitempty"`

	// NamespaceSelector allows any container in a namespace whose labels
	// match. It may read only keys under pipeguard.io/ (or a subdomain of
	// it), which only users with the grant verb may set, and
	// kubernetes.io/metadata.name; a policy selecting any other key is not
	// in force (reason UnguardedLabel). An empty selector matches every
	// namespace; leave it out to allow none by label.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// ServiceAccounts narrows the namespace allowances: when set, a pod in
	// an allowed namespace is allowed only if it runs as one of these
	// ServiceAccount names. It does not affect the privileged and
	// HostProcess allowances. It narrows which pods get the allowance, not
	// who: anyone who may create pods in the namespace may run them as any
	// of its ServiceAccounts.
	// +optional
	// +listType=set
	ServiceAccounts []string `json:"serviceAccounts,omitempty"`
}

// RegoModule is one admin-written rego file.
type RegoModule struct {
	// Name identifies the module in compile errors, e.g. "smb-only.rego".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Source is the rego text (rego v1 syntax).
	// +kubebuilder:validation:MinLength=1
	Source string `json:"source"`
}

// PipeAccessPolicyStatus reports whether the policy is in force.
type PipeAccessPolicyStatus struct {
	// ObservedGeneration is the metadata.generation last processed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// PolicyGeneration is the engine generation that holds this policy, or
	// that last tried to.
	// +optional
	PolicyGeneration int64 `json:"policyGeneration,omitempty"`

	// LastEnforced is the latest version of this policy that compiled and
	// went into force. While a newer version fails to compile, every
	// webhook replica, including one that starts later, keeps enforcing
	// this one.
	// +optional
	LastEnforced *EnforcedVersion `json:"lastEnforced,omitempty"`

	// Conditions: Ready is True when this version of the policy is enforced;
	// False with the reason (compile error with file:row, invalid spec)
	// otherwise, in which case the last good policy set stays in force.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// TotalViolations is how many violations of this policy the latest
	// background audit found among the objects already in the cluster
	// (Pods, workloads, PersistentVolumes).
	// +optional
	TotalViolations *int `json:"totalViolations,omitempty"`

	// AuditTimestamp is when the latest background audit ran.
	// +optional
	AuditTimestamp *metav1.Time `json:"auditTimestamp,omitempty"`

	// Violations lists the first violations the latest audit found, at
	// most 20, sorted by kind, namespace and name.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	Violations []AuditViolation `json:"violations,omitempty"`
}

// AuditViolation is one violation found by the background audit in an
// object that already exists.
type AuditViolation struct {
	// Kind of the violating object, e.g. Pod or DaemonSet.
	Kind string `json:"kind"`
	// Namespace of the object; empty for a PersistentVolume.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the object.
	Name string `json:"name"`
	// Container that mounts the pipe; empty for a PersistentVolume.
	// +optional
	Container string `json:"container,omitempty"`
	// Pipe is the normalized pipe name.
	// +optional
	Pipe string `json:"pipe,omitempty"`
	// Action is what admission would do on the object's next create or
	// update: deny, warn or dryrun; or error when the object could not be
	// evaluated (a policy's admin rules ran out of time or failed on it),
	// which admission rejects too.
	Action string `json:"action"`
	// Message is the message admission would give, with its rule.
	Message string `json:"message"`
}

// EnforcedVersion is a version of a policy that was in force.
type EnforcedVersion struct {
	// Generation is the metadata.generation of that version.
	Generation int64 `json:"generation"`
	// Spec is that version's spec.
	Spec PipeAccessPolicySpec `json:"spec"`
}

// PipeAccessPolicy protects host named pipes from containers that have no
// allowance to mount them.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=pap,categories=pipeguard
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="True when the latest spec is in force"
// +kubebuilder:printcolumn:name="Action",type=string,JSONPath=`.status.lastEnforced.spec.enforcementAction`,description="The enforcement action in force: that of the last version that compiled"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="Why the latest spec is or is not in force"
// +kubebuilder:printcolumn:name="Violations",type=integer,JSONPath=`.status.totalViolations`,description="Violations the latest background audit found in existing objects"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="In-Force",type=integer,JSONPath=`.status.lastEnforced.generation`,priority=1,description="The metadata.generation of the version in force"
// +kubebuilder:printcolumn:name="Latest-Action",type=string,JSONPath=`.spec.enforcementAction`,priority=1,description="The enforcement action of the latest spec"
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
type PipeAccessPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PipeAccessPolicySpec   `json:"spec"`
	Status PipeAccessPolicyStatus `json:"status,omitempty"`
}

// PipeAccessPolicyList is a list of PipeAccessPolicy.
// +kubebuilder:object:root=true
type PipeAccessPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PipeAccessPolicy `json:"items"`
}

var _ runtime.Object = &PipeAccessPolicy{}
