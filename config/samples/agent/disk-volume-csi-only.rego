# Sample pipeguard-agent policy: only the CSI node plugin may call the disk
# and volume API groups (partitioning, formatting, mounting volumes). Every
# other caller, including host processes that are not in a known pod, is
# denied. Other groups (filesystem, smb, system, iscsi) are not restricted
# here.
#
# Install: put this file in the agent's --policy-dir (for example through a
# ConfigMap volume; see kustomization.yaml). Edit the namespace and service
# account below to match your CSI driver. Test: pipeguard policy test
# config/samples/agent
package pipeguard.agent.policy.disk_volume_csi_only

allowed_namespace := "kube-system"

allowed_service_account := "csi-azuredisk-node-sa"

restricted_groups := {"disk", "volume"}

deny contains {"rule": "disk-volume-csi-only", "msg": msg} if {
	input.group in restricted_groups
	not allowed_caller
	msg := sprintf(
		"%s %s %s is allowed only to pods of namespace %q running as service account %q, and the caller is %s; run the CSI node plugin with that service account, or change allowed_namespace and allowed_service_account in policy disk_volume_csi_only",
		[input.group, input.groupVersion, input.method, allowed_namespace, allowed_service_account, caller],
	)
}

allowed_caller if {
	input.caller.namespace == allowed_namespace
	input.caller.serviceAccount == allowed_service_account
}

caller := sprintf("pod %s/%s (service account %q, pid %d)", [
	input.caller.namespace, input.caller.podName, input.caller.serviceAccount, input.caller.pid,
]) if {
	input.caller.podName != ""
} else := sprintf("%s (pid %d, not in a known pod)", [input.caller.username, input.caller.pid])
