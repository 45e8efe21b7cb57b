package review

import (
	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/internal/option"
)

// maxProblems bounds the problems one verification collects.
const maxProblems = 50

// maxBackupsOption is the agent's audit.Options.MaxBackups as findings
// name it.
var maxBackupsOption = option.Name{Key: audit.OptionMaxBackups, Field: "Options.MaxBackups"}

// maxUnsentOption is the agent's audit.Options.MaxUnsentBytes as findings
// name it.
var maxUnsentOption = option.Name{Key: audit.OptionMaxUnsentBytes, Field: "Options.MaxUnsentBytes"}

// Finding is a problem or a notice at a place in the log.
type Finding struct {
	Where string
	// Msg names the agent's options by their Go names; Named names them
	// as a command does.
	Msg string
	// text is Msg with the options it names.
	text *option.Text
}

func (f Finding) String() string { return f.Where + ": " + f.Msg }

// Named returns the finding with the options its message names called as
// n calls them (pipeguard names the agent's flags).
func (f Finding) Named(n option.Namer) Finding {
	if f.text != nil {
		f.Msg = f.text.Render(n)
	}
	return f
}

// finding is the finding of format and args at where; a Name among args
// is an option of the agent.
func finding(where, format string, args ...any) Finding {
	t := option.Sprintf(format, args...)
	return Finding{Where: where, Msg: t.String(), text: &t}
}

// problem adds a problem, or counts it in MoreProblems once the report
// holds maxProblems.
func (r *Report) problem(where, format string, args ...any) {
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, finding(where, format, args...))
		return
	}
	r.MoreProblems++
}

// notice adds a notice.
func (r *Report) notice(where, format string, args ...any) {
	r.Notices = append(r.Notices, finding(where, format, args...))
}
