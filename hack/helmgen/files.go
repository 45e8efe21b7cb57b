package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pipeguard/pipeguard/hack/render"
)

// chartFiles returns every file of the chart but its object templates.
func chartFiles(version string, d defaults) (map[string][]byte, error) {
	schema, err := json.MarshalIndent(valuesSchema(d), "", "  ")
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		"Chart.yaml":             []byte(chartYAML(version)),
		"values.yaml":            []byte(valuesYAML(d)),
		"values.schema.json":     append(schema, '\n'),
		"templates/_helpers.tpl": []byte(helpers),
		"templates/NOTES.txt":    []byte(notes),
		"README.md":              []byte(readme(d)),
		".helmignore":            []byte(header + "\n*.orig\n*.swp\n"),
	}, nil
}

// chartYAML is Chart.yaml of the given chart and app version.
func chartYAML(version string) string {
	return fmt.Sprintf(`%s
apiVersion: v2
name: pipeguard
description: Guards the Windows named pipes of CSI Proxy on Kubernetes nodes (admission webhook with OPA rego policies, optional node agent).
type: application
version: %s
appVersion: %q
kubeVersion: ">=1.30.0-0"
home: https://github.com/pipeguard/pipeguard
keywords: [security, admission, opa, rego, windows, csi-proxy]
`, header, version, version)
}

// comment writes text as YAML comment lines of at most about 76 columns.
func comment(text string) string {
	var lines []string
	line := "#"
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > 76 && line != "#" {
			lines = append(lines, line)
			line = "#"
		}
		line += " " + w
	}
	return strings.Join(append(lines, line), "\n")
}

// valuesYAML is values.yaml, with the defaults config/ sets and a comment
// on every value.
func valuesYAML(d defaults) string {
	return fmt.Sprintf(`%[1]s
#
# The defaults install what config/default installs (make deploy): the
# PipeAccessPolicy CRD, pipeguard-webhook in pipeguard-system with its RBAC,
# Service, certificate Secret and the ValidatingWebhookConfiguration pipeguard.
# No pipeguard image is published: build and push one, and set image.tag or
# image.digest (the chart refuses to render without one).

# The pipeguard-webhook image (make docker-build IMG=...).
image:
  # repository is the image name with its registry.
  repository: %[2]s
  # tag, e.g. v0.1.0. Set tag, digest or both.
  tag: ""
  # digest, e.g. sha256:…; pins the image (with or without a tag).
  digest: ""
  # pullPolicy of the manager container: Always, IfNotPresent or Never.
  pullPolicy: %[3]s

webhook:
  # replicas of pipeguard-webhook. Its PodDisruptionBudget keeps one
  # available, so a single replica blocks node drains: keep two or more.
  replicas: %[4]d
  # failurePolicy of every webhook of the ValidatingWebhookConfiguration:
  # Fail (guarded requests are refused while no replica answers) or Ignore
  # (they are admitted unreviewed).
  failurePolicy: %[5]s

%[6]s
certManager:
  enabled: false

%[7]s
prometheus:
  enabled: false

%[8]s
policyReport:
  enabled: false

%[12]s
openReports:
  enabled: false

%[9]s
agent:
  enabled: false
  # The pipeguard-agent image (make docker-build-agent AGENT_IMG=...), a
  # Windows HostProcess image; required when agent.enabled.
  image:
    repository: %[10]s
    tag: ""
    digest: ""
    pullPolicy: %[11]s
`, header, render.WebhookRepository, d.PullPolicy, d.Replicas, d.FailurePolicy,
		comment(toggles[tCertManager].Doc), comment(toggles[tPrometheus].Doc), comment(toggles[tPolicyReport].Doc), comment(toggles[tAgent].Doc),
		render.AgentRepository, d.AgentPullPolicy, comment(toggles[tOpenReports].Doc))
}

// valuesSchema is values.schema.json: Helm refuses values that do not fit
// it before any template runs.
func valuesSchema(d defaults) map[string]any {
	str := map[string]any{"type": "string"}
	image := func(desc string) map[string]any {
		return map[string]any{
			"type": "object", "description": desc, "additionalProperties": false,
			"properties": map[string]any{
				"repository": map[string]any{"type": "string", "minLength": 1},
				"tag":        str,
				"digest":     map[string]any{"type": "string", "pattern": "^$|^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-fA-F0-9]{32,}$"},
				"pullPolicy": map[string]any{"type": "string", "enum": []string{"Always", "IfNotPresent", "Never"}},
			},
		}
	}
	toggle := func(t int) map[string]any {
		return map[string]any{
			"type": "object", "description": toggles[t].Doc,
			"properties": map[string]any{"enabled": map[string]any{"type": "boolean"}},
		}
	}
	agent := toggle(tAgent)
	agent["properties"].(map[string]any)["image"] = image("The pipeguard-agent image.")
	agent["additionalProperties"] = false
	return map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"type":                 "object",
		"additionalProperties": false,
		"properties": map[string]any{
			"global": map[string]any{"type": "object"},
			"image":  image("The pipeguard-webhook image."),
			"webhook": map[string]any{
				"type": "object", "additionalProperties": false,
				"properties": map[string]any{
					"replicas":      map[string]any{"type": "integer", "minimum": 1},
					"failurePolicy": map[string]any{"type": "string", "enum": []string{"Fail", "Ignore"}},
				},
			},
			"certManager":  toggle(tCertManager),
			"prometheus":   toggle(tPrometheus),
			"policyReport": toggle(tPolicyReport),
			"openReports":  toggle(tOpenReports),
			"agent":        agent,
		},
	}
}

