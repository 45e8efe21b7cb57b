package audit

import (
	"sort"
	"strconv"
	"strings"
)

// MaxUnsentRanges bounds the ranges of sequence numbers the webhook keeps
// of records its receiver has not acknowledged. Past it, a new record
// joins the newest range: the ranges then claim unsent some records that
// were sent, which only holds their files back longer (up to
// Options.MaxUnsentBytes).
const MaxUnsentRanges = 1 << 16

// MaxUnsentText bounds the ranges Unsent lists (and a prune checkpoint's
// AnnotationPrunedUnsent); past it the text ends with the number of
// records left out.
const MaxUnsentText = 512

// seqRange is the sequence numbers lo to hi, both included.
type seqRange struct{ lo, hi uint64 }

// unsentSet is the sequence numbers of the records written while the
// webhook ran that its receiver has not acknowledged: queued, in flight,
// dropped from a full buffer, or failed after every retry. A record the
// receiver refused on its own leaves it: it is reported by itself. Its
// ranges are sorted and disjoint. The webhook's mu guards it.
type unsentSet struct{ r []seqRange }

// add adds seq, which comes above every number in the set (one that
// does not is already counted).
func (s *unsentSet) add(seq uint64) {
	n := len(s.r)
	if n > 0 && seq <= s.r[n-1].hi {
		return
	}
	if n > 0 && (s.r[n-1].hi+1 == seq || n >= MaxUnsentRanges) {
		s.r[n-1].hi = seq
		return
	}
	s.r = append(s.r, seqRange{seq, seq})
}

// remove takes seq out of the set. A split that would pass
// MaxUnsentRanges is not made: seq stays, claimed unsent.
func (s *unsentSet) remove(seq uint64) {
	i := sort.Search(len(s.r), func(i int) bool { return s.r[i].hi >= seq })
	if i == len(s.r) || s.r[i].lo > seq {
		return
	}
	switch g := &s.r[i]; {
	case g.lo == seq && g.hi == seq:
		s.r = append(s.r[:i], s.r[i+1:]...)
	case g.lo == seq:
		g.lo++
	case g.hi == seq:
		g.hi--
	case len(s.r) < MaxUnsentRanges:
		s.r = append(s.r, seqRange{})
		copy(s.r[i+2:], s.r[i+1:])
		s.r[i+1] = seqRange{seq + 1, g.hi}
		s.r[i].hi = seq - 1
	}
}

// within lists the unsent numbers from first to last, as "3-7,9", and
// counts them; "" when there are none.
func (s *unsentSet) within(first, last uint64) (string, uint64) {
	var b strings.Builder
	var n, left uint64
	for _, g := range s.r {
		lo, hi := max(g.lo, first), min(g.hi, last)
		if lo > hi {
			continue
		}
		n += hi - lo + 1
		if b.Len() >= MaxUnsentText {
			left += hi - lo + 1
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(lo, 10))
		if hi > lo {
			b.WriteByte('-')
			b.WriteString(strconv.FormatUint(hi, 10))
		}
	}
	if left > 0 {
		b.WriteString(",… (" + strconv.FormatUint(left, 10) + " more)")
	}
	return b.String(), n
}

// forget drops every number up to through and counts those dropped.
func (s *unsentSet) forget(through uint64) uint64 {
	var n uint64
	i := 0
	for ; i < len(s.r) && s.r[i].lo <= through; i++ {
		hi := min(s.r[i].hi, through)
		n += hi - s.r[i].lo + 1
		if s.r[i].hi > through {
			s.r[i].lo = through + 1
			break
		}
	}
	s.r = s.r[i:]
	return n
}
