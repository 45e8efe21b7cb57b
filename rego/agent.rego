# METADATA
# title: pipeguard agent gate
# description: |
#   Decides, per request, whether pipeguard-agent runs a CSI Proxy API call.
#   Path confinement runs before these rules, so every path in
#   input.request has already been checked; the input document is described
#   in docs/agent.md#gate.
#
#   Result: the set deny, each element {"rule", "msg", "policy"}. A request
#   is allowed when deny is empty.
#
#   The shipped rules deny nothing: admission already limits which pods may
#   mount the pipes. Admin policies, loaded from --policy-dir, live in
#   packages below pipeguard.agent.policy and define their own deny set,
#   which these rules collect.
package pipeguard.agent

deny contains d if {
	some name
	some v in data.pipeguard.agent.policy[name].deny
	d := {
		"rule": object.get(v, "rule", name),
		"msg": message(v, name),
		"policy": name,
	}
}

# A denial whose author forgot the message still says who denied what.
message(v, _) := v.msg if is_string(v.msg)

message(v, name) := sprintf("%s %s %s is denied by agent policy %q", [input.group, input.groupVersion, input.method, name]) if {
	not is_string(object.get(v, "msg", null))
}

# caller_label describes the caller in messages: its pod when known, else its
# username and pid.
caller_label := sprintf("pod %s/%s (service account %s, pid %d)", [
	input.caller.namespace,
	input.caller.podName,
	input.caller.serviceAccount,
	input.caller.pid,
]) if {
	input.caller.podName != ""
} else := sprintf("%s (pid %d, not in a known pod)", [input.caller.username, input.caller.pid])
