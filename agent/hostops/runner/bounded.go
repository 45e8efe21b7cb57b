package runner

import (
	"context"
	"errors"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
)

// Bounded runs the commands of one group with r under the group's limits
// (limits.Bounded), each under the limits of its operation (Command.Op);
// it is also the group's limits.Limiter for the calls that start no
// process.
type Bounded struct {
	*limits.Bounded
	r Runner
}

// Bound returns r with the limits l on every call of group (e.g. "disk"),
// except the operations of classes, which have theirs.
func Bound(r Runner, group string, l limits.Limits, classes ...limits.Class) *Bounded {
	return &Bounded{Bounded: limits.Bound(group, l, classes...), r: r}
}

// Run runs cmd under the limits of its operation, named by Script, and
// tells r the group it is of (Command.Group).
func (b *Bounded) Run(ctx context.Context, cmd Command) ([]byte, error) {
	op := cmd.Op
	if op == "" {
		op = cmd.Program
	}
	cmd.Group = b.Group()
	var out []byte
	var noWorker error
	err := b.Within(ctx, op, func(cctx context.Context) error {
		var err error
		out, err = b.r.Run(cctx, cmd)
		var nw *NoWorkerError
		if errors.As(err, &nw) {
			noWorker = err // says what was full
			return nil
		}
		return err
	})
	if noWorker != nil {
		return out, noWorker
	}
	return out, err
}
