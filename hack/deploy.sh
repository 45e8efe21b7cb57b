#!/usr/bin/env bash
# Renders, installs or removes one overlay of config/: what `make render`,
# `make deploy` and `make undeploy` run.
#
# Usage:
#   hack/deploy.sh render     print the manifests of config/$OVERLAY
#   hack/deploy.sh deploy     apply them to the current kubectl context
#   hack/deploy.sh undeploy   delete them, the webhook configuration first
#
# Environment (the make variables of the same names):
#   OVERLAY          the directory of config/ (default: default)
#   IMG              the pipeguard image; required when the overlay runs it
#   AGENT_IMG        the pipeguard-agent image; required when the overlay runs it
#   DEPLOY_DIR       where the kustomization and rendered manifests are
#                    written (default: bin/deploy)
#   ROLLOUT_TIMEOUT  how long deploy waits for a Deployment (default: 5m)
#   KUBECTL          the kubectl deploy and undeploy apply with; default:
#                    kubectl from PATH (render needs none)
#   GO               the go command (default: go)
#   WEBHOOK_URL, WEBHOOK_CA_FILE, ADMISSION_DIR
#                    for OVERLAY=manifest-admission only: the https URL
#                    kube-apiserver calls pipeguard-webhook at, the PEM file
#                    of the CA of its serving certificate, and the directory
#                    the files go to on the control-plane nodes (default:
#                    /etc/kubernetes/pipeguard)
#
# OVERLAY=manifest-admission is admission configuration that kube-apiserver
# loads from files, not objects of the API: render prints the manifests and
# writes the files into $DEPLOY_DIR/manifest-admission, to be copied to every
# control-plane node (docs/install.md); deploy and undeploy refuse it.
#
# No pipeguard image is published: config/ names a placeholder that can
# never be pulled, and render and deploy refuse to go on while the overlay
# would run it (or the unpublished :dev tag that config/ once named). The
# syntax of IMG and AGENT_IMG is checked by hack/kustomization.
#
# deploy applies an overlay that has both a Deployment and a webhook
# configuration in three steps: everything but the webhook configuration,
# then `kubectl rollout status` of each Deployment, then the webhook
# configuration. A fail-closed webhook is therefore registered only once a
# replica answers; if the rollout fails, it is not applied at all.

set -o errexit -o nounset -o pipefail

action=${1:-}
case "$action" in
render | deploy | undeploy) ;;
*)
	echo "usage: hack/deploy.sh render|deploy|undeploy" >&2
	exit 2
	;;
esac

overlay=${OVERLAY:-default}
out=${DEPLOY_DIR:-bin/deploy}
go=${GO:-go}
timeout=${ROLLOUT_TIMEOUT:-5m}

# The images the manifests in config/ name, and the placeholders
# config/manager and config/agent replace them with: a tag that says what is
# wrong and a digest no image has.
webhook_repo=ghcr.io/pipeguard/pipeguard
agent_repo=ghcr.io/pipeguard/pipeguard-agent
placeholder=image-not-set@sha256:0000000000000000000000000000000000000000000000000000000000000000

fail() {
	printf 'make %s: %s\n' "$action" "$*" >&2
	exit 1
}

# kubectl: $KUBECTL, else kubectl from PATH. Only deploy and undeploy need
# it, to apply and delete; render builds the manifests with kustomize's Go
# API and talks to no cluster.
kubectl=
need_kubectl() {
	if [ -n "${KUBECTL:-}" ]; then
		kubectl=$KUBECTL
	elif command -v kubectl >/dev/null; then
		kubectl=$(command -v kubectl)
	else
		fail "no kubectl on PATH, and make $action applies with it: install kubectl (https://kubernetes.io/docs/tasks/tools/) or name one with KUBECTL=/path/to/kubectl. Nothing was applied.
To see what would be applied without kubectl: make render OVERLAY=$overlay"
	fi
}
if [ "$overlay" = manifest-admission ] && [ "$action" != render ]; then
	fail "config/manifest-admission is loaded by kube-apiserver from files on the control-plane nodes, not applied through the API: nothing was changed.
