package system

// NotAllowedError is a start or a stop refused because it would reach a
// service the agent may not touch: a dependency or a dependent that is not
// one of the allowed services. The system group answers it as a denial
// under Rule.
type NotAllowedError struct {
	// Rule names the rule that refused it, RuleAllowedServices.
	Rule string
	// Msg says what was refused and how to allow it.
	Msg string
}

func (e *NotAllowedError) Error() string { return e.Msg + " (rule " + e.Rule + ")" }
