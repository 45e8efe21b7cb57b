package option

import (
	"fmt"
	"strings"
)

// Error is an error whose message names options.
type Error struct {
	text Text
	// err is fmt.Errorf of the same format and args: the message with
	// the Go names, and the errors its %w verbs wrap.
	err error
}

// Errorf returns an *Error: the error fmt.Errorf(format, args...) would
// return, wrapping what its %w verbs wrap, whose message Message renders
// with each Name among args named by a command's Namer.
func Errorf(format string, args ...any) error {
	return &Error{text: Sprintf(format, args...), err: fmt.Errorf(format, args...)}
}

// Error is the message naming options by their Go names.
func (e *Error) Error() string { return e.err.Error() }

// Unwrap returns the errors the message wraps with %w.
func (e *Error) Unwrap() []error {
	switch u := e.err.(type) {
	case interface{ Unwrap() []error }:
		return u.Unwrap()
	case interface{ Unwrap() error }:
		if w := u.Unwrap(); w != nil {
			return []error{w}
		}
	}
	return nil
}

// Render is the message naming options as n names them.
func (e *Error) Render(n Namer) string { return e.text.Render(n) }

// Options returns the options the message names, in order.
func (e *Error) Options() []Name { return e.text.Options() }

// Renderer is an error that can show its message with options named by a
// Namer: an *Error, or a command's own error type that names an option.
type Renderer interface {
	error
	Render(n Namer) string
}

// Message is err's message with the options it names shown as n names
// them. Every Renderer in err's tree, however deeply wrapped, shows its
// message as it renders it, in place of the text it gave the errors that
// wrap it; the rest of the message is left as it is. A wrapper that did
// not keep that text as it was (one that quoted it, say) keeps the Go
// names. A nil n, or an error naming no option, gives err.Error().
func Message(err error, n Namer) string {
	if err == nil {
		return ""
	}
	if r, ok := err.(Renderer); ok {
		return r.Render(n)
	}
	msg := err.Error()
	if n == nil {
		return msg
	}
	var walk func(error)
	walk = func(e error) {
		if r, ok := e.(Renderer); ok {
			if from, to := r.Error(), r.Render(n); from != to {
				msg = strings.ReplaceAll(msg, from, to)
			}
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, w := range u.Unwrap() {
				if w != nil {
					walk(w)
				}
			}
		case interface{ Unwrap() error }:
			if w := u.Unwrap(); w != nil {
				walk(w)
			}
		}
	}
	walk(err)
	return msg
}
