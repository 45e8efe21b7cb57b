//go:build linux

package identity

func hostProcesses() ProcessTable { return &Proc{Root: "/proc"} }
