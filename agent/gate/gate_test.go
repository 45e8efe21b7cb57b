package gate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	iscsiv1alpha2 "github.com/kubernetes-csi/csi-proxy/client/api/iscsi/v1alpha2"
	smbv1 "github.com/kubernetes-csi/csi-proxy/client/api/smb/v1"
	smbv1alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/smb/v1alpha1"

	"github.com/pipeguard/pipeguard/agent/identity"
)

const sample = "../../config/samples/agent/disk-volume-csi-only.rego"

func policyDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readSample(t *testing.T) string {
	b, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	csiNode = &identity.Caller{Source: identity.SourcePeer, PID: 4242, UID: 0, PodMapped: true, PodUID: "u1",
		PodName: "csi-azuredisk-node-abcde", Namespace: "kube-system", ServiceAccount: "csi-azuredisk-node-sa"}
	debugPod  = &identity.Caller{Source: identity.SourcePeer, PID: 77, UID: 0, PodMapped: true, PodUID: "u2", PodName: "debug", Namespace: "default", ServiceAccount: "default"}
	hostShell = &identity.Caller{Source: identity.SourcePeer, PID: 99, UID: 1000, GID: 1000, PodMapped: true}
)

func TestDecide(t *testing.T) {
	ctx := context.Background()
	shippedOnly, err := New(ctx, Options{Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	withSample, err := New(ctx, Options{Log: logr.Discard(), PolicyDir: policyDir(t, map[string]string{"sample.rego": readSample(t)})})
	if err != nil {
		t.Fatal(err)
	}
	if !shippedOnly.NeverDenies() || withSample.NeverDenies() {
		t.Fatalf("NeverDenies: shipped only %v, with the sample %v", shippedOnly.NeverDenies(), withSample.NeverDenies())
	}
	cases := map[string]struct {
		engine        *Engine
		group, method string
		caller        *identity.Caller
		allowed       bool
		rule, msg     string
	}{
		"default policy allows a disk call from anyone": {engine: shippedOnly, group: "disk", method: "PartitionDisk", caller: hostShell, allowed: true},
		"sample allows the CSI node plugin":             {engine: withSample, group: "volume", method: "FormatVolume", caller: csiNode, allowed: true},
		"sample denies another pod": {engine: withSample, group: "disk", method: "PartitionDisk", caller: debugPod, rule: "disk-volume-csi-only",
			msg: `disk v1 PartitionDisk is allowed only to pods of namespace "kube-system" running as service account "csi-azuredisk-node-sa", and the caller is pod default/debug (service account "default", pid 77); run the CSI node plugin with that service account, or change allowed_namespace and allowed_service_account in policy disk_volume_csi_only`},
		"sample denies a host process": {engine: withSample, group: "volume", method: "MountVolume", caller: hostShell, rule: "disk-volume-csi-only",
			msg: `volume v1 MountVolume is allowed only to pods of namespace "kube-system" running as service account "csi-azuredisk-node-sa", and the caller is pipeguard:peer:uid:1000 (pid 99, not in a known pod); run the CSI node plugin with that service account, or change allowed_namespace and allowed_service_account in policy disk_volume_csi_only`},
		"sample leaves filesystem alone": {engine: withSample, group: "filesystem", method: "Mkdir", caller: hostShell, allowed: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := tc.engine.Decide(ctx, &Input{Group: tc.group, Version: "v1", Method: tc.method, Mutating: true, Caller: tc.caller})
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tc.allowed || d.Rule != tc.rule || d.Message != tc.msg {
				t.Fatalf("decision %+v\nwant allowed=%v rule=%q msg=%q", d, tc.allowed, tc.rule, tc.msg)
			}
			if !tc.allowed && d.Policy != "disk_volume_csi_only" {
				t.Fatalf("policy %q", d.Policy)
			}
		})
	}
}

func TestBadPoliciesAreRefusedWithTheirPlace(t *testing.T) {
	cases := map[string]struct {
		src, want string
	}{
		"wrong package": {src: "package pipeguard.agent\n\ndeny contains {\"rule\": \"x\"} if true\n",
			want: `bad.rego:1: package pipeguard.agent is not allowed; declare a package below pipeguard.agent.policy, e.g. "package pipeguard.agent.policy.bad"`},
		"syntax error":    {src: "package pipeguard.agent.policy.bad\n\ndeny contains x if {\n", want: "bad.rego:4: rego_parse_error: unexpected eof token"},
		"unknown builtin": {src: "package pipeguard.agent.policy.bad\n\ndeny contains x if { x := http.send({}) }\n", want: "bad.rego:3: rego_type_error: undefined function http.send"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := New(context.Background(), Options{Log: logr.Discard(), PolicyDir: policyDir(t, map[string]string{"bad.rego": tc.src})})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	_, err := New(context.Background(), Options{Log: logr.Discard(), PolicyDir: "/nonexistent/policies"})
	if err == nil || !strings.Contains(err.Error(), "create the directory or fix Options.PolicyDir") {
		t.Fatalf("missing dir: %v", err)
	}
}

// TestReloadOnChange edits the policy directory of a watching engine: a new
// policy comes into force without restart, a broken one keeps the last good.
func TestReloadOnChange(t *testing.T) {
	dir := policyDir(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	e, err := New(ctx, Options{Log: funcr.New(func(p, a string) { t.Log(p, a) }, funcr.Options{Verbosity: 1}), PolicyDir: dir})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	// The watcher logs through t: it must end before the test does.
	watched := make(chan error, 1)
	go func() { watched <- e.Watch(ctx, time.Hour) }()
	defer func() {
		cancel()
		t.Log("watch ended:", <-watched)
	}()
	in := &Input{Group: "disk", Version: "v1", Method: "PartitionDisk", Mutating: true, Caller: debugPod}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		// Poll under a deadline for the condition; the pause only spares the CPU.
		for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("gave up waiting for %s", what)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "sample.rego"), []byte(readSample(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("the sample policy to load", func() bool { return e.Generation() == 2 })
	if d, _ := e.Decide(ctx, in); d.Allowed {
		t.Fatal("sample policy in force but the debug pod is allowed")
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.rego"), []byte("package pipeguard.agent.policy.broken\ndeny contains"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A broken file is never put in force; a later good edit is.
	if err := os.WriteFile(filepath.Join(dir, "marker.rego"), []byte("package pipeguard.agent.policy.marker\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "broken.rego"))
	waitFor("the marker policy to load", func() bool { return strings.Contains(strings.Join(e.Files(), " "), "marker.rego") })
	if d, _ := e.Decide(ctx, in); d.Allowed || strings.Contains(strings.Join(e.Files(), " "), "broken") {
		t.Fatalf("files %v decision %+v", e.Files(), d)
	}
	if changed, err := e.Reload(ctx); changed || err != nil {
		t.Fatalf("reload without change: %v %v", changed, err)
	}
	os.WriteFile(filepath.Join(dir, "broken.rego"), []byte("package pipeguard.agent.policy.broken\ndeny contains"), 0o644)
	gen := e.Generation()
	if _, err := e.Reload(ctx); err == nil || !strings.Contains(err.Error(), "broken.rego:2") {
		t.Fatalf("broken reload: %v", err)
	}
	if e.Generation() != gen {
		t.Fatal("a broken policy replaced the last good one")
	}
}

func TestRedact(t *testing.T) {
	cases := map[string]struct {
		msg  any
		want map[string]any
	}{
		"smb v1 password": {
			msg:  &smbv1.NewSmbGlobalMappingRequest{RemotePath: `\\srv\share`, LocalPath: `C:\var\lib\kubelet\x`, Username: "u", Password: "hunter2"},
			want: map[string]any{"remote_path": `\\srv\share`, "local_path": `C:\var\lib\kubelet\x`, "username": "u", "password": Redacted},
		},
		"smb v1alpha1 (legacy protobuf) password": {
			msg:  &smbv1alpha1.NewSmbGlobalMappingRequest{RemotePath: `\\srv\share`, Username: "u", Password: "hunter2"},
			want: map[string]any{"remote_path": `\\srv\share`, "local_path": "", "username": "u", "password": Redacted},
		},
		"iscsi mutual CHAP secret": {
			msg:  &iscsiv1alpha2.SetMutualChapSecretRequest{MutualChapSecret: "s3cret"},
			want: map[string]any{"MutualChapSecret": Redacted},
		},
		"empty password stays empty": {
			msg:  &smbv1.NewSmbGlobalMappingRequest{RemotePath: `\\srv\share`},
			want: map[string]any{"remote_path": `\\srv\share`, "local_path": "", "username": "", "password": ""},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Redact(tc.msg)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("%s = %v, want %v (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
	chap := Redact(&iscsiv1alpha2.ConnectTargetRequest{
		TargetPortal: &iscsiv1alpha2.TargetPortal{TargetAddress: "10.0.0.1", TargetPort: 3260},
		Iqn:          "iqn.x", AuthType: iscsiv1alpha2.AuthenticationType_ONE_WAY_CHAP, ChapUsername: "u", ChapSecret: "s3cret"})
	if chap["chap_secret"] != Redacted || chap["auth_type"] != "ONE_WAY_CHAP" || chap["target_portal"].(map[string]any)["target_port"] != uint64(3260) {
		t.Fatalf("connect target: %v", chap)
	}
}

func TestMutating(t *testing.T) {
	for method, want := range map[string]bool{
		"PathExists": false, "IsSymlink": false, "GetVolumeStats": false, "ListDiskIDs": false, "IsVolumeFormatted": false,
		"Mkdir": true, "FormatVolume": true, "NewSmbGlobalMapping": true, "Rescan": true, "Issue": true, "Getaway": true, "DiscoverTargetPortal": true,
	} {
		if Mutating(method) != want {
			t.Errorf("Mutating(%q) = %v, want %v", method, !want, want)
		}
	}
}

// TestInputAttribution: the rules read where the caller runs from
// caller.attribution, which only a caller its platform placed outside
// every pod reads as the host.
func TestInputAttribution(t *testing.T) {
	outside := *hostShell
	outside.PodMapped, outside.Unattributed = false, "cgroup path outside the agent's cgroup namespace"
	for name, tc := range map[string]struct {
		caller *identity.Caller
		want   string
	}{
		"pod":                   {csiNode, "pod"},
		"host":                  {hostShell, "host"},
		"outside the namespace": {&outside, "unattributed"},
		"no caller":             {nil, "unattributed"},
	} {
		doc, err := (&Input{Group: "disk", Caller: tc.caller}).Document()
		if err != nil {
			t.Fatal(err)
		}
		if got := doc.(map[string]any)["caller"].(map[string]any)["attribution"]; got != tc.want {
			t.Errorf("%s: caller.attribution = %v; want %q", name, got, tc.want)
		}
	}
}

// TestInputDocument checks the input document against its documented
// shape (docs/agent.md#gate), built through JSON.
func TestInputDocument(t *testing.T) {
	for _, in := range []*Input{
		{Group: "disk", Version: "v1", Method: "PartitionDisk", FullMethod: "/v1.Disk/PartitionDisk", Mutating: true,
			Caller: csiNode, Request: map[string]any{"disk_number": uint64(1), "list": []any{"a", int64(-2)}, "m": map[string]any{"k": true}}},
		{Group: "filesystem", Version: "v1", Method: "PathExists", FullMethod: "/v1.Filesystem/PathExists"},
	} {
		got, err := in.Document()
		if err != nil {
			t.Fatal(err)
		}
		c := in.Caller
		if c == nil {
			c = &identity.Caller{UID: -1, GID: -1}
		}
		req := in.Request
		if req == nil {
			req = map[string]any{}
		}
		doc := map[string]any{
			"apiVersion": InputVersion, "group": in.Group, "groupVersion": in.Version, "method": in.Method,
			"fullMethod": in.FullMethod, "mutating": in.Mutating, "request": req,
			"caller": map[string]any{
				"username": c.Username(), "source": c.Source, "pid": c.PID, "processStart": c.ProcessStart,
				"uid": c.UID, "gid": c.GID, "sid": c.SID, "containerID": c.ContainerID, "runtime": c.Runtime,
				"podUID": c.PodUID, "podName": c.PodName, "namespace": c.Namespace, "serviceAccount": c.ServiceAccount,
				"attribution": c.Attribution(),
			},
		}
		b, _ := json.Marshal(doc)
		var want any
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if string(gb) != string(wb) {
			t.Errorf("input document\n got %s\nwant %s", gb, wb)
		}
	}
}
