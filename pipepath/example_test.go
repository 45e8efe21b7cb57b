package pipepath_test

import (
	"fmt"

	"github.com/pipeguard/pipeguard/pipepath"
)

func ExampleClassify() {
	for _, p := range []string{
		`\\.\pipe\csi-proxy-disk-v1`,
		`//LOCALHOST/PIPE/Csi-Proxy-Disk-V1.`,
		`\\?\GLOBALROOT\Device\NamedPipe\x\..\csi-proxy-disk-v1`,
		`\\.\pipe\`,
		`\\.\pipe%5ccsi-proxy-disk-v1`,
		`C:\var\lib\kubelet`,
	} {
		r := pipepath.Classify(p)
		switch r.Class {
		case pipepath.Pipe:
			fmt.Printf("pipe %q\n", r.Pipe)
		case pipepath.Ambiguous:
			fmt.Printf("ambiguous: %s\n", r.Reason)
		default:
			fmt.Printf("not a pipe: %s\n", r.Normalized)
		}
	}
	// Output:
	// pipe "csi-proxy-disk-v1"
	// pipe "csi-proxy-disk-v1"
	// pipe "csi-proxy-disk-v1"
	// ambiguous: path names the pipe namespace itself, which holds every pipe
	// ambiguous: path contains percent-encoded or overlong-encoded characters
	// not a pipe: c:\var\lib\kubelet
}

func ExampleJoinSubPath() {
	joined := pipepath.JoinSubPath(`\\.\pipe\`, "csi-proxy-disk-v1")
	fmt.Println(joined, pipepath.Classify(joined).Class)
	// Output: \\.\pipe\csi-proxy-disk-v1 pipe
}
