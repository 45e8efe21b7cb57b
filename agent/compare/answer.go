package compare

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The bounds of what compare reads and holds from either side. A side that
// answers more is reported as failing that call, with the bound named.
const (
	// MaxMessage is the largest answer read from one call.
	MaxMessage = 4 << 20
	// MaxItems is the most entries read from one list or map answer.
	MaxItems = 1024
	// MaxDisks is the most disks asked about one by one.
	MaxDisks = 256
	// MaxVolumes is the most volumes asked about one by one.
	MaxVolumes = 1024
	// MaxValue is the longest string kept from an answer; a longer one
	// is cut, its length noted.
	MaxValue = 512
	// MaxDifferences is the most differences listed for one call.
	MaxDifferences = 20
	// MaxTimeouts is how many calls in a row CSI Proxy may leave
	// unanswered until their deadline before it is asked nothing more:
	// a hung CSI Proxy costs at most this many deadlines.
	MaxTimeouts = 3
)

// The tolerance of a volume's used bytes, which move on a live node
// between the two reads: they are the same when they differ by at most
// UsedBytesShare of the volume's total bytes, or UsedBytesFloor, whichever
// is more. Every other number is compared exactly.
const (
	UsedBytesShare = 0.01
	UsedBytesFloor = 64 << 20
)

// answer is one side's answer to one call: an error, or named fields.
// A list or a map is one field per entry, so that they compare as sets.
type answer struct {
	err         string
	unavailable bool // the side could not be reached
	timedOut    bool // the side did not answer within the deadline
	fields      map[string]string
	// set is set when fields are the entries of a list, keys alone.
	set bool
}

func (a answer) String() string {
	if a.err != "" {
		return "error: " + a.err
	}
	if len(a.fields) == 0 {
		return "(empty)"
	}
	var b strings.Builder
	for i, k := range slices.Sorted(mapKeys(a.fields)) {
		if i > 0 {
			b.WriteString("; ")
		}
		switch v := a.fields[k]; {
		case a.set:
			b.WriteString(k)
		case v == "":
			b.WriteString(k + `=""`)
		default:
			b.WriteString(k + "=" + v)
		}
	}
	return b.String()
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// clean returns s fit for a terminal and bounded: quoted when it holds
// anything but printable text, cut to MaxValue bytes.
func clean(s string) string {
	cut := ""
	if len(s) > MaxValue {
		cut = fmt.Sprintf("…(%d bytes)", len(s))
		s = s[:MaxValue]
	}
	printable := utf8.ValidString(s)
	for _, r := range s {
		if !strconv.IsPrint(r) {
			printable = false
			break
		}
	}
	if !printable {
		s = strconv.Quote(s)
	}
	return s + cut
}

// callOpts bound every answer read.
var callOpts = []grpc.CallOption{grpc.MaxCallRecvMsgSize(MaxMessage)}

// ask makes one call with its own deadline and turns its outcome into an
// answer; fields turns a response into fields, or an error when it holds
// more than the bounds allow.
func ask[R any](ctx context.Context, timeout time.Duration, call func(context.Context, ...grpc.CallOption) (R, error), fields func(R) (map[string]string, error)) (a answer) {
	return askList(ctx, timeout, call, fields, false)
}

// askList is ask for an answer that is a list: set says its fields are
// entries, keys alone.
func askList[R any](ctx context.Context, timeout time.Duration, call func(context.Context, ...grpc.CallOption) (R, error), fields func(R) (map[string]string, error), set bool) (a answer) {
	defer func() {
		if r := recover(); r != nil {
			a = answer{err: clean(fmt.Sprintf("reading the answer failed: %v", r))}
		}
	}()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := call(cctx, callOpts...)
	if err != nil {
		s := status.Convert(err)
		switch {
		case (s.Code() == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded)) && cctx.Err() != nil && ctx.Err() == nil:
			// The run words the error: it names Options.Timeout.
			return answer{timedOut: true}
		case s.Code() == codes.ResourceExhausted && strings.Contains(s.Message(), "larger than max"):
			return answer{err: fmt.Sprintf("the answer is larger than the %d bytes compare reads", MaxMessage)}
		}
		return answer{err: clean(s.Code().String() + ": " + s.Message()), unavailable: s.Code() == codes.Unavailable}
	}
	f, err := fields(resp)
	if err != nil {
		return answer{err: err.Error()}
	}
	for k, v := range f {
		f[k] = clean(v)
	}
	return answer{fields: f, set: set}
}

// tooMany is the error of a list answer longer than MaxItems.
func tooMany(n int) error {
	return fmt.Errorf("answered %d entries; compare reads at most %d", n, MaxItems)
}

// near says whether two differing values of the field key are the same
// within tolerance; a and b are the whole answers.
type near func(key string, a, b answer) bool

// diff lists how b (pipeguard's answer) differs from a (CSI Proxy's).
// Two errors are the same outcome: the error texts and codes differ by
// design (docs/agent.md, Error shape).
func diff(a, b answer, tolerate near) []string {
	switch {
	case a.err != "" && b.err != "":
		return nil
	case a.err != "":
		return []string{"fails on CSI Proxy only: " + a.err}
	case b.err != "":
		return []string{"fails on pipeguard only: " + b.err}
	}
	keys := map[string]bool{}
	for k := range a.fields {
		keys[k] = true
	}
	for k := range b.fields {
		keys[k] = true
	}
	var out []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range keys {
			if !yield(k) {
				return
			}
		}
	}) {
		av, aok := a.fields[k]
		bv, bok := b.fields[k]
		switch {
		case !bok:
			out = append(out, k+": only CSI Proxy answers it"+valueOf(av))
		case !aok:
			out = append(out, k+": only pipeguard answers it"+valueOf(bv))
		case av != bv && (tolerate == nil || !tolerate(k, a, b)):
			out = append(out, fmt.Sprintf("%s: CSI Proxy %s, pipeguard %s", k, shown(av), shown(bv)))
		}
	}
	if len(out) > MaxDifferences {
		out = append(out[:MaxDifferences], fmt.Sprintf("… and %d more", len(out)-MaxDifferences))
	}
	return out
}

// shown is a value as a difference shows it: "" when empty.
func shown(v string) string {
	if v == "" {
		return `""`
	}
	return v
}

func valueOf(v string) string {
	if v == "" {
		return ""
	}
	return " (" + v + ")"
}

// usedBytesNear is the tolerance of GetVolumeStats (UsedBytesShare,
// UsedBytesFloor).
func usedBytesNear(key string, a, b answer) bool {
	if key != "usedBytes" {
		return false
	}
	x, err1 := strconv.ParseInt(a.fields[key], 10, 64)
	y, err2 := strconv.ParseInt(b.fields[key], 10, 64)
	ta, _ := strconv.ParseInt(a.fields["totalBytes"], 10, 64)
	tb, _ := strconv.ParseInt(b.fields["totalBytes"], 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	return absDiff(x, y) <= usedBytesTolerance(max(ta, tb))
}

// usedBytesTolerance is how far a volume's used bytes may move for a
// volume of total bytes.
func usedBytesTolerance(total int64) uint64 {
	return max(uint64(UsedBytesFloor), uint64(float64(max(total, 0))*UsedBytesShare))
}

func absDiff(x, y int64) uint64 {
	if x > y {
		return uint64(x) - uint64(y)
	}
	return uint64(y) - uint64(x)
}
