package main

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pipeguard/pipeguard/hack/render"
)

// sentinel marks a field of a rendered object that the chart takes from
// values.yaml; write replaces each with its template expression.
const sentinel = "PIPEGUARDHELMVALUE"

// A field of the rendered objects that values.yaml sets.
const (
	fWebhookImage      = sentinel + "webhookImage"
	fWebhookPullPolicy = sentinel + "webhookPullPolicy"
	fAgentImage        = sentinel + "agentImage"
	fAgentPullPolicy   = sentinel + "agentPullPolicy"
	fReplicas          = sentinel + "replicas"
	fFailurePolicy     = sentinel + "failurePolicy"
)

// expressions are the template expressions of the fields.
var expressions = map[string]string{
	fWebhookImage:      `{{ include "pipeguard.webhookImage" . | quote }}`,
	fWebhookPullPolicy: `{{ .Values.image.pullPolicy | quote }}`,
	fAgentImage:        `{{ include "pipeguard.agentImage" . | quote }}`,
	fAgentPullPolicy:   `{{ .Values.agent.image.pullPolicy | quote }}`,
	fReplicas:          `{{ .Values.webhook.replicas }}`,
	fFailurePolicy:     `{{ include "pipeguard.failurePolicy" . }}`,
}

// defaults holds what config/ sets for the fields values.yaml takes over,
// so that the chart's default values render what config/default renders.
type defaults struct {
	PullPolicy, AgentPullPolicy, FailurePolicy string
	Replicas                                   int64
}

// parameterize replaces the fields values.yaml sets with sentinels and
// records what config/ had in them. A value that differs between objects
// or between overlays is an error: values.yaml could not hold both.
func parameterize(o *unstructured.Unstructured, d *defaults, seen map[string]string) error {
	record := func(field, value string) error {
		if prev, ok := seen[field]; ok && prev != value {
			return fmt.Errorf("%s sets %s to %q where other objects set %q: the chart has one value for it", identity(o), strings.TrimPrefix(field, sentinel), value, prev)
		}
		seen[field] = value
		return nil
	}
	switch o.GetKind() {
	case "Deployment", "DaemonSet":
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for i, c := range containers {
			c := c.(map[string]any)
			image, _ := c["image"].(string)
			var fImage, fPull string
			switch {
			case strings.HasPrefix(image, render.WebhookRepository+":") || strings.HasPrefix(image, render.WebhookRepository+"@"):
				fImage, fPull = fWebhookImage, fWebhookPullPolicy
			case strings.HasPrefix(image, render.AgentRepository+":") || strings.HasPrefix(image, render.AgentRepository+"@"):
				fImage, fPull = fAgentImage, fAgentPullPolicy
			default:
				continue
			}
			c["image"] = fImage
			if p, ok := c["imagePullPolicy"].(string); ok {
				if err := record(fPull, p); err != nil {
					return err
				}
				c["imagePullPolicy"] = fPull
			}
			containers[i] = c
		}
		if err := unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers"); err != nil {
			return fmt.Errorf("%s: %w", identity(o), err)
		}
		if o.GetKind() == "Deployment" && o.GetName() == "pipeguard-webhook" {
			n, ok, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
			if !ok {
				return fmt.Errorf("%s has no spec.replicas: the chart's webhook.replicas has nothing to set", identity(o))
			}
			if err := record(fReplicas, fmt.Sprint(n)); err != nil {
				return err
			}
			d.Replicas = n
			o.Object["spec"].(map[string]any)["replicas"] = fReplicas
		}
	case "ValidatingWebhookConfiguration":
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for i, h := range hooks {
			h := h.(map[string]any)
			p, ok := h["failurePolicy"].(string)
			if !ok {
				return fmt.Errorf("%s: webhook %v has no failurePolicy: the chart's webhook.failurePolicy has nothing to set", identity(o), h["name"])
			}
			if err := record(fFailurePolicy, p); err != nil {
				return err
			}
			h["failurePolicy"] = fFailurePolicy
			hooks[i] = h
		}
		if err := unstructured.SetNestedSlice(o.Object, hooks, "webhooks"); err != nil {
			return fmt.Errorf("%s: %w", identity(o), err)
		}
	}
	d.PullPolicy = seen[fWebhookPullPolicy]
	d.AgentPullPolicy = seen[fAgentPullPolicy]
	d.FailurePolicy = seen[fFailurePolicy]
	return nil
}
