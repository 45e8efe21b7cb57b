// Package invisible is pipeguard's one definition of the characters that do
// not show as themselves: control characters, and characters that render as
// nothing or break a line. Such a character can hide part of a path from
// the person reading a message about it ("pi\u200bpe"), forge a second
// line in it, or make two different strings look alike, so pipeguard never
// prints one raw: the path normalizer (package pipepath) treats them as
// obfuscation and renders them as U+FFFD, and every text a rule produces
// (admission messages, policy status, Events, PolicyReports) is escaped
// with Escape. The shipped rego mirrors the list in display_path
// (rego/admission.rego), and a test holds both to the same code points.
package invisible
