package validate

import (
	"strings"
	"testing"
)

func TestValidators(t *testing.T) {
	cases := map[string]struct {
		err  error
		want string // "" means valid
	}{
		"volume id":               {VolumeID("volume_id", `\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\`), ""},
		"volume id without slash": {VolumeID("volume_id", `\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}`), ""},
		"volume id wildcard":      {VolumeID("volume_id", `*`), `volume_id: "*" is not a volume id`},
		"volume id injection":     {VolumeID("volume_id", `\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\"; calc`), "is not a volume id"},
		"service":                 {ServiceName("name", "MSSQL$X"), ""},
		"service wildcard":        {ServiceName("name", "csi*"), `name: "csi*" is not a service name`},
		"host ipv4":               {Host("target_address", "10.0.0.1"), ""},
		"host ipv6":               {Host("target_address", "[fe80::1%3]"), ""},
		"host injection":          {Host("target_address", "10.0.0.1; calc"), "is not a host name"},
		"iqn":                     {IQN("iqn", "iqn.2001-04.com.example:storage.disk1"), ""},
		"iqn injection":           {IQN("iqn", "iqn.2001-04.com.example:x'; calc"), "is not an iSCSI name"},
		"text":                    {Text("password", `p@ss'"$(x)`, 256, true), ""},
		"text newline":            {Text("username", "a\nb", 256, true), "username: contains a control character"},
		"text empty required":     {Text("chap_username", "", 256, true), "chap_username: is empty"},
		"text too long":           {Text("chap_secret", strings.Repeat("a", 300), 256, false), "over the limit of 256"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.want == "" {
				if tc.err != nil {
					t.Fatalf("unexpected error %v", tc.err)
				}
				return
			}
			if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", tc.err, tc.want)
			}
		})
	}
}

func TestUNC(t *testing.T) {
	cases := map[string]struct {
		in, path, root, err string
	}{
		"share":            {in: `\\srv\share`, path: `\\srv\share`, root: `\\srv\share`},
		"subdir":           {in: `\\srv\share\a\b\`, path: `\\srv\share\a\b`, root: `\\srv\share`},
		"forward slashes":  {in: `//srv/share/a`, path: `\\srv\share\a`, root: `\\srv\share`},
		"no share":         {in: `\\srv`, err: "has no server or no share name"},
		"empty server":     {in: `\\\share`, err: "has no server or no share name"},
		"not unc":          {in: `C:\x`, err: "is not a UNC path"},
		"long path prefix": {in: `\\?\UNC\srv\share`, err: "is not a UNC path"},
		"traversal":        {in: `\\srv\share\..\other`, err: `contains a "." or ".." segment`},
		"wildcard":         {in: `\\srv\sha*`, err: "contains one of"},
		"newline":          {in: "\\\\srv\\share\nx", err: "contains a control character"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, r, err := UNC("remote_path", tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("UNC(%q) error %v, want %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil || p != tc.path || r != tc.root {
				t.Fatalf("UNC(%q) = %q, %q, %v; want %q, %q", tc.in, p, r, err, tc.path, tc.root)
			}
		})
	}
}
