package pipepath

import "testing"

func TestJoinSubPath(t *testing.T) {
	tests := map[string]struct {
		volume, subPath string
		joined          string // checked when set
		class           Class
		pipe            string
		mountClass      Class  // ClassifyMount's class when it differs from class
		mountReason     string // ClassifyMount's reason, for Ambiguous
	}{
		"pipe namespace plus pipe name":       {volume: `\\.\pipe\`, subPath: csi, joined: `\\.\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
		"pipe namespace without separator":    {volume: `\\.\pipe`, subPath: csi, joined: `\\.\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
		"device namespace plus pipe path":     {volume: `\\.\`, subPath: `pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
		"UNC namespace plus pipe name":        {volume: `\\localhost\pipe`, subPath: "CSI-Proxy-Disk-V1", class: Pipe, pipe: csi},
		"pipe prefix directory plus rest":     {volume: `\\.\pipe\csi-proxy`, subPath: "disk-v1", class: Pipe, pipe: `csi-proxy\disk-v1`},
		"dot-dot that stays inside":           {volume: `\\.\pipe\`, subPath: `x\..\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
		"empty subPath":                       {volume: `\\.\pipe\csi-proxy-disk-v1`, subPath: " ", joined: `\\.\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
		"ordinary volume":                     {volume: `C:\data`, subPath: `logs\app`, joined: `C:\data\logs\app`, class: NotPipe},
		"Linux volume":                        {volume: `/var/lib`, subPath: "x", joined: `/var/lib/x`, class: NotPipe},
		"drive root climbed out of":           {volume: `C:\`, subPath: `..\..\pipe`, joined: `C:\..\..\pipe`, class: NotPipe},
		"drive root climbed into a prefix":    {volume: `C:\data`, subPath: `..\..\\.\pipe\csi-proxy-disk-v1`, class: NotPipe},
		"pipe path as subPath of a drive":     {volume: `C:\data`, subPath: `\\.\pipe\csi-proxy-disk-v1`, joined: `\\.\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi, mountClass: Ambiguous, mountReason: reasonSubPathPipe},
		"absolute subPath on pipe namespace":  {volume: `\\.\pipe\`, subPath: `\\.\pipe\csi-proxy-disk-v1`, class: Ambiguous, mountReason: reasonSubPathPipe},
		"rooted subPath on pipe namespace":    {volume: `\\.\pipe\`, subPath: `\csi-proxy-disk-v1`, class: Ambiguous, mountReason: reasonSubPathPipe},
		"drive subPath on pipe namespace":     {volume: `\\.\pipe\`, subPath: `C:\x`, class: Ambiguous, mountReason: reasonSubPathPipe},
		"dot-dot out of a pipe":               {volume: `\\.\pipe\a`, subPath: `..\csi-proxy-disk-v1`, class: Ambiguous, mountReason: reasonSubPathPipe},
		"dot-dot out of the pipe namespace":   {volume: `\\.\pipe\`, subPath: `..`, class: Ambiguous, mountReason: reasonSubPathPipe},
		"dot-space then dot-dot":              {volume: `\\.\pipe\`, subPath: `. \..\x`, class: Ambiguous, mountReason: reasonSubPathPipe},
		"dot-dot out of the device namespace": {volume: `\\.\`, subPath: `..\x`, class: Ambiguous, mountReason: reasonSubPathPipe},
		"dot-dot out of a UNC server":         {volume: `\\localhost`, subPath: `..\x`, class: Ambiguous, mountReason: reasonSubPathPipe},
		"encoded climb in subPath":            {volume: `\\.\pipe\`, subPath: `x%5c..%5c..%5cy`, class: Ambiguous, mountReason: reasonEncoded},
		"NUL in subPath":                      {volume: `\\.\pipe\`, subPath: "csi-proxy-disk-v1\x00", class: Ambiguous, mountReason: reasonNUL},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			joined := JoinSubPath(tc.volume, tc.subPath)
			if tc.joined != "" && joined != tc.joined {
				t.Errorf("JoinSubPath(%q, %q) = %q, want %q", tc.volume, tc.subPath, joined, tc.joined)
			}
			got := Classify(joined)
			if got.Class != tc.class || got.Pipe != tc.pipe {
				t.Errorf("Classify(JoinSubPath(%q, %q) = %q) = %q %q (reason %q), want %q %q",
					tc.volume, tc.subPath, joined, got.Class, got.Pipe, got.Reason, tc.class, tc.pipe)
			}
			wantClass, wantPipe := tc.class, tc.pipe
			if tc.mountClass != "" {
				wantClass, wantPipe = tc.mountClass, ""
			}
			m := ClassifyMount(tc.volume, tc.subPath)
			if m.Class != wantClass || m.Pipe != wantPipe {
				t.Errorf("ClassifyMount(%q, %q) = %q %q, want %q %q", tc.volume, tc.subPath, m.Class, m.Pipe, wantClass, wantPipe)
			}
			if m.Reason != tc.mountReason {
				t.Errorf("ClassifyMount(%q, %q).Reason = %q, want %q", tc.volume, tc.subPath, m.Reason, tc.mountReason)
			}
		})
	}
}
