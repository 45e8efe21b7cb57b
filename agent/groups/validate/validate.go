package validate

import (
	"regexp"
	"strings"

	"github.com/pipeguard/pipeguard/agent/apierr"
	"github.com/pipeguard/pipeguard/agent/confine"
)

var (
	volumeIDRe    = regexp.MustCompile(`^\\\\\?\\Volume\{[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\}\\?$`)
	serviceNameRe = regexp.MustCompile(`^[A-Za-z0-9_.$ -]{1,256}$`)
	hostRe        = regexp.MustCompile(`^[A-Za-z0-9.\-:\[\]%]{1,255}$`)
	iqnRe         = regexp.MustCompile(`^(iqn\.[0-9]{4}-[0-9]{2}\.[A-Za-z0-9.\-:]+|eui\.[0-9A-Fa-f]{16}|naa\.[0-9A-Fa-f]{16,32})$`)
)

// uncForbidden are characters not allowed in a server or share name.
const uncForbidden = `/:*?"<>|`

// VolumeID accepts \\?\Volume{GUID}\, the form Get-Volume reports as UniqueId.
func VolumeID(field, v string) error {
	if !volumeIDRe.MatchString(v) {
		return apierr.Invalidf(field, `%s is not a volume id: give one like \\?\Volume{00000000-0000-0000-0000-000000000000}\ as returned by ListVolumesOnDisk`, confine.Quote(v))
	}
	return nil
}

// ServiceName accepts the characters Windows service names use.
func ServiceName(field, v string) error {
	if !serviceNameRe.MatchString(v) {
		return apierr.Invalidf(field, "%s is not a service name: use 1 to 256 letters, digits, spaces and _.$- (no wildcards)", confine.Quote(v))
	}
	return nil
}

// Host accepts a DNS name or an IPv4 or IPv6 address.
func Host(field, v string) error {
	if !hostRe.MatchString(v) {
		return apierr.Invalidf(field, "%s is not a host name or IP address", confine.Quote(v))
	}
	return nil
}

// IQN accepts iSCSI names in the iqn., eui. and naa. formats (RFC 3720).
func IQN(field, v string) error {
	if len(v) > 223 || !iqnRe.MatchString(v) {
		return apierr.Invalidf(field, "%s is not an iSCSI name: give one like iqn.2001-04.com.example:storage.disk1", confine.Quote(v))
	}
	return nil
}

// Text accepts free text such as user names and secrets: no control
// characters (which includes NUL, impossible in an environment variable),
// at most max bytes, and not empty when required.
func Text(field, v string, max int, required bool) error {
	switch {
	case v == "" && required:
		return apierr.Invalidf(field, "is empty")
	case len(v) > max:
		return apierr.Invalidf(field, "is %d bytes long, over the limit of %d", len(v), max)
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return apierr.Invalidf(field, "contains a control character")
		}
	}
	return nil
}

// UNC checks an SMB path \\server\share[\dir...], after turning '/' into
// '\' as CSI Proxy does, and returns it normalized with its root mapping
// path \\server\share.
func UNC(field, v string) (path, root string, err error) {
	bad := func(why string) (string, string, error) {
		return "", "", apierr.Invalidf(field, `%s %s: give a share path like \\server\share\dir`, confine.Quote(v), why)
	}
	if v == "" {
		return bad("is empty")
	}
	if len(v) > 1024 {
		return bad("is over 1024 bytes long")
	}
	if err := Text(field, v, 1024, true); err != nil {
		return "", "", err
	}
	p := strings.ReplaceAll(v, "/", `\`)
	if !strings.HasPrefix(p, `\\`) || strings.HasPrefix(p, `\\?\`) || strings.HasPrefix(p, `\\.\`) {
		return bad(`is not a UNC path (\\server\share)`)
	}
	var segs []string
	for i, s := range strings.Split(p[2:], `\`) {
		switch {
		case s == "" && i < 2:
			return bad("has no server or no share name")
		case s == "":
			continue
		case s == "." || s == "..":
			return bad(`contains a "." or ".." segment`)
		case i == 0 && strings.ContainsAny(s, `/*?"<>|`), i > 0 && strings.ContainsAny(s, uncForbidden):
			return bad(`contains one of :*?"<>|`)
		}
		segs = append(segs, s)
	}
	if len(segs) < 2 {
		return bad("has no server or no share name")
	}
	return `\\` + strings.Join(segs, `\`), `\\` + segs[0] + `\` + segs[1], nil
}
