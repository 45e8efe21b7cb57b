package hostops

import (
	"fmt"
	"strings"
)

// Dep is one dependency a group's native operations are assembled with:
// whether it is there, and how the error names it when it is not.
type Dep struct {
	Present bool
	Name    string
}

// Assembled is the answer of a group's constructor: nil when every
// dependency is there, else one internal error naming each missing one,
// so that a misassembled agent fails once, as it starts, and no call is
// ever made.
func Assembled(group string, deps ...Dep) error {
	var missing []string
	for _, d := range deps {
		if !d.Present {
			missing = append(missing, d.Name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("internal error: the native %s operations were assembled without %s", group, strings.Join(missing, " and "))
}
