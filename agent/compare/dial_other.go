//go:build !windows

package compare

// DialCSIProxy needs Windows: CSI Proxy serves named pipes.
func DialCSIProxy(string) (Conns, error) { return Conns{}, ErrNeedsWindows }
