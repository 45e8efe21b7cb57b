package wmi

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
)

// ErrNoConn is the error of a host operation given no connection: it
// fails closed, and nothing on the host is read or changed.
var ErrNoConn = errors.New("no WMI connection (WMI.Conn is nil), so nothing on the host is read or changed")

// Run runs fn, a host operation op made of calls on c, under lim
// (limits.Call: its deadline and slots); nil lim runs it unbounded.
// Without a connection it runs nothing and returns ErrNoConn, naming op.
func Run(ctx context.Context, c Conn, lim limits.Limiter, op string, fn func(ctx context.Context) error) error {
	if c == nil {
		return fmt.Errorf("%s: %w", op, ErrNoConn)
	}
	return limits.Call(ctx, lim, op, fn)
}

// Invoke calls the method of op ("Class.Method") on the object at path
// in namespace ns (on the class, for a static method, when path is
// empty) and reads its ReturnValue with codes, as Result does.
func Invoke(ctx context.Context, c Conn, ns, path, op string, codes Codes, in ...Param) (Object, error) {
	class, method, _ := strings.Cut(op, ".")
	if path == "" {
		path = class
	}
	out, err := c.Call(ctx, ns, path, method, in...)
	if err != nil {
		return out, err
	}
	return out, Result(op, out, codes)
}
