package option

import (
	"fmt"
	"strings"
)

// Name is an option as a message names it.
type Name struct {
	// Key identifies the option for every package and command, e.g.
	// "audit.path"; a Namer maps it.
	Key string
	// Field is its Go name, as the library's callers set it, e.g.
	// "Options.Path"; messages show it unless a Namer names the key.
	Field string
}

// String is the Go name, so that fmt shows a Name as its library does.
func (n Name) String() string { return n.Field }

// Namer returns the name the readers of a command know an option by,
// such as the flag that sets it; false keeps the option's Go name.
type Namer func(key string) (name string, ok bool)

// name names o: by n when n knows its key, else by its Go name.
func (n Namer) name(o Name) string {
	if n != nil {
		if s, ok := n(o.Key); ok {
			return s
		}
	}
	return o.Field
}

// Text is a message that names options.
type Text struct {
	format string
	args   []any
}

// Sprintf is the message fmt.Sprintf(format, args...) would give, where
// each Name among args is an option, shown by the Namer of whoever
// renders the message, and each error among args is shown as Message
// shows it. A %w verb shows its error as %v does.
func Sprintf(format string, args ...any) Text {
	return Text{format: format, args: args}
}

// String is the message naming options by their Go names.
func (t Text) String() string { return t.Render(nil) }

// Render is the message naming options as n names them.
func (t Text) Render(n Namer) string {
	args := make([]any, len(t.args))
	for i, a := range t.args {
		switch a := a.(type) {
		case Name:
			args[i] = n.name(a)
		case error:
			args[i] = Message(a, n)
		default:
			args[i] = a
		}
	}
	return fmt.Sprintf(plainVerbs(t.format), args...)
}

// Options returns the options the message names, in order.
func (t Text) Options() []Name {
	var out []Name
	for _, a := range t.args {
		if o, ok := a.(Name); ok {
			out = append(out, o)
		}
	}
	return out
}

// plainVerbs turns the %w verbs of an Errorf format into %v, which
// Sprintf knows; a literal %% stays.
func plainVerbs(format string) string {
	if !strings.Contains(format, "%w") {
		return format
	}
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		b.WriteByte(c)
		if c != '%' || i+1 >= len(format) {
			continue
		}
		i++
		switch format[i] {
		case 'w':
			b.WriteByte('v')
		default:
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
