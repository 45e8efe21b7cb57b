package identity

import (
	"regexp"
	"strings"
)

// Container is what a process's cgroup says about it.
type Container struct {
	// ID is the container id (64 hex digits); empty for a pod's runtime
	// helper (cri-o conmon) or when none was found.
	ID string
	// Runtime is "containerd", "cri-o", "docker", or "" when the cgroupfs
	// driver does not say (containerd and docker name the cgroup by id alone).
	Runtime string
	// PodUID is the pod's UID, with dashes.
	PodUID string
}

var (
	podCgroupfs = regexp.MustCompile(`^pod([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$`)
	podSystemd  = regexp.MustCompile(`^kubepods(?:-[a-z]+)?-pod([0-9a-f]{8}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{12})\.slice$`)
	containers  = []struct {
		re      *regexp.Regexp
		runtime string
	}{
		{regexp.MustCompile(`^cri-containerd-([0-9a-f]{64})\.scope$`), "containerd"},
		{regexp.MustCompile(`^crio-([0-9a-f]{64})(?:\.scope)?$`), "cri-o"},
		{regexp.MustCompile(`^docker-([0-9a-f]{64})\.scope$`), "docker"},
		{regexp.MustCompile(`^([0-9a-f]{64})$`), ""},
	}
	conmon = regexp.MustCompile(`^crio-conmon-[0-9a-f]{64}(?:\.scope)?$`)
)

// ParseCgroup reads the content of /proc/PID/cgroup (cgroup v1 or v2) and
// returns the container and pod of a Kubernetes container, for the
// cgroupfs and systemd cgroup drivers and the containerd, cri-o and docker
// naming forms. ok is false when the process is not in a pod's cgroup.
//
// Proc reads the file through procfs (procfs.Proc.Cgroups), which splits
// its lines; this function splits them itself for content already in hand,
// since procfs parses the file only from a procfs mount. Recognising a
// pod's and a container's cgroup in the paths is Kubernetes' naming, which
// procfs does not know: containerOf does it for both.
func ParseCgroup(content string) (c Container, ok bool) {
	var paths []string
	for _, line := range strings.Split(content, "\n") {
		// hierarchy-ID:controllers:path; the path may itself contain ':'.
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) == 3 {
			paths = append(paths, parts[2])
		}
	}
	return containerOf(paths)
}

// containerOf returns the container and pod of the first cgroup path that
// lies in a pod's cgroup.
func containerOf(paths []string) (Container, bool) {
	for _, p := range paths {
		if c, ok := parsePath(p); ok {
			return c, true
		}
	}
	return Container{}, false
}

func parsePath(p string) (Container, bool) {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		var uid string
		if m := podCgroupfs.FindStringSubmatch(s); m != nil {
			uid = m[1]
		} else if m := podSystemd.FindStringSubmatch(s); m != nil {
			uid = strings.ReplaceAll(m[1], "_", "-")
		} else {
			continue
		}
		// A pod cgroup must sit below a kubepods cgroup.
		if !underKubepods(segs[:i]) {
			continue
		}
		c := Container{PodUID: uid}
		for _, cs := range segs[i+1:] {
			if conmon.MatchString(cs) {
				c.Runtime = "cri-o"
				return c, true
			}
			for _, form := range containers {
				if m := form.re.FindStringSubmatch(cs); m != nil {
					c.ID, c.Runtime = m[1], form.runtime
					return c, true
				}
			}
		}
		return c, true
	}
	return Container{}, false
}

func underKubepods(segs []string) bool {
	for _, s := range segs {
		if s == "kubepods" || s == "kubepods.slice" || strings.HasPrefix(s, "kubepods-") && strings.HasSuffix(s, ".slice") {
			return true
		}
	}
	return false
}
