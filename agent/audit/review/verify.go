package review

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/pipeguard/pipeguard/agent/audit"
)

// FileReport describes one file of a verified log.
type FileReport struct {
	Path        string
	Records     int
	First, Last uint64
	TornBytes   int
}

// Report is the result of Verify.
type Report struct {
	Files   []FileReport
	Records int
	// First and Last are the sequence numbers the chain spans.
	First, Last uint64
	// Problems break the chain: an edited, deleted, reordered or invalid
	// record, or a missing file. The first is the one to look at. At
	// most 50 are kept; MoreProblems counts the others.
	Problems     []Finding
	MoreProblems int
	// Notices do not break it: torn final lines, pruned files, empty files.
	Notices []Finding
	// Anchor is the anchor verified against, nil without one.
	Anchor *audit.Anchor
}

// OK reports whether the whole chain is intact.
func (r *Report) OK() bool { return len(r.Problems) == 0 && r.Records > 0 }

// fileChain is what verification keeps of one file: its ends.
type fileChain struct {
	FileReport
	firstPrev             audit.Hash
	lastHash              audit.Hash
	firstWhere, lastWhere string
	firstAnn              map[string]string // of the first record
}

// Verify recomputes the hash chain over every file of src, each file in
// itself and then file after file in sequence order, and reports the first
// bad or missing record. An I/O error is returned as an error; everything
// wrong with the content is in the report. Without an anchor, records cut
// from the end of the log cannot be detected; VerifyWith takes one.
func Verify(src Source) (*Report, error) { return VerifyWith(src, VerifyOptions{}) }

// VerifyWith is Verify, checking the end of the chain against o.Anchor
// when it is set.
func VerifyWith(src Source, o VerifyOptions) (*Report, error) {
	rep := &Report{Anchor: o.Anchor}
	var at anchorTrack
	var torn []audit.Record
	var files []*fileChain
	var prunes []audit.Pruned
	var cur *fileChain
	var pendingBad *audit.Record // an invalid line: fatal unless it is the torn end
	flushBad := func() {
		if pendingBad != nil {
			rep.problem(pendingBad.Where(), "line is not a valid audit record: %v", pendingBad.Err)
			pendingBad = nil
		}
	}
	err := src.each(func(r audit.Record) error {
		if cur == nil || cur.Path != r.File {
			flushBad()
			cur = &fileChain{FileReport: FileReport{Path: r.File}}
			files = append(files, cur)
		}
		flushBad()
		if r.Torn {
			cur.TornBytes = len(r.Raw)
			torn = append(torn, r)
			return nil
		}
		if r.Err != nil {
			rec := r
			pendingBad = &rec
			return nil
		}
		h := audit.Link(r.Prev, r.Raw)
		if cur.Records == 0 {
			cur.First, cur.firstPrev, cur.firstWhere = r.Seq, r.Prev, r.Where()
			cur.firstAnn = r.Event.Annotations
		} else {
			checkLink(rep, r, cur.Last, cur.lastHash, cur.lastWhere)
		}
		at.see(o.Anchor, r, h)
		cur.Records++
		cur.Last, cur.lastHash, cur.lastWhere = r.Seq, h, r.Where()
		rep.Records++
		if unsent := r.Event.Annotation(audit.AnnotationPrunedUnsent); unsent != "" {
			rep.notice(r.Where(), "records %s were removed from the node before the audit webhook receiver acknowledged them: no copy of them is kept anywhere (raise %s, or fix the receiver)", unsent, maxUnsentOption)
		}
		if seq := r.Event.Annotation(audit.AnnotationWebhookRejectedSeq); seq != "" {
			rep.notice(r.Where(), "the audit webhook receiver refused record seq %s on its own (%s): only the files on the node hold it", seq, r.Event.Annotation(audit.AnnotationWebhookRejectedReason))
		}
		if r.Event.Annotation(audit.AnnotationCheckpoint) == "prune" {
			p, err := audit.ParsePrune(r)
			if err != nil {
				rep.problem(r.Where(), "%v", err)
			} else {
				prunes = append(prunes, p)
			}
		}
		return nil
	})
	flushBad()
	if err != nil {
		return rep, err
	}

	var chained []*fileChain
	for _, f := range files {
		rep.Files = append(rep.Files, f.FileReport)
		if f.Records == 0 {
			rep.notice(f.Path, "holds no complete record")
			continue
		}
		chained = append(chained, f)
	}
	if len(chained) == 0 {
		rep.problem(src.name(), "no audit records found")
		if o.Anchor != nil {
			rep.problem(src.name(), "the anchor names record seq %d, but the files hold no record at all: the log was deleted or emptied (%s)", o.Anchor.Seq, o.Anchor)
		}
		return rep, nil
	}
	sort.SliceStable(chained, func(i, j int) bool { return chained[i].First < chained[j].First })
	for i := 1; i < len(chained); i++ {
		a, b := chained[i-1], chained[i]
		switch {
		case b.First <= a.Last:
			rep.problem(b.firstWhere, "records seq %d–%d overlap those of %s (seq %d–%d): a file was copied or records were replayed", b.First, b.Last, a.Path, a.First, a.Last)
		case b.First > a.Last+1:
			rep.problem(b.firstWhere, "records seq %s are missing between %s (ends at seq %d) and %s (starts at seq %d): a rotated file may have been deleted",
				seqRange(a.Last+1, b.First-1), a.lastWhere, a.Last, b.Path, b.First)
		case b.firstPrev != a.lastHash:
			rep.problem(b.firstWhere, "record seq %d does not continue %s: its prev-hash is %s but the record before it (%s) hashes to %s; that record was changed, or the files do not belong together",
				b.First, a.Path, b.firstPrev.Short(), a.lastWhere, a.lastHash.Short())
		}
	}
	first := chained[0]
	last := chained[len(chained)-1]
	rep.First, rep.Last = first.First, last.Last
	checkStart(rep, first, prunes)
	checkTorn(rep, o.Anchor, torn, chained)
	checkSkipped(rep, chained)
	checkAnchor(rep, o.Anchor, &at, last)
	return rep, nil
}

