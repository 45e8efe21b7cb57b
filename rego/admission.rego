# METADATA
# title: pipeguard admission rules
# description: |
#   Decides whether the containers of a Kubernetes object may mount the host
#   named pipes that PipeAccessPolicies protect. The input document is
#   described in docs/writing-policies.md; every fact that is easy to get
#   wrong (path normalization, effective security context, namespace
#   selector matching) is computed before the rules run.
#
#   Results: the sets deny, warn and dryrun, each holding violation objects
#   {"rule", "msg", "action", "container", "containerKind", "volume", "path",
#   "pipe", "policies"}.
package pipeguard.admission

# The enforcement actions, weakest first.
action_rank := {"dryrun": 1, "warn": 2, "deny": 3}

deny contains v if {
	some v in violation
	v.action == "deny"
}

warn contains v if {
	some v in violation
	v.action == "warn"
}

dryrun contains v if {
	some v in violation
	v.action == "dryrun"
}

# A mount that reaches a protected pipe and that no protecting policy allows,
# or a path that could name more than one pipe (an ambiguous path, or a
# HostProcess container, which reaches every host pipe without a mount) and
# that some policy in force does not allow.
#
# What decides whether a mount is allowed is passed to the functions below as
# plain values (its container's security facts and kind, the names of the
# policies protecting it) rather than as the whole mount. OPA remembers a
# function's result for the values it was called with, so for the mounts of
# one container the allowances, the enforcement action and the message parts
# are worked out once.
violation contains v if {
	some m in input.mounts
	privileged := object.get(m, "privileged", false)
	host_process := object.get(m, "hostProcess", false)
	not allowed_everywhere(privileged, host_process, m.containerKind)
	names := refusing(m, protecting(m), privileged, host_process)
	count(names) > 0
	text := violation_text(m, names, privileged)
	v := {
		"rule": rule_id(m.containerKind, object.get(m, "pathClass", ""), object.get(m, "volumeSource", "")),
		"msg": text.msg,
		"subject": text.subject,
		"target": text.target,
		"reason": text.reason,
		"remedy": text.remedy,
		"action": strictest(names),
		"container": m.container,
		"containerKind": m.containerKind,
		"volume": m.volume,
		"path": m.rawPath,
		"pipe": m.pipe,
		"policies": names,
	}
}

# A HostProcess container running CSI Proxy before v1.1.3, or
# v2.0.0-alpha.0: those versions splice request strings into PowerShell
# commands, so anyone who can reach one of its pipes runs commands as the
# node's administrator (CVE-2023-3893). The rule warns and never denies: the
# container may be allowed, and refusing a node's storage daemon would stop
# every volume of the node; the warning reaches whoever applies it, and the
# background audit reports it as a result of its own. Only the image's tag
# can tell the version: an image named by digest alone, or by a tag that is
# not a version, is not judged.
violation contains v if {
	some m in input.mounts
	m.volumeSource == "hostProcess"
	image := object.get(m, "image", "")
	contains(image, "csi-proxy:") # most images end here, before any parsing
	tag := csi_proxy_tag(image)
	csi_proxy_vulnerable(tag)
	v := {
		"rule": "vulnerable-csi-proxy",
		"msg": sprintf(
			"container %q runs CSI Proxy %s (image %q), a version that passes request strings to PowerShell unescaped, so that any caller of its pipes runs commands as the node's administrator (CVE-2023-3893); upgrade it to v1.1.3 or later",
			[m.container, tag, image],
		),
		"action": "warn",
		"container": m.container,
		"containerKind": m.containerKind,
		"volume": "",
		"path": "",
		"pipe": "",
		"policies": [],
	}
}

# The tag of a CSI Proxy image: the last path element of the reference,
# before any digest, is csi-proxy:<tag>. A repository name is lower case in
# every image reference a node can pull.
csi_proxy_tag(image) := tag if {
	ref := split(image, "@")[0]
	elems := split(ref, "/")
	name_tag := split(elems[count(elems) - 1], ":")
	count(name_tag) == 2
	name_tag[0] == "csi-proxy"
	tag := name_tag[1]
}

csi_proxy_vulnerable(tag) if {
	v := csi_proxy_version(tag)
	v.core < [1, 1, 3]
}

csi_proxy_vulnerable(tag) if {
	v := csi_proxy_version(tag)
	v.core == [2, 0, 0]
	v.pre == "alpha.0"
}

# A tag such as v1.1.2 or 1.1.2 or v2.0.0-alpha.0 as {"core": [1, 1, 2],
# "pre": ""}; undefined for a tag that is not a version.
csi_proxy_version(tag) := {"core": [to_number(m[1]), to_number(m[2]), to_number(m[3])], "pre": m[4]} if {
	some m in regex.find_all_string_submatch_n(`^[vV]?([0-9]{1,9})\.([0-9]{1,9})\.([0-9]{1,9})(?:-([0-9A-Za-z.-]+))?$`, tag, 1)
}

