package identity

import (
	"fmt"
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
// naming forms. ok is false when the process is not in a pod's cgroup. err
// (an *UnplacedError) says the content places the process nowhere: neither
// in a pod nor on the host.
//
// Proc reads the file through procfs (procfs.Proc.Cgroups), which splits
// its lines; this function splits them itself for content already in hand,
// since procfs parses the file only from a procfs mount. Recognising a
// pod's and a container's cgroup in the paths is Kubernetes' naming, which
// procfs does not know: containerOf does it for both.
func ParseCgroup(content string) (c Container, ok bool, err error) {
	var paths []string
	for _, line := range strings.Split(content, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		// hierarchy-ID:controllers:path; the path may itself contain ':'.
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			// A line the kernel would not write: what it hides may be
			// the pod's cgroup, so the process is not taken for the host.
			return Container{}, false, &UnplacedError{Path: line, Why: "is not a hierarchy-ID:controllers:path line"}
		}
		paths = append(paths, parts[2])
	}
	return containerOf(paths)
}

// UnplacedError says a cgroup path places its process neither in a pod nor
// on the host.
type UnplacedError struct {
	// Path is the cgroup path (or line) at fault.
	Path string
	// Why says what is wrong with it.
	Why string
}

func (e *UnplacedError) Error() string {
	const tail = ", so the caller is unattributed: neither a pod's nor the host's"
	if e.Path == "" && e.Why == noCgroup {
		return e.Why + tail
	}
	return fmt.Sprintf("cgroup path %q %s%s", e.Path, e.Why, tail)
}

const noCgroup = "/proc/PID/cgroup names no cgroup"

// containerOf returns the container and pod of the first cgroup path that
// lies in a pod's cgroup. Every path must be rooted where a host path is:
// the kernel shows a cgroup outside the reader's cgroup namespace relative
// to that namespace's root, as "/../../kubepods-...". The names after the
// ".." are below a cgroup the agent cannot see, so the parser cannot tell
// that they lie under kubepods (nor, in the cgroupfs form, that "pod<uid>"
// is Kubernetes' name at all); such a process is never taken for the host,
// and not for a pod either.
func containerOf(paths []string) (Container, bool, error) {
	if len(paths) == 0 {
		// Every process is in a cgroup: the kernel writes at least one line.
		return Container{}, false, &UnplacedError{Why: noCgroup}
	}
	for _, p := range paths {
		if err := checkRooted(p); err != nil {
			return Container{}, false, err
		}
	}
	for _, p := range paths {
		if c, ok := parsePath(p); ok {
			return c, true, nil
		}
	}
	return Container{}, false, nil
}

// checkRooted reports a path that does not name a cgroup from the root of
// the agent's cgroup namespace.
func checkRooted(p string) error {
	if !strings.HasPrefix(p, "/") {
		return &UnplacedError{Path: p, Why: "is not an absolute path"}
	}
	for i, s := range strings.Split(p, "/") {
		switch {
		case s == ".." && i == 1:
			return &UnplacedError{Path: p, Why: "climbs out of the agent's cgroup namespace"}
		case s == "..":
			// The kernel writes ".." only first; a path that climbs back
			// out of a name may end anywhere, the host included.
			return &UnplacedError{Path: p, Why: "has a \"..\" segment after a name, which the kernel never writes"}
		case s == ".":
			return &UnplacedError{Path: p, Why: "has a \".\" segment, which the kernel never writes"}
		}
	}
	if strings.Contains(p, "//") || len(p) > 1 && strings.HasSuffix(p, "/") {
		return &UnplacedError{Path: p, Why: "has an empty segment, which the kernel never writes"}
	}
	return nil
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
