package pipeguard.agent_test

import data.pipeguard.agent

driver := {
	"username": "pipeguard:peer:uid:0", "source": "peer", "pid": 4242, "uid": 0,
	"podUID": "5f0b8e4a-1c2d-4e3f-8a9b-0c1d2e3f4a5b", "podName": "csi-node-x",
	"namespace": "csi", "serviceAccount": "csi-node",
}

request_input(group, method, caller) := {
	"apiVersion": "pipeguard.io/agent/v1",
	"group": group,
	"groupVersion": "v1",
	"method": method,
	"fullMethod": sprintf("/v1.%s/%s", [group, method]),
	"mutating": true,
	"caller": caller,
	"request": {},
}

test_shipped_rules_deny_nothing if {
	count(agent.deny) == 0 with input as request_input("disk", "PartitionDisk", driver)
}

test_admin_denials_are_collected_with_their_policy if {
	ds := agent.deny with input as request_input("disk", "PartitionDisk", driver)
		with data.pipeguard.agent.policy.restrict.deny as {{"rule": "disk-only-csi", "msg": "no"}}
	ds == {{"rule": "disk-only-csi", "msg": "no", "policy": "restrict"}}
}

test_denial_without_message_gets_one if {
	some d in agent.deny with input as request_input("volume", "FormatVolume", driver)
		with data.pipeguard.agent.policy.strict.deny as {{"rule": "r"}}
	d.msg == `volume v1 FormatVolume is denied by agent policy "strict"`
}

test_denial_without_rule_is_named_after_its_policy if {
	some d in agent.deny with input as request_input("volume", "FormatVolume", driver)
		with data.pipeguard.agent.policy.strict.deny as {{"msg": "m"}}
	d.rule == "strict"
}

test_caller_label_with_pod if {
	agent.caller_label == "pod csi/csi-node-x (service account csi-node, pid 4242)" with input as request_input("disk", "ListDiskIDs", driver)
}

test_caller_label_without_pod if {
	c := object.union(driver, {"podName": "", "namespace": "", "serviceAccount": ""})
	agent.caller_label == "pipeguard:peer:uid:0 (pid 4242, not in a known pod)" with input as request_input("disk", "ListDiskIDs", c)
}
