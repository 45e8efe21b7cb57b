package identity

import "testing"

const (
	cid    = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	podUID = "5f0b8e4a-1c2d-4e3f-8a9b-0c1d2e3f4a5b"
	podSys = "5f0b8e4a_1c2d_4e3f_8a9b_0c1d2e3f4a5b"
)

func TestParseCgroup(t *testing.T) {
	cases := map[string]struct {
		content string
		want    Container
		ok      bool
	}{
		"v2 systemd containerd": {
			content: "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podSys + ".slice/cri-containerd-" + cid + ".scope\n",
			want:    Container{ID: cid, Runtime: "containerd", PodUID: podUID}, ok: true,
		},
		"v2 systemd cri-o guaranteed": {
			content: "0::/kubepods.slice/kubepods-pod" + podSys + ".slice/crio-" + cid + ".scope\n",
			want:    Container{ID: cid, Runtime: "cri-o", PodUID: podUID}, ok: true,
		},
		"v2 systemd cri-o with container sub-cgroup": {
			content: "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + podSys + ".slice/crio-" + cid + ".scope/container\n",
			want:    Container{ID: cid, Runtime: "cri-o", PodUID: podUID}, ok: true,
		},
		"v2 systemd cri-o conmon is the runtime helper, not the container": {
			content: "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podSys + ".slice/crio-conmon-" + cid + ".scope\n",
			want:    Container{Runtime: "cri-o", PodUID: podUID}, ok: true,
		},
		"v2 systemd docker": {
			content: "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + podSys + ".slice/docker-" + cid + ".scope\n",
			want:    Container{ID: cid, Runtime: "docker", PodUID: podUID}, ok: true,
		},
		"v2 cgroupfs containerd": {
			content: "0::/kubepods/burstable/pod" + podUID + "/" + cid + "\n",
			want:    Container{ID: cid, PodUID: podUID}, ok: true,
		},
		"v2 cgroupfs cri-o": {
			content: "0::/kubepods/besteffort/pod" + podUID + "/crio-" + cid + "\n",
			want:    Container{ID: cid, Runtime: "cri-o", PodUID: podUID}, ok: true,
		},
		"v1 cgroupfs guaranteed, several hierarchies": {
			content: "12:pids:/kubepods/pod" + podUID + "/" + cid + "\n" +
				"11:cpu,cpuacct:/kubepods/pod" + podUID + "/" + cid + "\n" +
				"1:name=systemd:/kubepods/pod" + podUID + "/" + cid + "\n",
			want: Container{ID: cid, PodUID: podUID}, ok: true,
		},
		"v1 systemd containerd": {
			content: "13:memory:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podSys + ".slice/cri-containerd-" + cid + ".scope\n" +
				"0::/\n",
			want: Container{ID: cid, Runtime: "containerd", PodUID: podUID}, ok: true,
		},
		"v1 kubelet nested under a node cgroup": {
			content: "4:devices:/system.slice/containerd.service/kubepods/burstable/pod" + podUID + "/" + cid + "\n",
			want:    Container{ID: cid, PodUID: podUID}, ok: true,
		},
		"pod cgroup without a container": {
			content: "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podSys + ".slice\n",
			want:    Container{PodUID: podUID}, ok: true,
		},
		"host service":    {content: "0::/system.slice/kubelet.service\n"},
		"host user shell": {content: "0::/user.slice/user-0.slice/session-3.scope\n"},
		"pod-like name outside kubepods": {
			content: "0::/system.slice/pod" + podUID + "/" + cid + "\n",
		},
		"short container id is not a container": {
			content: "0::/kubepods/burstable/pod" + podUID + "/abc123\n",
			want:    Container{PodUID: podUID}, ok: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok, err := ParseCgroup(tc.content)
			if ok != tc.ok || got != tc.want || err != nil {
				t.Fatalf("ParseCgroup = %+v, %v, %v; want %+v, %v, nil", got, ok, err, tc.want, tc.ok)
			}
		})
	}
}
