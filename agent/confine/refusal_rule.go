package confine

// RefusalRule is the id of the rule that refused the path, as audit records
// and metrics name it: "confinement/" and the rule, e.g.
// "confinement/symlink-escape".
func (r *Refusal) RefusalRule() string { return "confinement/" + string(r.Rule) }
