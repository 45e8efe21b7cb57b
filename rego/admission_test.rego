package pipeguard.admission_test

import data.pipeguard.admission

# Building blocks for test inputs.

default_policy := {
	"name": "pipeguard-default",
	"pipes": ["csi-proxy*"],
	"enforcementAction": "deny",
	"allow": {
		"privileged": false,
		"hostProcess": true,
		"namespaces": [],
		"namespaceSelector": {"matchLabels": {"pipeguard.io/allow-csi-proxy": "true"}, "matchExpressions": []},
		"serviceAccounts": [],
	},
	"namespaceMatch": false,
}

pipe_mount := {
	"container": "driver",
	"containerKind": "container",
	"volume": "pipe",
	"volumeSource": "hostPath",
	"rawPath": `\\.\pipe\csi-proxy-disk-v1`,
	"path": `\\.\pipe\csi-proxy-disk-v1`,
	"pathClass": "pipe",
	"pipe": "csi-proxy-disk-v1",
	"ambiguousReason": "",
	"readOnly": false,
	"privileged": false,
	"hostProcess": false,
}

pod_input(mounts, policies) := {
	"version": "pipeguard.io/admission/v1",
	"namespace": {"name": "team-a", "labels": {}},
	"pod": {"serviceAccountName": "default", "hostProcess": false},
	"mounts": mounts,
	"policies": policies,
}

test_unprivileged_mount_is_denied_with_remedy if {
	some v in admission.deny with input as pod_input([pipe_mount], [default_policy])
	v.rule == "protected-pipe-mount"
	v.msg == `container "driver" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe", but it is not HostProcess and namespace "team-a" is not allowed; to allow it, label the namespace pipeguard.io/allow-csi-proxy=true, or run the container as HostProcess`
	v.policies == ["pipeguard-default"]
}

# Windows ignores securityContext.privileged, so under the default it is no
# allowance, and the message says why the flag did not help.
test_privileged_container_is_denied_and_told_the_flag_does_nothing if {
	m := object.union(pipe_mount, {"privileged": true})
	some v in admission.deny with input as pod_input([m], [default_policy])
	v.msg == `container "driver" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe", but it is not HostProcess (securityContext.privileged has no effect on Windows) and namespace "team-a" is not allowed; to allow it, label the namespace pipeguard.io/allow-csi-proxy=true, or run the container as HostProcess`
}

# An admin may still opt in to the flag, for a cluster whose own admission
# decides who may set it.
test_privileged_allowance_is_honoured_where_an_admin_sets_it if {
	p := object.union(default_policy, {"allow": object.union(default_policy.allow, {"privileged": true})})
	m := object.union(pipe_mount, {"privileged": true})
	count(admission.violation) == 0 with input as pod_input([m], [p])
	some v in admission.deny with input as pod_input([pipe_mount], [p])
	contains(v.msg, "but it is not privileged or HostProcess and")
}

test_privileged_container_without_any_security_allowance_is_told if {
	p := object.union(default_policy, {"name": "locked", "allow": object.union(default_policy.allow, {"hostProcess": false})})
	m := object.union(pipe_mount, {"privileged": true})
	some v in admission.deny with input as pod_input([m], [p])
	v.reason == `securityContext.privileged has no effect on Windows and namespace "team-a" is not allowed`
	v.remedy == "label the namespace pipeguard.io/allow-csi-proxy=true"
}

test_host_process_container_is_allowed if {
	m := object.union(pipe_mount, {"hostProcess": true})
	count(admission.violation) == 0 with input as pod_input([m], [default_policy])
}

test_allowed_namespace_is_allowed if {
	p := object.union(default_policy, {"namespaceMatch": true})
	count(admission.violation) == 0 with input as pod_input([pipe_mount], [p])
}

test_unprotected_pipe_is_allowed if {
	m := object.union(pipe_mount, {"pipe": "docker_engine", "path": `\\.\pipe\docker_engine`})
	count(admission.violation) == 0 with input as pod_input([m], [default_policy])
}

test_ordinary_host_path_is_allowed if {
	m := object.union(pipe_mount, {"pipe": "", "pathClass": "none", "path": `c:\var\lib\kubelet`})
	count(admission.violation) == 0 with input as pod_input([m], [default_policy])
}

