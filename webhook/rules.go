package webhook

// Rule is one reason pipeguard denies an admission request, or warns
// about one.
type Rule struct {
	// ID starts every message the rule denies with: "[ID] ...". An ID in
	// angle brackets stands for ids that depend on the policies in force.
	ID string
	// DecidedIn is the file that decides the rule, from the repository
	// root.
	DecidedIn string
	// Denies says what the rule denies; for a rule that only warns, it
	// starts "nothing:" and says what it warns about.
	Denies string
}

// AdminRules stands, in Rules, for the rules of the rego a
// PipeAccessPolicy carries in spec.rego: each violation it reports is
// denied under the rule id it names, or else under the policy's name.
const AdminRules = "<PipeAccessPolicy spec.rego>"

// Rules is the index of every rule that can deny a request, and of the
// shipped rules that only warn. The rules
// decided in rego deny a mount only when the strictest enforcementAction of
// the policies protecting its pipe is deny; under warn or dryrun the
// request is admitted with a warning or a log line. Apart from these rules,
// a request is rejected only when pipeguard cannot decide on it: 400 for an
// object it cannot decode, 500 for its own failures (see Handler.Handle).
func Rules() []Rule {
	return []Rule{
		{ID: "protected-pipe-mount", DecidedIn: "rego/admission.rego",
			Denies: "a container, init container or ephemeral container that mounts a protected named pipe through a hostPath volume, " +
				"when no policy protecting the pipe allows it (as HostProcess, by its namespace and ServiceAccount, or as privileged " +
				"where a policy opts in to that flag, which Windows ignores)"},
		{ID: "ambiguous-pipe-path", DecidedIn: "rego/admission.rego",
			Denies: "a container that mounts a path that looks like a named pipe but cannot be resolved at admission " +
				"(such as a subPathExpr on a pipe volume): it could name any protected pipe, so every policy in force protects it, " +
				"and it is denied unless every one of them allows it"},
		{ID: "hostprocess-pipe-access", DecidedIn: "rego/admission.rego",
			Denies: "a HostProcess container (pod or container level; init and ephemeral containers too), mounted or not: " +
				"it reaches every host pipe by its path, so it is denied unless every policy in force allows it, " +
				"which a policy that withholds the HostProcess allowance does only for the namespaces it allows"},
		{ID: "protected-pipe-pv", DecidedIn: "rego/admission.rego",
			Denies: "a PersistentVolume whose hostPath or local path reaches a protected named pipe, or may: " +
				"a PersistentVolume cannot carry an allowance"},
		{ID: "vulnerable-csi-proxy", DecidedIn: "rego/admission.rego",
			Denies: "nothing: it warns about a HostProcess container whose image is CSI Proxy before v1.1.3, or v2.0.0-alpha.0 " +
				"(csi-proxy:<tag>, the version read from the tag), which runs request strings as PowerShell (CVE-2023-3893), " +
				"and the background audit reports it"},
		{ID: AdminRules, DecidedIn: "rego/admission.rego",
			Denies: "whatever the rego of a PipeAccessPolicy (spec.rego) reports as a violation, " +
				"under the policy's enforcementAction"},
		{ID: "namespace-allowance", DecidedIn: "webhook/namespace_guard.go",
			Denies: "creating or updating a Namespace (also through namespaces/status and namespaces/finalize) " +
				"so that a label granting pipe access is added, changed or removed, by a user without the " +
				GrantVerb + " verb on pipeaccesspolicies.pipeguard.io"},
		{ID: "too-many-host-paths", DecidedIn: "webhook/limits.go",
			Denies: "an object (a pod or a workload's pod template) with more hostPath volumes than MaxHostPathVolumes, " +
				"or more volumeMounts of hostPath volumes over its containers than MaxHostPathMounts, before any rule runs"},
	}
}