# The policies, sorted, whose protection a mount violates. A mount of one
# pipe is allowed when any policy protecting that pipe allows it, so it
# violates all of them or none. An ambiguous path could name any protected
# pipe, so it is allowed only by an allowance that holds for every one of
# them: every policy that does not allow it is violated.
refusing(m, names, privileged, host_process) := [] if {
	m.pathClass == "pipe"
	allowed_by_any(names, privileged, host_process, m.containerKind)
} else := names if {
	m.pathClass == "pipe"
} else := [n | some n in names; not allowed_by(policy_named[n], privileged, host_process, m.containerKind)]

# The names of the policies that protect the pipe a mount reaches, sorted. A
# path that looks like a pipe but cannot be resolved is protected by every
# policy. The functions below take these names rather than the policies, so
# that their results are computed once per pod, not once per mount.
#
# pipeguard computes them as the mount fact protectedBy, matching each pipe
# name against the policies' patterns once rather than on every review; an
# input written by hand may leave the fact out, and then the patterns are
# matched here.
protecting(m) := sort(m.protectedBy) if is_array(m.protectedBy)
else := sort([p.name | some p in input.policies; protects(p, m)])

policy_named[p.name] := p if some p in input.policies

protects(p, m) if {
	not p.builtin
	pattern_matches(p, m)
}

# pipeguard's built-in default protects only what no other policy protects:
# a policy about other pipes never lifts the protection of CSI Proxy's.
protects(p, m) if {
	p.builtin
	pattern_matches(p, m)
	not protected_by_admin(m)
}

protected_by_admin(m) if {
	some q in input.policies
	not q.builtin
	pattern_matches(q, m)
}

pattern_matches(p, m) if {
	m.pathClass == "pipe"
	some pattern in p.pipes
	glob.match(pattern, null, m.pipe)
}

protects(_, m) if m.pathClass == "ambiguous"

# The common case, decided without matching pipes: an allowance that every
# policy grants covers a mount whichever policies protect it.
#
# These allowance functions end in "else := false": OPA remembers the value
# a function returned for its arguments, but not that it had none.
allowed_everywhere(privileged, host_process, kind) if {
	privileged
	every_policy_allows_privileged
} else if {
	host_process
	every_policy_allows_host_process
} else if {
	kind != "persistentVolume"
	every_policy_allows_namespace
} else := false

every_policy_allows_privileged if every p in input.policies {
	p.allow.privileged
}

every_policy_allows_host_process if every p in input.policies {
	p.allow.hostProcess
}

every_policy_allows_namespace if every p in input.policies {
	namespace_allows(p)
}

allowed_by_any(names, privileged, host_process, kind) if {
	some n in names
	p := policy_named[n]
	allowed_by(p, privileged, host_process, kind)
} else := false

allowed_by(p, privileged, _, _) if {
	p.allow.privileged
	privileged
}

allowed_by(p, _, host_process, _) if {
	p.allow.hostProcess
	host_process
}

allowed_by(p, _, _, kind) if {
	kind != "persistentVolume"
	namespace_allows(p)
}

# A namespace allowance, narrowed to named ServiceAccounts when the policy
# lists any.
namespace_allows(p) if {
	p.namespaceMatch
	count(p.allow.serviceAccounts) == 0
}

namespace_allows(p) if {
	p.namespaceMatch
	input.pod.serviceAccountName in p.allow.serviceAccounts
}

# An unknown action counts as deny.
strictest(names) := action if {
	top := max({object.get(action_rank, object.get(p, "enforcementAction", ""), 3) | some n in names; p := policy_named[n]})
	some action, rank in action_rank
	rank == top
}

rule_id(kind, _, _) := "protected-pipe-pv" if kind == "persistentVolume"

rule_id(kind, _, source) := "hostprocess-pipe-access" if {
	kind != "persistentVolume"
	source == "hostProcess"
}

rule_id(kind, class, source) := "ambiguous-pipe-path" if {
	kind != "persistentVolume"
	source != "hostProcess"
	class == "ambiguous"
}

rule_id(kind, class, _) := "protected-pipe-mount" if {
	kind != "persistentVolume"
	class == "pipe"
}

# Messages. Each says what was mounted, what allowance is missing and how to
# get one, in parts: "<subject> mounts <target>, but <reason>; to allow it,
# <remedy>". pipeguard joins the violations of one container that share a
# rule, a reason and a remedy into one message that names each target. A
# violation never depends on its message being buildable: if a fact the
# message needs is missing, a plainer message without parts is used.

