// Package audit writes pipeguard-agent's audit log: one JSON line per
// request stage, shaped as a Kubernetes audit.k8s.io/v1 Event so that
// existing audit tooling reads it, chained with SHA-256 so that edits,
// deletions, reordering and missing rotated files are found. Reading and
// verifying logs is package review's; this package holds what the agent
// needs to write them, and what both sides share: the record (Event,
// Record, Scan), the chain hash (Link), the naming of rotated files
// (Files) and the anchor's format (Anchor).
//
// A request record's decision (SetDecision) is written twice: as
// pipeguard.io/decision (allow or deny, with the rule) and as the
// authorization.k8s.io/decision and reason kube-apiserver writes (allow or
// forbid), which Kubernetes audit tooling reads as the event's outcome.
//
// Writing (Log): every record gets a sequence number and the hash of the
// record before it (annotations pipeguard.io/seq and pipeguard.io/prev-hash).
// A record's own hash is SHA-256(previous hash ‖ the record's raw line
// without its newline), so the chain covers the exact bytes on disk. The
// chain continues across size-based rotation and agent restarts; checkpoint
// records mark starts, stops, rotations, removals of old files and every
// CheckpointEvery records. A durable Append returns only after the record is
// fsynced; concurrent durable appends share one fsync (group commit): those
// that arrive while one runs wait for the next, and every waiter is woken
// when an fsync ends. Concurrent appends share their write(2) too (group
// write): whoever holds the log's lock writes every queued record, in
// order, with one write, and a write that fails fails every append it
// held, leaving none of their records in the file or the chain. Records
// are encoded by hand, byte for byte as encoding/json would write the
// Event, to keep reflection off the request path, with every string cut
// to a bound (MaxRecordString, with a marker, and named in AnnotationCut)
// so that no record exceeds MaxRecordLine whatever a caller sends; a caller's user block,
// the same on every request of a connection, can be encoded once
// (EncodeUser, Event.SetUser). Audit IDs come from IDs: UUID-shaped,
// unique, and drawn from crypto/rand only once per Log.
//
// The writer reads back only its own files: on Open, the last valid
// record on disk, whatever its size and in bounded memory, to continue the
// chain (what follows it, torn or invalid, is rotated aside and named in
// the start checkpoint); on rotation, each file it prunes beyond
// Options.MaxBackups, to record its range in a prune checkpoint (Pruned).
//
// The chain alone cannot show records cut from its end, nor a log
// rewritten and re-chained by someone holding the files: an Anchor, the
// head published outside the node (package anchor), closes both. Records
// leave the node as written on standard output (StdoutPath) or through
// the Webhook backend, which splits the batches its receiver refuses down
// to the records refused (each named by a webhook-rejected checkpoint) and,
// as Options.Unsent, keeps the rotated files holding records its receiver
// has not acknowledged from pruning, up to Options.MaxUnsentBytes. Messages
// name options by their Go names
// (Options.Path), as errors of package option that a command shows with
// its flags.
package audit