test_ambiguous_path_is_protected_by_every_policy if {
	m := object.union(pipe_mount, {"pipe": "", "pathClass": "ambiguous", "rawPath": `\\.\pipe\`, "ambiguousReason": "path names the pipe namespace itself"})
	p := object.union(default_policy, {"pipes": ["something-else"]})
	some v in admission.deny with input as pod_input([m], [p])
	v.rule == "ambiguous-pipe-path"
	startswith(v.msg, `container "driver" mounts \\.\pipe\ through volume "pipe" (a path that looks like a named pipe but cannot be resolved: path names the pipe namespace itself; it is treated as protected), but it is not HostProcess`)
}

ambiguous_mount := object.union(pipe_mount, {"pipe": "", "pathClass": "ambiguous", "rawPath": `\\.\pipe\\\csi-proxy-disk-v1`, "path": "", "ambiguousReason": "doubled separator"})

# An ambiguous path could name any protected pipe: one policy's allowance
# for its own pipes does not open it, only an allowance every policy grants.
test_ambiguous_path_needs_every_policy_to_allow_it if {
	smb := object.union(default_policy, {"name": "smb", "pipes": ["csi-proxy-smb-*"], "namespaceMatch": true})
	vs := admission.deny with input as pod_input([ambiguous_mount], [smb, builtin_policy])
	{v.policies | some v in vs} == {["pipeguard-default"]}
	runtime := object.union(docker_policy, {"name": "container-runtime-pipes", "pipes": ["docker_engine*", "containerd-*"]})
	vs2 := admission.deny with input as pod_input([ambiguous_mount], [runtime, builtin_policy])
	{v.policies | some v in vs2} == {["pipeguard-default"]}
	both := object.union(builtin_policy, {"namespaceMatch": true})
	count(admission.violation) == 0 with input as pod_input([ambiguous_mount], [smb, both])
}

# The action of an ambiguous path's violation is the strictest among the
# policies that refuse it, not among those that allow it.
test_ambiguous_path_takes_the_action_of_the_refusing_policies if {
	allows := object.union(default_policy, {"name": "allows", "pipes": ["csi-proxy-smb-*"], "namespaceMatch": true, "enforcementAction": "deny"})
	warns := object.union(default_policy, {"name": "warns", "pipes": ["csi-proxy-disk-*"], "enforcementAction": "warn"})
	count(admission.deny) == 0 with input as pod_input([ambiguous_mount], [allows, warns])
	some v in admission.warn with input as pod_input([ambiguous_mount], [allows, warns])
	v.policies == ["warns"]
}

host_process_fact := {
	"container": "node",
	"containerKind": "container",
	"volume": "",
	"volumeSource": "hostProcess",
	"rawPath": "",
	"path": "",
	"pathClass": "ambiguous",
	"pipe": "",
	"ambiguousReason": "a HostProcess container reaches every host pipe by its path, without a mount",
	"readOnly": false,
	"privileged": false,
	"hostProcess": true,
}

smb_only := object.union(default_policy, {
	"name": "smb",
	"pipes": ["csi-proxy-smb-*"],
	"allow": object.union(default_policy.allow, {"hostProcess": false, "namespaces": ["csi-smb"], "namespaceSelector": null}),
})

# A HostProcess container reaches every host pipe without a mount: a policy
# that withholds the HostProcess allowance refuses it wherever it does not
# allow the namespace.
test_host_process_container_is_refused_where_a_policy_withholds_the_allowance if {
	some v in admission.deny with input as pod_input([host_process_fact], [smb_only, builtin_policy])
	v.rule == "hostprocess-pipe-access"
	v.policies == ["smb"]
	v.msg == `container "node" is a HostProcess container, which reaches every host pipe by its path without any mount, but PipeAccessPolicy "smb" withholds the HostProcess allowance and namespace "team-a" is not allowed; to allow it, add "team-a" to spec.allow.namespaces of PipeAccessPolicy "smb", or set spec.allow.hostProcess: true in PipeAccessPolicy "smb"`
}

test_host_process_container_is_allowed_where_every_policy_allows_it if {
	count(admission.violation) == 0 with input as pod_input([host_process_fact], [default_policy])
	inp := object.union(pod_input([host_process_fact], [object.union(smb_only, {"namespaceMatch": true}), builtin_policy]), {"namespace": {"name": "csi-smb", "labels": {}}})
	count(admission.violation) == 0 with input as inp
}

test_ambiguous_path_with_a_line_break_is_shown_as_rendered if {
	m := object.union(pipe_mount, {"pipe": "", "pathClass": "ambiguous", "rawPath": "\\\\.\\pipe\\csi\nproxy", "path": "\\\\.\\pipe\\csi\ufffdproxy", "ambiguousReason": "path contains a control character"})
	some v in admission.deny with input as pod_input([m], [default_policy])
	not contains(v.msg, "\n")
	contains(v.msg, "csi\ufffdproxy")
}

test_message_parts_rebuild_the_message if {
	some v in admission.deny with input as pod_input([pipe_mount], [default_policy])
	v.subject == `container "driver"`
	v.target == `\\.\pipe\csi-proxy-disk-v1 through volume "pipe"`
	v.reason == `it is not HostProcess and namespace "team-a" is not allowed`
	v.remedy == "label the namespace pipeguard.io/allow-csi-proxy=true, or run the container as HostProcess"
	v.msg == sprintf("%s mounts %s, but %s; to allow it, %s", [v.subject, v.target, v.reason, v.remedy])
}

builtin_policy := object.union(default_policy, {"builtin": true})

docker_policy := object.union(default_policy, {"name": "docker", "pipes": ["docker_engine"], "allow": object.union(default_policy.allow, {"namespaces": ["team-a"]}), "namespaceMatch": true})

test_builtin_default_protects_what_no_other_policy_does if {
	vs := admission.deny with input as pod_input([pipe_mount], [docker_policy, builtin_policy])
	{v.policies | some v in vs} == {["pipeguard-default"]}
}

test_builtin_default_steps_aside_for_a_policy_that_covers_the_pipe if {
	allow_team_a := object.union(docker_policy, {"name": "disk", "pipes": ["csi-proxy-disk-*"]})
	count(admission.violation) == 0 with input as pod_input([pipe_mount], [allow_team_a, builtin_policy])
	smb := object.union(pipe_mount, {"pipe": "csi-proxy-smb-v1", "path": `\\.\pipe\csi-proxy-smb-v1`})
	vs := admission.deny with input as pod_input([smb], [allow_team_a, builtin_policy])
	{v.policies | some v in vs} == {["pipeguard-default"]}
}

test_init_container_kind_is_named if {
	m := object.union(pipe_mount, {"containerKind": "initContainer"})
	some v in admission.deny with input as pod_input([m], [default_policy])
	startswith(v.msg, `container "driver" (initContainer) mounts`)
}

test_only_the_unallowed_container_is_reported if {
	ok := object.union(pipe_mount, {"container": "node-driver", "hostProcess": true})
	bad := object.union(pipe_mount, {"container": "sidecar"})
	vs := admission.deny with input as pod_input([ok, bad], [default_policy])
	{v.container | some v in vs} == {"sidecar"}
}

test_persistent_volume_is_always_denied if {
	m := object.union(pipe_mount, {"containerKind": "persistentVolume", "container": "", "volume": "pv1", "privileged": false})
	p := object.union(default_policy, {"namespaceMatch": true})
	inp := object.union(pod_input([m], [p]), {"namespace": null, "pod": null})
	some v in admission.deny with input as inp
	v.rule == "protected-pipe-pv"
	startswith(v.msg, `PersistentVolume "pv1" points at \\.\pipe\csi-proxy-disk-v1 (hostPath); a PersistentVolume cannot carry an allowance`)
}

test_service_account_narrows_namespace_allowance if {
	p := object.union(default_policy, {
		"namespaceMatch": true,
		"allow": object.union(default_policy.allow, {"serviceAccounts": ["csi-smb"]}),
	})
	some v in admission.deny with input as pod_input([pipe_mount], [p])
	contains(v.msg, `namespace "team-a" allows only ServiceAccounts "csi-smb" and the pod runs as "default"`)
	contains(v.msg, `run the pod as ServiceAccount "csi-smb"`)

	inp := object.union(pod_input([pipe_mount], [p]), {"pod": {"serviceAccountName": "csi-smb", "hostProcess": false}})
	count(admission.violation) == 0 with input as inp
}

test_any_protecting_policy_may_allow if {
	strict := object.union(default_policy, {"name": "strict"})
	smb := object.union(default_policy, {"name": "smb-driver", "pipes": ["csi-proxy-disk-*"], "namespaceMatch": true})
	count(admission.violation) == 0 with input as pod_input([pipe_mount], [strict, smb])
}

test_strictest_action_wins if {
	w := object.union(default_policy, {"name": "rollout", "enforcementAction": "warn"})
	d := object.union(default_policy, {"name": "strict", "enforcementAction": "dryrun"})
	some v in admission.warn with input as pod_input([pipe_mount], [w, d])
	v.policies == ["rollout", "strict"]
	count(admission.deny) == 0 with input as pod_input([pipe_mount], [w, d])
}

test_warn_and_dryrun_sets if {
	w := object.union(default_policy, {"enforcementAction": "warn"})
	count(admission.warn) == 1 with input as pod_input([pipe_mount], [w])
	dr := object.union(default_policy, {"enforcementAction": "dryrun"})
	count(admission.dryrun) == 1 with input as pod_input([pipe_mount], [dr])
	count(admission.deny) == 0 with input as pod_input([pipe_mount], [dr])
}

test_namespace_list_remedy_names_the_policy if {
	p := object.union(default_policy, {
		"name": "drivers",
		"allow": object.union(default_policy.allow, {"namespaces": ["kube-system"], "namespaceSelector": null, "privileged": false, "hostProcess": false}),
	})
	some v in admission.deny with input as pod_input([pipe_mount], [p])
	v.msg == `container "driver" mounts \\.\pipe\csi-proxy-disk-v1 through volume "pipe", but namespace "team-a" is not allowed; to allow it, add "team-a" to spec.allow.namespaces of PipeAccessPolicy "drivers"`
}

test_policy_without_allowances_says_so if {
	p := object.union(default_policy, {
		"name": "locked",
		"allow": {"privileged": false, "hostProcess": false, "namespaces": [], "namespaceSelector": null, "serviceAccounts": []},
	})
	some v in admission.deny with input as pod_input([pipe_mount], [p])
	endswith(v.msg, `to allow it, add an allowance to PipeAccessPolicy "locked"`)
}

test_custom_violation_object_takes_policy_action if {
	v := admission.custom_violation({"rule": "smb-sa-only", "msg": "only csi-smb"}, "smb", "warn")
	v.rule == "smb-sa-only"
	v.action == "warn"
	v.policies == ["smb"]
}

test_custom_violation_string_and_garbage_fail_closed if {
	admission.custom_violation("plain text", "p", "deny").msg == "plain text"
	bad := admission.custom_violation(42, "p", "deny")
	bad.action == "deny"
	contains(bad.msg, "neither an object nor a string")
}

test_missing_facts_never_turn_into_an_allow if {
	inp := object.remove(pod_input([pipe_mount], [object.remove(default_policy, ["enforcementAction"])]), ["namespace", "pod"])
	some v in admission.deny with input as inp
	v.rule == "protected-pipe-mount"
}

# pipeguard hands the rules which policies protect each mount as the fact
# protectedBy; when it is present the rules use it rather than matching the
# pipes patterns again.
test_protected_by_fact_decides_protection if {
	unprotected := object.union(pipe_mount, {"protectedBy": []})
	count(admission.violation) == 0 with input as pod_input([unprotected], [default_policy])
	protected := object.union(pipe_mount, {"pipe": "vendor-agent", "protectedBy": ["pipeguard-default"]})
	some v in admission.deny with input as pod_input([protected], [default_policy])
	v.policies == ["pipeguard-default"]
}

# A mount without a fact the message needs is still denied, with the
# plainer message.
test_message_without_its_facts_still_denies if {
	m := object.remove(pipe_mount, ["path"])
	some v in admission.deny with input as pod_input([m], [default_policy])
	v.rule == "protected-pipe-mount"
	v.msg == `volume "pipe" reaches \\.\pipe\csi-proxy-disk-v1, a protected pipe, and no allowance covers it`
	v.subject == ""
}

# A mount without its security facts counts as neither privileged nor
# HostProcess, and a namespace allowance still covers it.
test_missing_security_facts_are_false if {
	m := object.remove(pipe_mount, ["privileged", "hostProcess"])
	count(admission.deny) == 1 with input as pod_input([m], [default_policy])
	allowed := object.union(default_policy, {"namespaceMatch": true})
	count(admission.violation) == 0 with input as pod_input([m], [allowed])
}

# Each denied mount of one container gets its own violation, with the
# allowances worked out once for all of them.
test_every_denied_mount_of_a_container_is_reported if {
	ms := [object.union(pipe_mount, {"volume": sprintf("pipe-%d", [i])}) | some i in numbers.range(1, 3)]
	vs := admission.deny with input as pod_input(ms, [default_policy])
	{v.volume | some v in vs} == {"pipe-1", "pipe-2", "pipe-3"}
}

# A PersistentVolume's mount fact written without a path class is still
# the PersistentVolume rule's violation.
test_pv_without_path_class_is_denied if {
	m := object.remove(object.union(pipe_mount, {"containerKind": "persistentVolume", "protectedBy": ["pipeguard-default"]}), ["pathClass"])
	some v in admission.deny with input as pod_input([m], [default_policy])
	v.rule == "protected-pipe-pv"
}

# The allowances are remembered per container facts and protecting
# policies, never per container alone: a mount of the same container
# whose pipe another policy protects is decided on its own, whichever
# mount comes first.
test_allowance_of_one_mount_does_not_cover_another if {
	strict := object.union(default_policy, {"name": "strict", "pipes": ["csi-proxy-smb-*"]})
	smb := object.union(default_policy, {"name": "smb-driver", "pipes": ["csi-proxy-disk-*"], "namespaceMatch": true})
	allowed := object.union(pipe_mount, {"volume": "disk", "protectedBy": ["smb-driver"]})
	denied := object.union(pipe_mount, {"volume": "smb", "path": `\\.\pipe\csi-proxy-smb-v1`, "rawPath": `\\.\pipe\csi-proxy-smb-v1`, "pipe": "csi-proxy-smb-v1", "protectedBy": ["strict"]})
	first := admission.deny with input as pod_input([allowed, denied], [strict, smb])
	{v.volume | some v in first} == {"smb"}
	second := admission.deny with input as pod_input([denied, allowed], [strict, smb])
	{v.volume | some v in second} == {"smb"}
}

# CSI Proxy before v1.1.3, and v2.0.0-alpha.0, runs request strings as
# PowerShell (CVE-2023-3893). A HostProcess container running such an image
# gets a warning of its own, even where it is allowed; nothing is denied.
csi_proxy_fact(image) := object.union(host_process_fact, {"container": "csi-proxy", "image": image})

csi_proxy_warnings(image) := {v |
	some v in admission.warn with input as pod_input([csi_proxy_fact(image)], [default_policy])
	v.rule == "vulnerable-csi-proxy"
}

test_vulnerable_csi_proxy_is_warned_with_the_cve_and_the_remedy if {
	ws := csi_proxy_warnings("ghcr.io/kubernetes-sigs/sig-windows/csi-proxy:v1.1.2")
	count(ws) == 1
	some v in ws
	v.msg == `container "csi-proxy" runs CSI Proxy v1.1.2 (image "ghcr.io/kubernetes-sigs/sig-windows/csi-proxy:v1.1.2"), a version that passes request strings to PowerShell unescaped, so that any caller of its pipes runs commands as the node's administrator (CVE-2023-3893); upgrade it to v1.1.3 or later`
	v.action == "warn"
	v.container == "csi-proxy"
	v.policies == []
	count(admission.deny) == 0 with input as pod_input([csi_proxy_fact("ghcr.io/kubernetes-sigs/sig-windows/csi-proxy:v1.1.2")], [default_policy])
}

test_every_vulnerable_csi_proxy_tag_is_warned if {
	every image in [
		"ghcr.io/kubernetes-sigs/sig-windows/csi-proxy:v1.1.2",
		"ghcr.io/kubernetes-sigs/sig-windows/csi-proxy:v1.1.2@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"mcr.microsoft.com/oss/kubernetes-csi/csi-proxy:v1.0.2",
		"registry.local:5000/mirror/csi-proxy:1.1.1",
		"csi-proxy:v0.2.2",
		"csi-proxy:v1.1.2-windows-ltsc2022",
		"csi-proxy:v2.0.0-alpha.0",
	] {
		count(csi_proxy_warnings(image)) == 1
	}
}

# What the rule must not judge: fixed versions, other images that merely
# contain the name, digests alone, tags that are not versions.
test_fixed_or_unknown_csi_proxy_is_not_warned if {
	every image in [
		"ghcr.io/kubernetes-sigs/sig-windows/csi-proxy:v1.1.3",
		"ghcr.io/kubernetes-sigs/sig-windows/csi-proxy:v1.2.1",
		"ghcr.io/kubernetes-sigs/sig-windows/csi-proxy:v1.10.0",
		"csi-proxy:v1.1.3-windows-ltsc2022",
		"csi-proxy:v2.0.0-alpha.1",
		"csi-proxy:v2.0.0",
		"csi-proxy:latest",
		"csi-proxy@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"csi-proxy",
		"example.com/csi-proxy-exporter:v0.1.0",
		"example.com/not-csi-proxy:v1.0.0",
		"example.com/csi-proxy/driver:v1.0.0",
		"example.com/my-csi-proxy:v1.0.0",
		"example.com/csi-proxy:v1.0.0/extra",
		"csi-proxy:v1.1.99999999999",
		"",
	] {
		count(csi_proxy_warnings(image)) == 0
	}
}

# An ordinary container cannot serve the host's pipes; its image is not
# read even where a hand-written input carries one.
test_csi_proxy_image_of_a_mount_is_not_judged if {
	m := object.union(pipe_mount, {"image": "csi-proxy:v1.1.2"})
	ws := admission.warn with input as pod_input([m], [default_policy])
	every v in ws {
		v.rule != "vulnerable-csi-proxy"
	}
}
