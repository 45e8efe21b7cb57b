package identity

import (
	"errors"
	"strings"
	"testing"
)

// Where /proc/PID/cgroup places a process, as the rules see it.
const (
	placeHost = "host"
	placePod  = "pod"
	placeNone = "unattributed"
)

// hostileCgroups are /proc/PID/cgroup contents as an agent reads them from
// the host's cgroup namespace and from its own, with the forms of both
// cgroup drivers and of containerd and cri-o, and lines the kernel never
// writes. Every one that is not plainly a host's or a pod's cgroup must
// place its process nowhere: taken for the host, it would pass rule
// pod-link unchecked.
var hostileCgroups = map[string]struct {
	content string
	place   string
	why     string // in the error, for placeNone
}{
	"host service, systemd":  {content: "0::/system.slice/kubelet.service\n", place: placeHost},
	"host shell, cgroup v1":  {content: "12:pids:/user.slice/user-0.slice/session-3.scope\n1:name=systemd:/user.slice/user-0.slice/session-3.scope\n0::/\n", place: placeHost},
	"host root cgroup":       {content: "0::/\n", place: placeHost},
	"pod, systemd, v2":       {content: "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podSys + ".slice/cri-containerd-" + cid + ".scope\n", place: placePod},
	"pod, cgroupfs, cri-o":   {content: "0::/kubepods/besteffort/pod" + podUID + "/crio-" + cid + "\n", place: placePod},
	"pod with a colon in it": {content: "0::/kubepods/pod" + podUID + "/" + cid + ":x\n", place: placePod},

	// An agent in its own cgroup namespace sees every other cgroup
	// relative to its own.
	"same QoS class from a cgroup namespace, systemd containerd": {
		content: "0::/../../kubepods-burstable-pod" + podSys + ".slice/cri-containerd-" + cid + ".scope\n",
		place:   placeNone, why: "climbs out of the agent's cgroup namespace"},
	"same QoS class from a cgroup namespace, systemd cri-o": {
		content: "0::/../../kubepods-burstable-pod" + podSys + ".slice/crio-" + cid + ".scope\n",
		place:   placeNone, why: "climbs out"},
	"other QoS class from a cgroup namespace, systemd": {
		content: "0::/../../../kubepods-besteffort.slice/kubepods-besteffort-pod" + podSys + ".slice/cri-containerd-" + cid + ".scope\n",
		place:   placeNone, why: "climbs out"},
	"guaranteed pod from a burstable agent's namespace": {
		content: "0::/../../../kubepods-pod" + podSys + ".slice/crio-" + cid + ".scope\n",
		place:   placeNone, why: "climbs out"},
	"same QoS class from a cgroup namespace, cgroupfs containerd": {
		content: "0::/../../pod" + podUID + "/" + cid + "\n",
		place:   placeNone, why: "climbs out"},
	"other QoS class from a cgroup namespace, cgroupfs cri-o": {
		content: "0::/../../../besteffort/pod" + podUID + "/crio-" + cid + "\n",
		place:   placeNone, why: "climbs out"},
	"host service from a cgroup namespace": {
		content: "0::/../../../../system.slice/kubelet.service\n",
		place:   placeNone, why: "climbs out"},
	"sibling container of the agent's own pod": {
		content: "0::/../cri-containerd-" + cid + ".scope\n",
		place:   placeNone, why: "climbs out"},
	"cgroup v1, one hierarchy outside the namespace": {
		content: "12:pids:/kubepods/besteffort/pod" + podUID + "/" + cid + "\n" +
			"11:memory:/../../pod" + podUID + "/" + cid + "\n0::/\n",
		place: placeNone, why: "climbs out"},
	"cgroup v1, a host hierarchy before one outside the namespace": {
		content: "12:pids:/system.slice/containerd.service\n1:name=systemd:/../../system.slice/x.service\n",
		place:   placeNone, why: "climbs out"},
	"dot-dot in the middle, back out of kubepods": {
		content: "0::/kubepods.slice/../system.slice/kubelet.service\n",
		place:   placeNone, why: `has a ".." segment after a name`},
	"dot-dot in the middle, into a pod from a fake kubepods": {
		content: "0::/user.slice/kubepods.slice/../kubepods.slice/kubepods-pod" + podSys + ".slice\n",
		place:   placeNone, why: `has a ".." segment after a name`},
	"dot-dot last": {content: "0::/kubepods.slice/..\n", place: placeNone, why: `has a ".." segment after a name`},

	"relative path":             {content: "0::kubepods/pod" + podUID + "/" + cid + "\n", place: placeNone, why: "not an absolute path"},
	"empty path":                {content: "0::\n", place: placeNone, why: "not an absolute path"},
	"dot segment":               {content: "0::/./kubepods/pod" + podUID + "\n", place: placeNone, why: `"." segment`},
	"doubled slash":             {content: "0::/system.slice//kubelet.service\n", place: placeNone, why: "empty segment"},
	"trailing slash":            {content: "0::/system.slice/\n", place: placeNone, why: "empty segment"},
	"no colons":                 {content: "/kubepods/pod" + podUID + "\n", place: placeNone, why: "not a hierarchy-ID:controllers:path line"},
	"one colon":                 {content: "0:/system.slice\n", place: placeNone, why: "not a hierarchy-ID"},
	"garbage after a host line": {content: "0::/system.slice/kubelet.service\n\x00\xff garbage\n", place: placeNone, why: "not a hierarchy-ID"},
	"empty":                     {content: "", place: placeNone, why: "names no cgroup"},
	"blank lines only":          {content: "\n \n\t\n", place: placeNone, why: "names no cgroup"},
}

func placeOf(content string) (Container, string, error) {
	c, ok, err := ParseCgroup(content)
	switch {
	case err != nil:
		return c, placeNone, err
	case ok:
		return c, placePod, nil
	}
	return c, placeHost, nil
}

func TestParseCgroupHostile(t *testing.T) {
	for name, tc := range hostileCgroups {
		t.Run(name, func(t *testing.T) {
			c, place, err := placeOf(tc.content)
			if place != tc.place {
				t.Fatalf("placed %s (%+v, %v); want %s", place, c, err, tc.place)
			}
			if place != placeNone {
				return
			}
			var unplaced *UnplacedError
			if !errors.As(err, &unplaced) || c != (Container{}) {
				t.Fatalf("ParseCgroup = %+v, %v; want no container and an *UnplacedError", c, err)
			}
			for _, w := range []string{tc.why, "the caller is unattributed: neither a pod's nor the host's"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
}

// FuzzParseCgroup: whatever the content, a process placed on the host or
// in a pod has only rooted cgroup paths without "..", and a process placed
// in a pod has a pod UID.
func FuzzParseCgroup(f *testing.F) {
	for _, tc := range hostileCgroups {
		f.Add(tc.content)
	}
	f.Fuzz(func(t *testing.T, content string) {
		c, place, err := placeOf(content)
		if place == placeNone {
			if c != (Container{}) || err.Error() == "" {
				t.Fatalf("unattributed with %+v, %q", c, err)
			}
			return
		}
		for _, line := range strings.Split(content, "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			p := strings.SplitN(strings.TrimSpace(line), ":", 3)[2]
			if !strings.HasPrefix(p, "/") || strings.Contains(p+"/", "/../") {
				t.Fatalf("placed %s from path %q", place, p)
			}
		}
		if place == placePod && c.PodUID == "" {
			t.Fatalf("placed in a pod without a pod UID: %+v", c)
		}
	})
}
