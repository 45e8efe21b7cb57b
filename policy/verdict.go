package policy

// Verdict is what admission does with an object. It is the one spelling of
// a decision in pipeguard: the webhook's audit annotation, the background
// audit and `pipeguard policy eval` all carry a Verdict, and each boundary
// that shows one in other words (the CLI's upper-case text, a
// PolicyReport's result, a metric's labels) maps it in one place.
type Verdict string

// The verdicts, from least to most severe. A violation's Action is one of
// Warn, DryRun and Deny: the enforcement action of the policies it comes
// from.
const (
	// Allow admits the object; nothing was found.
	Allow Verdict = "allow"
	// DryRun admits the object and records what would have been denied.
	DryRun Verdict = "dryrun"
	// Warn admits the object with warnings.
	Warn Verdict = "warn"
	// Deny rejects the object.
	Deny Verdict = "deny"
)

// Verdict is what admission does on d: deny when anything is denied, else
// warn when anything warns, else dryrun when anything is recorded, else
// allow.
func (d *Decision) Verdict() Verdict {
	switch {
	case len(d.Deny) > 0:
		return Deny
	case len(d.Warn) > 0:
		return Warn
	case len(d.DryRun) > 0:
		return DryRun
	}
	return Allow
}
