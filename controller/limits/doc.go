// Package limits holds the limits the API server puts on the text
// pipeguard writes into objects (Event notes, condition messages, status
// and report entries), and Fit, the one way pipeguard shortens a text to
// such a limit: whole items while they fit, then a count of the rest, so
// that a write is never refused for its length and a reader always learns
// how much was left out.
package limits