violation_text(m, names, privileged) := {
	"msg": sprintf(
		"PersistentVolume %q points at %s (%s); a PersistentVolume cannot carry an allowance, so any pod bound to it would reach the pipe; mount the pipe through a hostPath volume of a HostProcess container instead",
		[m.volume, target(m), m.volumeSource],
	),
	"subject": "", "target": "", "reason": "", "remedy": "",
} if {
	m.containerKind == "persistentVolume"
} else := {
	"msg": sprintf(
		"%s is a HostProcess container, which reaches every host pipe by its path without any mount, but %s; to allow it, %s",
		[container_ref(m.container, m.containerKind), host_process_reason(names), host_process_remedy(names)],
	),
	"subject": "", "target": "", "reason": "", "remedy": "",
} if {
	m.volumeSource == "hostProcess"
} else := {
	"msg": sprintf("%s mounts %s, but %s; to allow it, %s", [subject, tgt, why, how]),
	"subject": subject, "target": tgt, "reason": why, "remedy": how,
} if {
	m.containerKind != "persistentVolume"
	subject := container_ref(m.container, m.containerKind)
	tgt := mount_target(m)
	why := reason(names, privileged)
	how := remedy(names, privileged)
} else := {
	"msg": sprintf("volume %q reaches %s, a protected pipe, and no allowance covers it", [object.get(m, "volume", ""), display_path(object.get(m, "rawPath", ""), object.get(m, "path", ""))]),
	"subject": "", "target": "", "reason": "", "remedy": "",
}

namespace_name := object.get(input, ["namespace", "name"], "")

reason(names, privileged) := concat(" and ", missing(names, privileged))

remedy(names, privileged) := concat(", or ", remedies(names, privileged))

# A HostProcess container is refused by the policies that withhold the
# HostProcess allowance and do not allow its namespace either.
host_process_reason(names) := sprintf("%s withholds the HostProcess allowance and %s", [policy_list(names), missing_namespace(names)[0]]) if {
	count(names) == 1
} else := sprintf("%s withhold the HostProcess allowance and %s", [policy_list(names), missing_namespace(names)[0]])

host_process_remedy(names) := concat(", or ", array.concat(
	sort({r | some n in names; p := policy_named[n]; some r in namespace_remedies(p)}),
	[sprintf("set spec.allow.hostProcess: true in %s", [policy_list(names)])],
))

policy_list(names) := sprintf("PipeAccessPolicy %q", [names[0]]) if {
	count(names) == 1
} else := sprintf("PipeAccessPolicies %s", [concat(" and ", sort({sprintf("%q", [n]) | some n in names}))])

mount_target(m) := sprintf("%s through volume %q, a PersistentVolumeClaim bound to a PersistentVolume at that path", [m.path, m.volume]) if {
	m.pathClass == "pipe"
	object.get(m, "volumeSource", "") == "persistentVolumeClaim"
} else := sprintf("%s through volume %q", [m.path, m.volume]) if m.pathClass == "pipe"
else := sprintf(
	"%s through volume %q (a path that looks like a named pipe but cannot be resolved: %s; it is treated as protected)",
	[display_path(m.rawPath, m.path), m.volume, m.ambiguousReason],
) if m.pathClass == "ambiguous"

# A path is shown as it was written, unless it holds characters that would
# not show or would break the message's lines; then it is shown as
# pipeguard renders it, with those characters as U+FFFD.
display_path(raw, _) := raw if not regex.match(hidden_chars, raw)

display_path(raw, rendered) := rendered if regex.match(hidden_chars, raw)

# hidden_chars matches the characters that do not show as themselves:
# control (Cc) and format (Cf) characters, U+FFFD (bytes that were not
# UTF-8), the line and paragraph separators (Zl, Zp), the rest of Unicode's
# Default_Ignorable_Code_Point (the Hangul fillers, the combining grapheme
# joiner, the Khmer inherent vowels, the variation selectors and the
# reserved ignorable ranges) and the symbols drawn as an empty cell (Braille
# blank, the Khitan filler, the null notehead). It is Go's list (package
# internal/invisible, Hidden), spelled out; TestHiddenCharsAreGos holds
# the two to the same code points.
hidden_chars := `[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\x{FFFD}\x{034F}\x{115F}\x{1160}\x{17B4}\x{17B5}\x{180B}-\x{180F}\x{2065}\x{2800}\x{3164}\x{FE00}-\x{FE0F}\x{FFA0}\x{FFF0}-\x{FFF8}\x{16FE4}\x{1D159}\x{E0000}-\x{E0FFF}]`

container_ref(name, kind) := sprintf("container %q", [name]) if kind == "container"

container_ref(name, kind) := sprintf("container %q (%s)", [name, kind]) if kind != "container"

