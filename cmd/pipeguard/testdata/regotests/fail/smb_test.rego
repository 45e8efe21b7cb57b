package pipeguard.admission.smbonly_test

import data.pipeguard.admission.smbonly

test_expects_the_wrong_thing if {
	count(smbonly.violation) == 0 with input as {"pod": {"serviceAccountName": "default"}, "mounts": [{"container": "c", "pipe": "csi-proxy-smb-v1"}]}
}
