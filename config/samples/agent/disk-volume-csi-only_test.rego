package pipeguard.agent.policy.disk_volume_csi_only_test

import data.pipeguard.agent.policy.disk_volume_csi_only as policy

csi_node := {
	"username": "pipeguard:peer:uid:0", "pid": 4242,
	"podName": "csi-azuredisk-node-abcde", "namespace": "kube-system", "serviceAccount": "csi-azuredisk-node-sa",
}

call(group, method, caller) := {
	"apiVersion": "pipeguard.io/agent/v1", "group": group, "groupVersion": "v1", "method": method,
	"mutating": true, "caller": caller, "request": {},
}

test_csi_node_plugin_may_format if {
	count(policy.deny) == 0 with input as call("volume", "FormatVolume", csi_node)
}

test_other_service_account_is_denied if {
	c := object.union(csi_node, {"serviceAccount": "default", "podName": "debug"})
	some d in policy.deny with input as call("disk", "PartitionDisk", c)
	d.rule == "disk-volume-csi-only"
	d.msg == `disk v1 PartitionDisk is allowed only to pods of namespace "kube-system" running as service account "csi-azuredisk-node-sa", and the caller is pod kube-system/debug (service account "default", pid 4242); run the CSI node plugin with that service account, or change allowed_namespace and allowed_service_account in policy disk_volume_csi_only`
}

test_host_process_outside_pods_is_denied if {
	c := {"username": "pipeguard:peer:uid:1000", "pid": 99, "podName": "", "namespace": "", "serviceAccount": ""}
	some d in policy.deny with input as call("volume", "MountVolume", c)
	contains(d.msg, "the caller is pipeguard:peer:uid:1000 (pid 99, not in a known pod)")
}

test_other_groups_are_not_restricted if {
	c := object.union(csi_node, {"namespace": "default"})
	count(policy.deny) == 0 with input as call("filesystem", "Mkdir", c)
}
