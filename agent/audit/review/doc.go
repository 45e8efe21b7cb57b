// Package review reads pipeguard-agent's audit logs, for the pipeguard
// CLI and other tools: the log file and its rotated siblings beside it
// (audit.Files), a directory of them, or a stream of JSON lines or of the
// EventLists a webhook receiver saved (Source). It lists and filters the
// requests they record (Requests, Filter), counts them (Summarize),
// follows a live log across rotations (Follow), and verifies the hash
// chain (Verify): it recomputes every link, file after file in sequence
// order, and reports the first bad or missing record, telling files the
// agent pruned (their prune checkpoints match) from files deleted.
//
// Without an anchor, verification cannot see records cut from the end of
// the log, nor a log rewritten and re-chained: VerifyWith checks the files
// against the chain head the agent published to the cluster (ReadAnchor,
// ReadAnchorKubeconfig), and reports a reset of that anchor.
//
// Findings name the agent's options by their Go names
// (Options.MaxBackups); a command shows them with its flags
// (Finding.Named). pipeguard-agent does not link this package: what the
// writer must read back to continue its chain is in package audit.
package review
