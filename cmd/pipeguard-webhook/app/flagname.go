package app

import "github.com/pipeguard/pipeguard/policy"

// AdminRuleTimeoutFlag is the flag that sets Options.AdminRuleTimeout.
const AdminRuleTimeoutFlag = "admin-rule-timeout"

// DefaultAdminRuleTimeout is the default of AdminRuleTimeoutFlag: well
// under the 5 s the API server waits for the webhook (see
// policy.DefaultAdminRuleTimeout).
const DefaultAdminRuleTimeout = policy.DefaultAdminRuleTimeout

// flagName names the options of pipeguard-webhook's packages by the flags
// that set them, so that the messages users read (an admission error, a
// policy's status) name the flag they can change. It is an option.Namer.
func flagName(key string) (string, bool) {
	f, ok := map[string]string{
		policy.OptionAdminRuleTimeout: "--" + AdminRuleTimeoutFlag,
	}[key]
	return f, ok
}
