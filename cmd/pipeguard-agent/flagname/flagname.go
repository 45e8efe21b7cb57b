// Package flagname names pipeguard-agent's options by the flags that set
// them: the one table from which both pipeguard-agent and pipeguard show
// messages that name an option (see package option), so that a user reads
// the flag they can change.
//
// Its keys are the fields of app.Config that app.OptionError names, and
// the keys of the options the agent's packages name in their messages
// (audit.OptionPath and the like). They are written out here rather than
// imported, so that pipeguard, which shows the audit package's messages,
// does not link the agent's servers to name two flags; the tests check
// them against the packages' constants.
package flagname

// flags maps option keys to the pipeguard-agent flags that set them.
var flags = map[string]string{
	// app.Config fields, as app.OptionError names them.
	"Guard.PolicyDir":     "--policy-dir",
	"Guard.Kubeconfig":    "--kubeconfig",
	"Guard.NodeName":      "--node-name",
	"Guard.TokenAudience": "--token-audience",
	"Guard.Audit.Path":    "--audit-log-path",
	"Guard.CRIEndpoint":   "--cri-endpoint",
	"Guard.CRITimeout":    "--cri-timeout",

	// Options of the agent's packages, as their messages name them.
	"audit.path":                    "--audit-log-path",
	"audit.max-backups":             "--audit-log-maxbackup",
	"audit.max-unsent-bytes":        "--audit-webhook-unsent-max-bytes",
	"server.socket-dir":             "--socket-dir",
	"gate.policy-dir":               "--policy-dir",
	"identity.token.reviewer":       "--kubeconfig",
	"identity.token.audience":       "--token-audience",
	"identity.token.node-name":      "--node-name",
	"identity.cri.endpoint":         "--cri-endpoint",
	"guard.failure":                 "--audit-failure",
	"guard.tokens":                  "--kubeconfig",
	"system.allowed-services":       "--allowed-service",
	"audit.anchor.cluster":          "--kubeconfig",
	"audit.anchor.node":             "--node-name",
	"audit.webhook-batch-max-bytes": "--audit-webhook-batch-max-bytes",
	// The anchor publisher's own options (anchor.OptionNode and the like)
	// are left out: its message names them by their Go names, and the
	// flags behind them by audit.OptionAnchorCluster and OptionAnchorNode.

	// pipeguard-agent compare's.
	"compare.timeout": "--timeout",
}

// Of returns the flag that sets the option key; false when no single flag
// does (the message then keeps the option's Go name). It is an
// option.Namer.
func Of(key string) (string, bool) {
	f, ok := flags[key]
	return f, ok
}
