package wmi

import (
	"context"
	"fmt"
)

// Unsupported is a Conn that refuses every call. The agent gives it to the
// Windows-only groups on other OSes, where their calls are answered before
// any host operation: it is a second stop.
type Unsupported struct {
	// GOOS names the system the agent runs on.
	GOOS string
}

var _ Conn = Unsupported{}

func (u Unsupported) refuse(what string) error {
	return fmt.Errorf("cannot run the WMI %s on %s: this host operation needs Windows", what, u.GOOS)
}

// Query refuses.
func (u Unsupported) Query(context.Context, string, string) ([]Object, error) {
	return nil, u.refuse("query")
}

// Get refuses.
func (u Unsupported) Get(context.Context, string, string) (Object, error) {
	return Object{}, u.refuse("get")
}

// Call refuses, naming the method but none of its values.
func (u Unsupported) Call(_ context.Context, _, _, method string, _ ...Param) (Object, error) {
	return Object{}, u.refuse("method " + method)
}
