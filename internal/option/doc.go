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
package option