// checkSkipped explains the lines that are not valid records which the
// agent found at the end of a file when it restarted: the lines remain
// problems (edited, or written by something other than the agent), and the
// notice says that the agent left them in place and continued the chain
// from the last valid record before them.
func checkSkipped(rep *Report, chained []*fileChain) {
	for _, f := range chained {
		a := f.firstAnn
		file := a[audit.AnnotationSkippedFile]
		if file == "" {
			continue
		}
		rep.notice(f.firstWhere, "when the agent started it found %s bytes at the end of %s that are not valid audit records (%s); "+
			"it left them there and continued the chain from the last valid record before them, so the agent kept serving; those lines are reported as problems: "+
			"the file was edited, or written by something other than the agent",
			audit.CutString(a[audit.AnnotationSkippedBytes], 32), audit.CutString(file, 256), audit.CutString(a[audit.AnnotationSkipped], 1024))
	}
}

// checkLink checks that record r directly follows the record seq prevSeq
// hashing to prevHash.
func checkLink(rep *Report, r audit.Record, prevSeq uint64, prevHash audit.Hash, prevWhere string) {
	switch {
	case r.Seq == prevSeq+1 && r.Prev == prevHash:
	case r.Seq == prevSeq+1:
		rep.problem(r.Where(), "record seq %d does not follow record seq %d (%s): its prev-hash is %s but that record hashes to %s; record seq %d was changed or replaced",
			r.Seq, prevSeq, prevWhere, r.Prev.Short(), prevHash.Short(), prevSeq)
	case r.Seq <= prevSeq:
		rep.problem(r.Where(), "record seq %d comes after record seq %d (%s): records are out of order or repeated", r.Seq, prevSeq, prevWhere)
	default:
		rep.problem(r.Where(), "record seq %d follows record seq %d (%s): record seq %s missing (deleted?)", r.Seq, prevSeq, prevWhere, seqRange(prevSeq+1, r.Seq-1)+plural(r.Seq-1-prevSeq))
	}
}

// checkStart checks the beginning of the chain: genesis, or files removed
// by rotation that prune checkpoints account for.
func checkStart(rep *Report, first *fileChain, prunes []audit.Pruned) {
	if first.First == 1 {
		if first.firstPrev != audit.Genesis() {
			rep.problem(first.firstWhere, "record seq 1 has prev-hash %s; the first record of a log has %s", first.firstPrev.Short(), audit.Genesis().Short())
		}
		return
	}
	sort.Slice(prunes, func(i, j int) bool { return prunes[i].First < prunes[j].First })
	next := uint64(1)
	var last *audit.Pruned
	for i := range prunes {
		p := &prunes[i]
		if p.First > next || p.Last >= first.First {
			break
		}
		if p.Last+1 >= next {
			next, last = p.Last+1, p
		}
	}
	if next != first.First {
		rep.problem(first.firstWhere, "records seq %s are missing before %s: no prune checkpoint accounts for them, so earlier files were deleted by something other than the agent's %s",
			seqRange(next, first.First-1), first.Path, maxBackupsOption)
		return
	}
	if last.Hash != first.firstPrev {
		rep.problem(first.firstWhere, "record seq %d does not continue the pruned file %s (prune checkpoint at %s): its prev-hash is %s, the pruned file ended with %s",
			first.First, last.File, last.Where, first.firstPrev.Short(), last.Hash.Short())
		return
	}
	rep.notice(first.Path, "records seq %s were in files the agent removed under %s; their prune checkpoints match", seqRange(1, first.First-1), maxBackupsOption)
}

func seqRange(a, b uint64) string {
	if a == b {
		return strconv.FormatUint(a, 10)
	}
	return fmt.Sprintf("%d–%d", a, b)
}

func plural(n uint64) string {
	if n == 1 {
		return " is"
	}
	return " are"
}
