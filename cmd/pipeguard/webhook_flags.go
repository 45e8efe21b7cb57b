package main

import "github.com/pipeguard/pipeguard/policy"

// webhookFlag names the engine's options by the pipeguard-webhook flags
// that set them: `policy eval` decides with the webhook's defaults, so a
// rule that runs out of time here does so in the cluster too, and the
// message says what to change there. It is an option.Namer.
func webhookFlag(key string) (string, bool) {
	if key == policy.OptionAdminRuleTimeout {
		return "pipeguard-webhook's --admin-rule-timeout", true
	}
	return "", false
}
