package policy

// InputVersion names the schema of the rego input document. It changes only
// when a field is removed or changes meaning.
const InputVersion = "pipeguard.io/admission/v1"

// Container kinds, as they appear in Mount.ContainerKind.
const (
	KindContainer          = "container"
	KindInitContainer      = "initContainer"
	KindEphemeralContainer = "ephemeralContainer"
	// KindPersistentVolume marks the mount fact of a PersistentVolume: there
	// is no container, and no allowance applies.
	KindPersistentVolume = "persistentVolume"
)

// Input is the document rego rules see as `input`. Go fills in every fact that
// is security-critical and easy to get wrong; the rules only decide.
type Input struct {
	Version   string        `json:"version"`
	Request   Request       `json:"request"`
	Namespace *Namespace    `json:"namespace"`
	Object    Object        `json:"object"`
	Pod       *Pod          `json:"pod"`
	Mounts    []Mount       `json:"mounts"`
	Policies  []PolicyFacts `json:"policies"`
}

// Request is the part of the AdmissionRequest rules may need.
type Request struct {
	UID         string   `json:"uid"`
	Operation   string   `json:"operation"`
	Kind        string   `json:"kind"`
	Group       string   `json:"group"`
	Version     string   `json:"version"`
	Resource    string   `json:"resource"`
	SubResource string   `json:"subResource"`
	Namespace   string   `json:"namespace"`
	Name        string   `json:"name"`
	Username    string   `json:"username"`
	Groups      []string `json:"groups"`
	DryRun      bool     `json:"dryRun"`
}

// Namespace is the namespace of a namespaced object, with its labels as the
// webhook's cache holds them. Nil for cluster-scoped objects.
type Namespace struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
}

// Object names the object under review.
type Object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
}

// Pod holds pod-level facts of a pod or of a workload's pod template. Nil
// for a PersistentVolume.
type Pod struct {
	// ServiceAccountName is the effective ServiceAccount: "default" when the
	// spec names none.
	ServiceAccountName string `json:"serviceAccountName"`
	// HostProcess is the pod-level securityContext.windowsOptions.hostProcess.
	HostProcess bool `json:"hostProcess"`
}

// Mount is one (container × volumeMount) whose volume is a host path, or the
// single mount fact of a PersistentVolume.
type Mount struct {
	Container     string `json:"container"`
	ContainerKind string `json:"containerKind"`
	Volume        string `json:"volume"`
	// VolumeSource is "hostPath" or "local".
	VolumeSource string `json:"volumeSource"`
	// RawPath is the path as written, joined with the mount's subPath.
	RawPath string `json:"rawPath"`
	// Path is the normalized path: `\\.\pipe\<name>` for a pipe.
	Path string `json:"path"`
	// PathClass is "pipe", "ambiguous" (looks like a pipe, cannot be
	// resolved: treated as protected) or "none".
	PathClass       string `json:"pathClass"`
	Pipe            string `json:"pipe"`
	AmbiguousReason string `json:"ambiguousReason"`
	ReadOnly        bool   `json:"readOnly"`
	// Privileged is the container's effective securityContext.privileged.
	Privileged bool `json:"privileged"`
	// HostProcess is the container's effective Windows hostProcess: its own
	// setting, or the pod's when it has none.
	HostProcess bool `json:"hostProcess"`
	// ProtectedBy names, sorted, the policies that protect the pipe: those
	// with a pipes pattern that matches Pipe, or all of them for an
	// ambiguous path. The engine fills it in from the policies in force.
	ProtectedBy []string `json:"protectedBy"`
	// Image is the container's image, on the fact of a HostProcess
	// container only (VolumeSource "hostProcess"): the only kind of
	// container that can serve the host's pipes, such as CSI Proxy.
	Image string `json:"image,omitempty"`
}

// PolicyFacts is one policy in force, as rules see it.
type PolicyFacts struct {
	Name              string     `json:"name"`
	Pipes             []string   `json:"pipes"`
	EnforcementAction string     `json:"enforcementAction"`
	Allow             AllowFacts `json:"allow"`
	// Builtin is true for pipeguard's built-in default policy, which
	// protects only the pipes that no other policy protects.
	Builtin bool `json:"builtin"`
	// NamespaceMatch is true when the request's namespace is allowed by the
	// policy's namespaces list or namespaceSelector (before any
	// ServiceAccount narrowing).
	NamespaceMatch bool `json:"namespaceMatch"`
}

// AllowFacts are a policy's allowances with defaults applied.
type AllowFacts struct {
	Privileged        bool           `json:"privileged"`
	HostProcess       bool           `json:"hostProcess"`
	Namespaces        []string       `json:"namespaces"`
	NamespaceSelector *SelectorFacts `json:"namespaceSelector"`
	ServiceAccounts   []string       `json:"serviceAccounts"`
}

// SelectorFacts mirrors metav1.LabelSelector so rules can phrase remedies
// ("label the namespace k=v").
type SelectorFacts struct {
	MatchLabels      map[string]string     `json:"matchLabels"`
	MatchExpressions []SelectorRequirement `json:"matchExpressions"`
}

// SelectorRequirement mirrors metav1.LabelSelectorRequirement.
type SelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values"`
}
