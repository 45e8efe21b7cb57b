package review

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/pipeguard/pipeguard/agent/audit"
)

// VerifyOptions configures VerifyWith.
type VerifyOptions struct {
	// Anchor is the chain head published outside the node (see
	// ReadAnchor). With it, verification finds records cut from the end
	// of the log and a log rewritten and re-chained; without it, it cannot.
	Anchor *audit.Anchor
}

// NoAnchorNotice is the notice of a verification without an anchor.
const NoAnchorNotice = "verified without an anchor: records cut from the end of the log (newest files deleted or truncated) and a log rewritten and re-chained cannot be detected without one; verify against the node's anchor in the cluster"

// anchorTrack keeps the records that carry the anchored sequence number.
type anchorTrack struct {
	found []anchored
}

type anchored struct {
	hash  audit.Hash
	where string
	stop  bool
}

func (t *anchorTrack) see(a *audit.Anchor, r audit.Record, h audit.Hash) {
	if a != nil && r.Seq == a.Seq {
		t.found = append(t.found, anchored{h, r.Where(), r.Event.Annotation(audit.AnnotationCheckpoint) == "stop"})
	}
}

// checkAnchor checks that the chain reaches the anchored record and that
// the record hashes to the anchored hash.
func checkAnchor(rep *Report, a *audit.Anchor, t *anchorTrack, last *fileChain) {
	if a == nil {
		rep.notice(last.Path, "%s", NoAnchorNotice)
		return
	}
	if a.Reset != nil {
		rep.notice(last.Path, "%s", resetNotice(a))
	}
	if rep.Last < a.Seq {
		rep.problem(last.lastWhere, "the chain ends at record seq %d, before the anchored record seq %d: records seq %s are missing from the end of the log (the newest files were deleted or truncated); %s",
			rep.Last, a.Seq, seqRange(rep.Last+1, a.Seq), a)
		return
	}
	if len(t.found) == 0 {
		rep.problem(last.Path, "the anchored record seq %d is missing from the files; %s", a.Seq, a)
		return
	}
	ok, stop := true, false
	for _, f := range t.found {
		if f.hash != a.Hash {
			ok = false
			rep.problem(f.where, "record seq %d hashes to %s, but the anchor says %s: this record or one before it was changed and the chain rebuilt after it; %s",
				a.Seq, f.hash.Short(), a.Hash.Short(), a)
		}
		stop = stop || f.stop
	}
	if !ok {
		return
	}
	switch {
	case rep.Last > a.Seq && stop:
		rep.problem(last.lastWhere, "records seq %s follow the stop checkpoint seq %d that the agent anchored when it shut down: they were added after it stopped; if the agent has restarted since, verify again once it has published its new head (every %s); %s",
			seqRange(a.Seq+1, rep.Last), a.Seq, audit.DefaultAnchorInterval, a)
	case rep.Last > a.Seq:
		rep.notice(last.lastWhere, "records seq %s come after the anchored record: their chain is intact, but until the agent anchors them they could be cut or rewritten without trace; %s",
			seqRange(a.Seq+1, rep.Last), a)
	default:
		rep.notice(last.lastWhere, "the chain reaches the anchor: record seq %d hashes to the anchored hash; %s", a.Seq, a)
	}
}

// checkTorn decides about lines cut short. A torn line is a notice when it
// ends the newest file and the anchor does not reach past it, or when the
// agent recorded it on restart (the start checkpoint that follows names the
// file and the torn bytes). Anywhere else it is a problem.
func checkTorn(rep *Report, a *audit.Anchor, torn []audit.Record, chained []*fileChain) {
	newest := chained[len(chained)-1]
	for _, r := range torn {
		acknowledged := false
		for _, f := range chained {
			if f.firstAnn[audit.AnnotationPreviousFile] == filepath.Base(r.File) && f.firstAnn[audit.AnnotationTornBytes] == strconv.Itoa(len(r.Raw)) {
				acknowledged = true
			}
		}
		inChain := false
		for _, f := range chained {
			inChain = inChain || f.Path == r.File
		}
		switch {
		case acknowledged:
			rep.notice(r.Where(),
				"torn final line (%d bytes without a newline): a write cut short when the agent stopped, recorded by the agent when it restarted; it is not part of the chain and no client was answered for it", len(r.Raw))
		case r.File != newest.Path && inChain:
			rep.problem(r.Where(), "torn line (%d bytes without a newline) at the end of a file that later records continue, and no restart records it: the file was cut mid-record", len(r.Raw))
		case a != nil && a.Seq > rep.Last:
			rep.problem(r.Where(), "torn final line (%d bytes without a newline), and the anchor names record seq %d past the last whole record seq %d: the file was cut mid-record", len(r.Raw), a.Seq, rep.Last)
		default:
			rep.notice(r.Where(),
				"torn final line (%d bytes without a newline): a write cut short when the agent stopped; it is not part of the chain and no client was answered for it", len(r.Raw))
		}
	}
}

// resetNotice tells what a reset of the anchor leaves unproven.
func resetNotice(a *audit.Anchor) string {
	r := a.Reset
	return fmt.Sprintf("the anchor of node %s was reset by %s (reason: %q) and the agent anchored again from record seq %d: "+
		"a reset discards the anchored head, so records up to seq %d were anchored only after the reset and a cut or rewrite of them before it cannot be detected; "+
		"the API server's audit log has who reset it and when (the update of the node's anchor Lease that set %s)",
		a.Node, r.Who(), r.Reason, r.AtSeq, r.AtSeq, audit.AnchorReset)
}
