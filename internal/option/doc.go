// Package option lets a library name its options in its messages by their
// Go names (Options.Path), as its callers set them, while a command shows
// the same messages naming the flags that set those options
// (--audit-log-path).
//
// A message says which options it names: each is a Name, a stable key
// ("audit.path") with its Go name. Whoever shows the message renders it
// with a Namer, which maps keys to the names its readers know, so exactly
// those options are renamed and nothing else: text that merely looks like
// an option, such as a path a user chose, stays as it was given.
//
// This is the one way flag names reach messages: a library (anything
// outside cmd/) never spells a flag; it names the option by a Name, and
// the command names the flag (test/layers checks that no library string
// spells one). A message the library returns is an Errorf error, which
// the command shows with Message and its Namer. A message the library
// makes while it runs, where no command sees it first (a gRPC status, an
// audit record's note, a log line, a metric's help), is a Text the library
// renders with the Namer its Options take from the command; a nil Namer
// keeps the Go names. Each key the command's table names is checked
// against the library's constant in the command's tests.
package option