Write the files with
  make render OVERLAY=manifest-admission WEBHOOK_URL=https://<address>:9443/validate WEBHOOK_CA_FILE=ca.crt
then $([ "$action" = deploy ] && echo 'copy them to every control-plane node' || echo 'remove them from every control-plane node') as docs/install.md (\"Admission configuration from files\") says."
fi
if [ "$action" != render ]; then
	need_kubectl
fi

mkdir -p "$out"

# split writes the webhook configurations of the manifests in $1 to
# $out/webhooks.yaml, everything else to $out/rest.yaml, the Deployments'
# "namespace name" to $out/deployments and the webhook configurations'
# "kind/name" to $out/webhook-names. It reads kubectl kustomize output:
# documents separated by "---", top-level keys in the first column.
split() {
	rm -f "$out/webhooks.yaml" "$out/rest.yaml" "$out/deployments" "$out/webhook-names"
	touch "$out/webhooks.yaml" "$out/rest.yaml" "$out/deployments" "$out/webhook-names"
	awk -v dir="$out" '
		function flush() {
			if (doc != "") {
				if (kind == "ValidatingWebhookConfiguration" || kind == "MutatingWebhookConfiguration") {
					printf "---\n%s", doc >> (dir "/webhooks.yaml")
					print kind "/" name >> (dir "/webhook-names")
				} else {
					printf "---\n%s", doc >> (dir "/rest.yaml")
				}
				if (kind == "Deployment") print ns " " name >> (dir "/deployments")
			}
			doc = ""; kind = ""; name = ""; ns = ""; meta = 0
		}
		/^---/ { flush(); next }
		{
			doc = doc $0 "\n"
			if ($0 ~ /^[^ #]/) meta = ($0 == "metadata:")
			if ($0 ~ /^kind: /) kind = substr($0, 7)
			if (meta && $0 ~ /^  name: /) name = substr($0, 9)
			if (meta && $0 ~ /^  namespace: /) ns = substr($0, 14)
		}
		END { flush() }
	' "$1"
}

if [ "$action" = undeploy ]; then
	[ -f "config/$overlay/kustomization.yaml" ] || fail "OVERLAY=$overlay: config/$overlay has no kustomization.yaml"
	"$go" run ./hack/kustomization --overlay "$overlay" --out "$out" --render \
		--img "$webhook_repo:$placeholder" --agent-img "$agent_repo:$placeholder" || exit 1
	mv "$out/manifests.yaml" "$out/undeploy.yaml"
	split "$out/undeploy.yaml"
	# The webhook configuration goes first: from then on nothing is
	# rejected while the rest is removed.
	if [ -s "$out/webhooks.yaml" ]; then
		"$kubectl" delete --ignore-not-found -f "$out/webhooks.yaml"
	fi
	"$kubectl" delete --ignore-not-found -f "$out/undeploy.yaml"
	exit 0
fi

# The kustomization of config/$overlay with the images set. Unset images
# stay the placeholders, which the check below refuses where the overlay
# runs them; hack/kustomization refuses a malformed reference.
"$go" run ./hack/kustomization --overlay "$overlay" --out "$out" --render \
	--img "${IMG:-$webhook_repo:$placeholder}" --agent-img "${AGENT_IMG:-$agent_repo:$placeholder}" || exit 1

# unpublished VAR VALUE REPO WHAT BUILD prints why the rendered manifests
# cannot run REPO's image as VAR names it, when they would run the
# placeholder or the unpublished :dev tag.
problems=""
unpublished() {
	local var=$1 value=$2 repo=$3 what=$4 build=$5
	if ! grep -Eq "^ +(- )?image: \"?${repo//./\\.}:(dev|image-not-set)(@.*)?\"?$" "$out/manifests.yaml"; then
		return 0
	fi
	if [ -z "$value" ]; then
		problems+="$var is not set, and config/$overlay runs the $what image."$'\n'
	else
		problems+="$var=$value is not published anywhere, and config/$overlay runs it as the $what image."$'\n'
	fi
	problems+="No $what image is published: build one, push it to a registry your nodes can pull from, and name it:"$'\n'"$build"$'\n'
}
unpublished IMG "${IMG:-}" "$webhook_repo" pipeguard \
	"  make docker-build IMG=registry.example.com/pipeguard:v0.1.0
  docker push registry.example.com/pipeguard:v0.1.0
  make $action OVERLAY=$overlay IMG=registry.example.com/pipeguard:v0.1.0"
unpublished AGENT_IMG "${AGENT_IMG:-}" "$agent_repo" pipeguard-agent \
	"  make docker-build-agent AGENT_IMG=registry.example.com/pipeguard-agent:v0.1.0   # docker buildx, pushes
  make $action OVERLAY=$overlay AGENT_IMG=registry.example.com/pipeguard-agent:v0.1.0"
if [ -n "$problems" ]; then
	if [ "$action" = deploy ]; then
		problems+="Nothing was applied: pods that cannot pull their image never start, and a fail-closed webhook without them rejects every request it guards."
	fi
	fail "${problems%$'\n'}"
fi

if [ "$action" = render ]; then
	if [ "$overlay" = manifest-admission ]; then
		"$go" run ./hack/kustomization --overlay "$overlay" --out "$out" --render \
			--img "${IMG:-$webhook_repo:$placeholder}" --agent-img "${AGENT_IMG:-$agent_repo:$placeholder}" \
			--admission-files "$out/manifest-admission" --admission-dir "${ADMISSION_DIR:-/etc/kubernetes/pipeguard}" \
			--webhook-url "${WEBHOOK_URL:-}" --webhook-ca-file "${WEBHOOK_CA_FILE:-}" || exit 1
	fi
	cat "$out/manifests.yaml"
	exit 0
fi

# config/networkpolicy ships without the API servers' address range, which
# only the cluster's admin knows.
if grep -q 'SET-THE-API-SERVER-CIDR' "$out/manifests.yaml"; then
	fail "config/$overlay: the NetworkPolicy pipeguard-webhook does not name the address range your API servers connect from (cidr: SET-THE-API-SERVER-CIDR).
Set it in config/$overlay/webhook-ingress.yaml, or in an overlay of your own, e.g. the control plane nodes' subnet:
  cidr: 10.0.0.0/24
Nothing was applied: a policy without it would stop the API server from calling the fail-closed webhook."
fi

# deploy: the CRDs the overlay needs from other projects are checked first,
# and nothing is applied when one is missing.
"$go" run ./hack/kustomization --overlay "$overlay" --out "$out" \
	--img "${IMG:-$webhook_repo:$placeholder}" --agent-img "${AGENT_IMG:-$agent_repo:$placeholder}" \
	--preflight-kubectl "$kubectl" || exit 1

split "$out/manifests.yaml"
if [ ! -s "$out/webhooks.yaml" ] || [ ! -s "$out/deployments" ]; then
	"$kubectl" apply --server-side -f "$out/manifests.yaml"
	exit 0
fi

webhooks=$(paste -sd, "$out/webhook-names" | sed 's/,/, /g')
echo "make deploy: applying config/$overlay without $webhooks"
"$kubectl" apply --server-side -f "$out/rest.yaml"
while read -r ns name; do
	echo "make deploy: waiting up to $timeout (ROLLOUT_TIMEOUT) for deployment/$name in namespace $ns to roll out"
	if ! "$kubectl" rollout status "deployment/$name" --namespace "$ns" --timeout "$timeout" </dev/null; then
		fail "deployment/$name in namespace $ns did not roll out within $timeout, so $webhooks was not applied: nothing new is rejected, and a webhook configuration of an earlier install stays as it was.
See why with:
  kubectl --namespace $ns get pods
  kubectl --namespace $ns describe pods
ErrImagePull or ImagePullBackOff means the nodes cannot pull IMG=${IMG:-}: push it, or name an image they can pull. Then run make deploy again (ROLLOUT_TIMEOUT=10m to wait longer)."
	fi
done <"$out/deployments"
echo "make deploy: applying $webhooks"
"$kubectl" apply --server-side -f "$out/webhooks.yaml"
