package runner

import "context"

// answer is a Runner that answers every command with out.
type answer string

func (a answer) Run(context.Context, Command) ([]byte, error) { return []byte(a), nil }