// helpers are the named templates the object templates call.
var helpers = header + `
{{/*
pipeguard.image writes repository[:tag][@digest] of the image values in
.image, refusing an unset or placeholder image; .what names it, .key is its
values path.
*/}}
{{- define "pipeguard.image" -}}
{{- $i := .image -}}
{{- if and (not $i.tag) (not $i.digest) -}}
{{- fail (printf "%s.tag or %s.digest must be set: no %s image is published; build and push one, then install with --set %s.repository=REGISTRY/%s --set %s.tag=TAG" .key .key .what .key .what .key) -}}
{{- end -}}
{{- if eq (toString $i.tag) "` + render.PlaceholderTag + `" -}}
{{- fail (printf "%s.tag is the placeholder %s, which can never be pulled: set %s.tag or %s.digest to an image you pushed" .key $i.tag .key .key) -}}
{{- end -}}
{{- if eq (toString $i.digest) "` + render.PlaceholderDigest + `" -}}
{{- fail (printf "%s.digest is the placeholder %s, which no image has: set %s.tag or %s.digest to an image you pushed" .key $i.digest .key .key) -}}
{{- end -}}
{{- $i.repository -}}
{{- with $i.tag }}:{{ . }}{{ end -}}
{{- with $i.digest }}@{{ . }}{{ end -}}
{{- end -}}

{{- define "pipeguard.webhookImage" -}}
{{- include "pipeguard.image" (dict "image" .Values.image "key" "image" "what" "pipeguard") -}}
{{- end -}}

{{- define "pipeguard.agentImage" -}}
{{- include "pipeguard.image" (dict "image" .Values.agent.image "key" "agent.image" "what" "pipeguard-agent") -}}
{{- end -}}

{{/* pipeguard.failurePolicy checks webhook.failurePolicy, also where no schema is read. */}}
{{- define "pipeguard.failurePolicy" -}}
{{- $p := toString .Values.webhook.failurePolicy -}}
{{- if not (has $p (list "Fail" "Ignore")) -}}
{{- fail (printf "webhook.failurePolicy is %q; allowed values are Fail and Ignore" $p) -}}
{{- end -}}
{{- $p -}}
{{- end -}}
`

var notes = `pipeguard {{ .Chart.AppVersion }} is installed: pipeguard-webhook runs in pipeguard-system with failurePolicy {{ .Values.webhook.failurePolicy }}.

Check that it serves and that a pod mounting a protected pipe is refused:

  kubectl -n pipeguard-system rollout status deployment/pipeguard-webhook
  kubectl get pipeaccesspolicies

{{- if .Values.agent.enabled }}

The node agent runs in pipeguard-agent on Windows nodes, in place of CSI Proxy:
  kubectl -n pipeguard-agent get daemonset pipeguard-agent
{{- end }}
{{- if .Values.prometheus.enabled }}

Prometheus scrapes the webhook{{ if .Values.agent.enabled }} and the agent{{ end }}; alerts: PrometheusRule pipeguard in pipeguard-system.
{{- end }}

docs/install.md in the pipeguard repository covers rollout in warn mode, upgrades and troubleshooting.
`

func readme(d defaults) string {
	var rows []string
	row := func(path, def, doc string) { rows = append(rows, fmt.Sprintf("| `%s` | `%s` | %s |", path, def, doc)) }
	row("image.repository", render.WebhookRepository, "the pipeguard-webhook image")
	row("image.tag", `""`, "its tag; `image.tag` or `image.digest` is required")
	row("image.digest", `""`, "its digest (`sha256:…`), pins the image")
	row("image.pullPolicy", d.PullPolicy, "Always, IfNotPresent or Never")
	row("webhook.replicas", fmt.Sprint(d.Replicas), "replicas of pipeguard-webhook (its PodDisruptionBudget keeps one available: keep two or more)")
	row("webhook.failurePolicy", d.FailurePolicy, "Fail or Ignore, for every webhook of the ValidatingWebhookConfiguration pipeguard")
	row("certManager.enabled", "false", toggles[tCertManager].Doc)
	row("prometheus.enabled", "false", toggles[tPrometheus].Doc)
	row("policyReport.enabled", "false", toggles[tPolicyReport].Doc)
	row("openReports.enabled", "false", toggles[tOpenReports].Doc)
	row("agent.enabled", "false", toggles[tAgent].Doc)
	row("agent.image.repository", render.AgentRepository, "the pipeguard-agent image")
	row("agent.image.tag", `""`, "its tag; `agent.image.tag` or `agent.image.digest` is required with `agent.enabled`")
	row("agent.image.digest", `""`, "its digest")
	row("agent.image.pullPolicy", d.AgentPullPolicy, "Always, IfNotPresent or Never")
	return fmt.Sprintf(`<!-- %s -->

# pipeguard Helm chart

Installs pipeguard from this repository's chart folder (no chart repository
and no image are published):

`+"```console"+`
helm install pipeguard charts/pipeguard -n pipeguard-system --create-namespace \
  --set image.repository=registry.example.com/pipeguard --set image.tag=v0.1.0
`+"```"+`

The templates are generated from the kustomize overlays of config/ by
hack/helmgen (`+"`make helm`"+`); with the default values the chart installs the
objects of config/default, with the image you set. The objects name their
namespaces (pipeguard-system, and pipeguard-agent for the agent) whatever the
release's namespace is.

## Values

| value | default | what it does |
|---|---|---|
%s

Values are checked by values.schema.json before anything is rendered.
`, strings.TrimPrefix(header, "# "), strings.Join(rows, "\n"))
}
