package pipepath

import "strings"

// JoinSubPath returns the host path a container sees when a volumeMount
// with subPath is applied to a hostPath volume at volumePath, with Windows
// semantics: `\\.\pipe\` and `csi-proxy-disk-v1` give
// `\\.\pipe\csi-proxy-disk-v1`. The result is meant for Classify.
//
// The kubelet refuses a subPath that is absolute or climbs out of the
// volume, but admission must not rely on that. For such a subPath:
//   - on a volume Classify does not call NotPipe, the result keeps both parts
//     around a run of three separators, which Classify reports as Ambiguous;
//   - on an ordinary volume, a subPath that is itself pipe-like is returned
//     alone, so it is judged as the path it names;
//   - otherwise the two are joined and resolved as Windows would
//     (`C:\` and `..\..\pipe` give the directory `C:\pipe`).
//
// ClassifyMount gives the same verdicts with a reason that names the subPath.
func JoinSubPath(volumePath, subPath string) string {
	vol, sub := strings.TrimSpace(volumePath), strings.TrimSpace(subPath)
	switch {
	case sub == "":
		return volumePath
	case subPathStaysInside(sub):
		return join(vol, sub)
	case Classify(vol).Class != NotPipe:
		return strings.TrimRight(vol, `\/`) + `\\\` + strings.TrimLeft(sub, `\/`)
	case Classify(sub).Class != NotPipe:
		return sub
	}
	return join(vol, sub)
}

// ClassifyMount classifies the host path a volumeMount reaches: the
// hostPath volume at volumePath, or the subPath inside it.
func ClassifyMount(volumePath, subPath string) Result {
	r := Classify(JoinSubPath(volumePath, subPath))
	sub := strings.TrimSpace(subPath)
	if sub == "" || subPathStaysInside(sub) || r.Class == NotPipe {
		return r
	}
	r.Pipe, r.Class, r.Reason = "", Ambiguous, reasonSubPathPipe
	if r.Normalized == "" {
		r.Normalized = Classify(volumePath).Normalized
	}
	return r
}

// join puts sub below vol with the separator vol already uses.
func join(vol, sub string) string {
	if vol == "" || strings.HasSuffix(vol, `\`) || strings.HasSuffix(vol, "/") {
		return vol + sub
	}
	if strings.Contains(vol, "/") && !strings.Contains(vol, `\`) {
		return vol + "/" + sub
	}
	return vol + `\` + sub
}

// subPathStaysInside reports a relative subPath whose `..` segments never
// climb above the volume. A segment of dots and spaces counts as `..`:
// Windows trims it and some layers then read it as one.
func subPathStaysInside(sub string) bool {
	if sub[0] == '\\' || sub[0] == '/' || (len(sub) >= 2 && sub[1] == ':') {
		return false
	}
	depth := 0
	for seg := range strings.FieldsFuncSeq(sub, func(r rune) bool { return r == '\\' || r == '/' }) {
		switch t := strings.TrimRight(seg, ". "); {
		case t == "":
			if strings.TrimRight(seg, " ") == "." {
				continue
			}
			if depth--; depth < 0 {
				return false
			}
		default:
			depth++
		}
	}
	return true
}
