//go:build wine && linux

package wine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFilesystemConfinement drives the filesystem API through its pipes as
// a pod holding them would: work inside the kubelet directory succeeds and
// shows on the disk; paths outside the roots, traversal, the root itself
// and links planted to leave it are refused with their rule, change nothing
// outside, and are audited as denials.
func TestFilesystemConfinement(t *testing.T) {
	p := need(t)
	a := startAgent(t, p)

	// A pod's emptyDir holding links to C:\windows, planted on the host:
	// Wine shows a host link as a plain directory, with no reparse point,
	// so only the final path of a handle reveals where it leads.
	podDir, podHost := kubelet(p, `pods\0b6c\volumes\kubernetes.io~empty-dir\scratch`)
	if err := os.MkdirAll(podHost, 0o755); err != nil {
		t.Fatal(err)
	}
	windowsHost := p.path(`C:\windows`)
	rel, err := filepath.Rel(podHost, windowsHost)
	if err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"abs": windowsHost, "rel": rel} {
		if err := os.Symlink(target, filepath.Join(podHost, name)); err != nil {
			t.Fatal(err)
		}
	}
	// A host link outside the pods directory leading into another pod's
	// directory: Wine shows it as a plain directory, so only its final
	// path says that a link to it leads into that pod's directory.
	_, victimHost := kubelet(p, `pods\0b6d\volumes\kubernetes.io~secret\token`)
	if err := os.MkdirAll(victimHost, 0o755); err != nil {
		t.Fatal(err)
	}
	hostLink, hostLinkHost := kubelet(p, `plugins\pipeguard-hostlink`)
	if err := os.MkdirAll(filepath.Dir(hostLinkHost), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(filepath.Dir(filepath.Dir(victimHost))), hostLinkHost); err != nil {
		t.Fatal(err)
	}
	steal, _ := kubelet(p, `plugins\pipeguard-steal`)
	inside, insideHost := kubelet(p, `pods\0b6c\volumes\kubernetes.io~empty-dir\scratch\made`)
	fs := "filesystem/v1"
	type want struct{ code, words string }
	cases := []struct {
		c    call
		want want
	}{
		{call{fs, "Mkdir", map[string]any{"path": inside}}, want{"OK", ""}},
		{call{fs, "PathExists", map[string]any{"path": inside}}, want{"OK", ""}},
		{call{fs, "Mkdir", map[string]any{"path": `C:\Windows\evil`}}, want{"PermissionDenied", "outside-roots"}},
		{call{fs, "Mkdir", map[string]any{"path": `C:\var\lib\kubelet\..\..\evil`}}, want{"InvalidArgument", "traversal"}},
		{call{fs, "Mkdir", map[string]any{"path": `\\?\C:\Windows\evil`}}, want{"InvalidArgument", ""}},
		{call{fs, "Rmdir", map[string]any{"path": `C:\var\lib\kubelet`, "force": true}}, want{"PermissionDenied", "root-target"}},
		{call{"filesystem/v2alpha1", "RmdirContents", map[string]any{"path": `C:\var\lib\kubelet`}}, want{"PermissionDenied", "root-target"}},
		{call{fs, "Mkdir", map[string]any{"path": podDir + `\abs\pipeguard-evil-abs`}}, want{"PermissionDenied", "symlink-escape"}},
		{call{fs, "Mkdir", map[string]any{"path": podDir + `\rel\pipeguard-evil-rel`}}, want{"PermissionDenied", "symlink-escape"}},
		{call{fs, "PathExists", map[string]any{"path": podDir + `\abs\system32`}}, want{"PermissionDenied", "symlink-escape"}},
		{call{"filesystem/v2alpha1", "RmdirContents", map[string]any{"path": podDir + `\abs`}}, want{"PermissionDenied", "symlink-escape"}},
		{call{fs, "CreateSymlink", map[string]any{"sourcePath": podDir + `\link`, "targetPath": `C:\Windows`}}, want{"PermissionDenied", "outside-roots"}},
		{call{fs, "CreateSymlink", map[string]any{"sourcePath": hostLink + `\volumes\kubernetes.io~secret\token`, "targetPath": steal}},
			want{"PermissionDenied", "leads into the directory of pod 0b6d"}},
		// Paths handed to host commands: the final path of the handle.
		{call{"volume/v1", "MountVolume", map[string]any{"volumeId": markVolume, "targetPath": podDir + `\abs\mnt`}}, want{"PermissionDenied", "symlink-escape"}},
		{call{"volume/v1", "GetVolumeIDFromTargetPath", map[string]any{"targetPath": podDir + `\rel\volume`}}, want{"PermissionDenied", "symlink-escape"}},
		{call{"smb/v1", "NewSmbGlobalMapping", map[string]any{"remotePath": markShare, "localPath": podDir + `\abs\share`}}, want{"PermissionDenied", "symlink-escape"}},
	}
	var cs []call
	for _, tc := range cases {
		cs = append(cs, tc.c)
	}
	results := calls(t, p, cs...)
	denied := 0
	for i, r := range results {
		w := cases[i].want
		if r.Code != w.code || !strings.Contains(r.Message, w.words) {
			t.Errorf("%s: %s %q, want %s naming %q", cases[i].c, r.Code, r.Message, w.code, w.words)
		}
		if r.Code != "OK" {
			denied++
		}
	}
	if !exists(insideHost) {
		t.Errorf("Mkdir %s answered OK but %s does not exist", inside, insideHost)
	}
	for _, name := range []string{"evil", "pipeguard-evil-abs", "pipeguard-evil-rel"} {
		if exists(filepath.Join(windowsHost, name)) || exists(filepath.Join(filepath.Dir(windowsHost), name)) {
			t.Errorf("%s was created outside the kubelet directory", name)
		}
	}
	if !exists(filepath.Join(windowsHost, "system32")) {
		t.Error("C:\\windows\\system32 is gone")
	}
	var deny int
	for _, rec := range a.records(t) {
		if rec.Annotations["pipeguard.io/decision"] == "deny" {
			deny++
			if rec.Annotations["pipeguard.io/rule"] == "" {
				t.Errorf("deny record %s names no rule", rec.AuditID)
			}
		}
	}
	if deny != denied {
		t.Errorf("%d deny records for %d refused calls", deny, denied)
	}
}