target(m) := m.path if m.pathClass == "pipe"

target(m) := sprintf("%s, a path that looks like a named pipe but cannot be resolved (%s)", [display_path(m.rawPath, m.path), m.ambiguousReason]) if {
	m.pathClass == "ambiguous"
}

missing(names, privileged) := array.concat(missing_security(names, privileged), missing_namespace(names))

# Windows ignores securityContext.privileged: a container that sets it and
# is refused is told so, since the flag is what it may have relied on.
missing_security(names, privileged) := ["it is not privileged or HostProcess"] if {
	some n in names
	p := policy_named[n]
	p.allow.privileged
	some nq in names
	q := policy_named[nq]
	q.allow.hostProcess
} else := ["it is not privileged"] if {
	some n in names
	p := policy_named[n]
	p.allow.privileged
} else := ["it is not HostProcess (securityContext.privileged has no effect on Windows)"] if {
	privileged
	some n in names
	p := policy_named[n]
	p.allow.hostProcess
} else := ["it is not HostProcess"] if {
	some n in names
	p := policy_named[n]
	p.allow.hostProcess
} else := ["securityContext.privileged has no effect on Windows"] if {
	privileged
} else := []

missing_namespace(names) := [sprintf("namespace %q allows only ServiceAccounts %s and the pod runs as %q", [namespace_name, service_accounts(names), pod_service_account])] if {
	some n in names
	p := policy_named[n]
	p.namespaceMatch
} else := [sprintf("namespace %q is not allowed", [namespace_name])]

service_accounts(names) := concat(", ", sort({sprintf("%q", [sa]) | some n in names; p := policy_named[n]; p.namespaceMatch; some sa in p.allow.serviceAccounts}))

pod_service_account := object.get(input, ["pod", "serviceAccountName"], "default")

remedies(names, privileged) := rs if {
	rs := array.concat(
		sort({r | some n in names; p := policy_named[n]; some r in namespace_remedies(p)}),
		security_remedies(names, privileged),
	)
	count(rs) > 0
} else := [sprintf("add an allowance to PipeAccessPolicy %s", [concat(" or ", sort({sprintf("%q", [p.name]) | some n in names; p := policy_named[n]}))])]

# Ways to allow the namespace, from each policy's allowances.
namespace_remedies(p) := [sprintf("run the pod as ServiceAccount %q", [sa]) | some sa in p.allow.serviceAccounts] if {
	p.namespaceMatch
} else := array.concat(label_remedies(p), name_remedies(p))

label_remedies(p) := [sprintf("label the namespace %s=%s", [k, v]) | some k, v in p.allow.namespaceSelector.matchLabels] if {
	count(object.get(p.allow, ["namespaceSelector", "matchExpressions"], [])) == 0
} else := [sprintf("give the namespace labels that match the namespaceSelector of PipeAccessPolicy %q", [p.name])] if {
	p.allow.namespaceSelector
} else := []

name_remedies(p) := [sprintf("add %q to spec.allow.namespaces of PipeAccessPolicy %q", [namespace_name, p.name])] if {
	count(p.allow.namespaces) > 0
} else := []

security_remedy := {
	"it is not privileged or HostProcess": "run the container as privileged or HostProcess",
	"it is not privileged": "run the container as privileged",
	"it is not HostProcess": "run the container as HostProcess",
	"it is not HostProcess (securityContext.privileged has no effect on Windows)": "run the container as HostProcess",
}

security_remedies(names, privileged) := [security_remedy[s] | some s in missing_security(names, privileged); security_remedy[s]]

# Violations from admin-written modules (PipeAccessPolicy spec.rego) reach
# the sets above through custom_violation, which adds the policy's name and
# enforcement action. A module can report an object (with at least "msg")
# or a plain string; anything else is reported as a violation too, so a
# mistake in a rule never turns into a silent allow.
custom_violation(v, policy, action) := object.union(
	object.union(custom_defaults(policy), v),
	{"action": action, "policies": [policy]},
) if is_object(v)

custom_violation(v, policy, action) := object.union(
	custom_defaults(policy),
	{"msg": v, "action": action, "policies": [policy]},
) if is_string(v)

custom_violation(v, policy, action) := object.union(
	custom_defaults(policy),
	{"msg": sprintf("a rule of PipeAccessPolicy %q reported %v, which is neither an object nor a string; fix the rule", [policy, v]), "action": action, "policies": [policy]},
) if {
	not is_object(v)
	not is_string(v)
}

custom_defaults(policy) := {
	"rule": policy,
	"msg": sprintf("a rule of PipeAccessPolicy %q reported a violation without a message", [policy]),
	"container": "",
	"containerKind": "",
	"volume": "",
	"path": "",
	"pipe": "",
}
