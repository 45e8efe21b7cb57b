# pipeguard: admission webhook, node agent and admin CLI guarding the Windows
# named pipes of CSI Proxy.

SHELL := /usr/bin/env bash -o errexit -o nounset -o pipefail
.DEFAULT_GOAL := help

GO       ?= go
BIN      := $(CURDIR)/bin
IMG      ?= ghcr.io/pipeguard/pipeguard:dev
AGENT_IMG ?= ghcr.io/pipeguard/pipeguard-agent:dev

CONTROLLER_GEN_VERSION := v0.23.0
CONTROLLER_GEN := $(BIN)/tools/controller-gen-$(CONTROLLER_GEN_VERSION)/controller-gen

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Try it

.PHONY: demo
demo: control-plane ## Run pipeguard-webhook on a local control plane with sample manifests (DEMO_EXIT=1 to exit after them).
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/pipeguard-webhook ./cmd/pipeguard-webhook
	KUBEBUILDER_ASSETS="$$(hack/control-plane.sh | tail -n 1)" $(GO) run ./hack/demo --webhook $(BIN)/pipeguard-webhook

.PHONY: control-plane
control-plane: ## Build kube-apiserver, etcd and kubectl from Go modules into bin/k8s (once).
	hack/control-plane.sh >/dev/null

##@ Development

.PHONY: build
build: ## Build pipeguard, pipeguard-webhook and pipeguard-agent into bin/.
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/ ./cmd/...

.PHONY: fmt
fmt: ## Format the Go code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: lint
lint: ## Check formatting and vet for Linux and Windows.
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	GOOS=windows $(GO) build ./...
	GOOS=windows $(GO) vet ./...

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code and the API group adapters.
	$(CONTROLLER_GEN) object paths=./api/...
	$(GO) generate ./agent/groups

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Regenerate the CRD from api/v1alpha1.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases

.PHONY: verify-generated
verify-generated: $(CONTROLLER_GEN) ## Fail when the committed CRD, deepcopy code or API group adapters are stale.
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config="$$tmp/crd"; \
	if ! diff -r config/crd/bases "$$tmp/crd"; then echo "config/crd/bases is stale: run make manifests and commit the result"; exit 1; fi; \
	cp api/v1alpha1/zz_generated.deepcopy.go "$$tmp/deepcopy.go"; \
	$(CONTROLLER_GEN) object paths=./api/...; \
	if ! diff "$$tmp/deepcopy.go" api/v1alpha1/zz_generated.deepcopy.go; then cp "$$tmp/deepcopy.go" api/v1alpha1/zz_generated.deepcopy.go; echo "api/v1alpha1/zz_generated.deepcopy.go is stale: run make generate and commit the result"; exit 1; fi; \
	$(GO) run ./hack/groupgen -out "$$tmp/groups"; \
	for f in $$( (cd agent/groups && ls */zz_generated.versions.go; cd "$$tmp/groups" && ls */zz_generated.versions.go) | sort -u); do \
		if ! diff "agent/groups/$$f" "$$tmp/groups/$$f"; then echo "agent/groups/$$f is stale: run make generate and commit the result"; exit 1; fi; \
	done

.PHONY: test
test: lint verify-generated control-plane ## Run every test: lint, unit, rego, fuzz seeds and integration tests.
	KUBEBUILDER_ASSETS="$$(hack/control-plane.sh | tail -n 1)" $(GO) test ./...

.PHONY: fuzz
fuzz: ## Fuzz the pipe path normalizer and the object reader, each for FUZZTIME (default 3m).
	$(GO) test ./pipepath -run '^$$' -fuzz FuzzClassify -fuzztime $${FUZZTIME:-3m}
	$(GO) test ./webhook/decode -run '^$$' -fuzz FuzzDecodeMatchesJSON -fuzztime $${FUZZTIME:-3m}

# make bench writes its raw results to BENCH_OUT and the report to
# docs/benchmarks. BENCH_DURATION is the measured time of each load run,
# budgeted so that make bench takes under 10 minutes on 2 cores, including up
# to twelve webhook runs made again because the hypervisor took more than 1%
# of the CPU time during them (a virtual machine's steal time): p99 is the
# slowest 1% of a run's requests, and that much stolen time can decide it.
BENCH_OUT      ?= $(BIN)/bench
BENCH_DURATION ?= 8s

.PHONY: bench
bench: ## Run every benchmark and write the report docs/benchmarks/README.md with latency.svg (under 10 minutes).
	@start=$$(date +%s); status=0; \
	$(MAKE) --no-print-directory bench-load bench-go || status=$$?; \
	$(GO) run ./hack/bench/report --in $(BENCH_OUT) --out docs/benchmarks --elapsed $$(( $$(date +%s) - start ))s || status=1; \
	echo "make bench: $$(( $$(date +%s) - start )) s wall time"; \
	exit $$status

.PHONY: bench-go
bench-go: ## Run the Go benchmarks on one core (output also in BENCH_OUT/gobench.txt).
	mkdir -p $(BENCH_OUT)
	$(GO) test ./webhook/... ./policy/... ./agent/... ./hack/bench/loadtest -run '^$$' -bench . -benchmem -cpu 1 | tee $(BENCH_OUT)/gobench.txt

.PHONY: bench-load
bench-load: ## Load the webhook (hack/bench/loadtest) and the agent (hack/bench/agentload) into BENCH_OUT/*.json.
	mkdir -p $(BENCH_OUT)
	rm -f $(BENCH_OUT)/machine.json $(BENCH_OUT)/webhook.json $(BENCH_OUT)/scale.json $(BENCH_OUT)/agent.json
	$(GO) run ./hack/bench/report machine > $(BENCH_OUT)/machine.json
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BENCH_OUT)/ ./hack/bench/loadtest ./hack/bench/agentload
	sync # write back what earlier work left, so that it does not stall the latency runs
	@# The scale runs go first: they have the fewest runs to make again.
	@status=0; \
	$(BENCH_OUT)/loadtest --target pipeguard,pipeguard-uncached --namespaces 10000 --policies 50 --small-first --rate 1000 --closed 16 \
		--duration $(BENCH_DURATION) --warmup 2s --steal-limit 1 --steal-retries 4 --json $(BENCH_OUT)/scale.json || status=1; \
	$(BENCH_OUT)/loadtest --target all --rates 500,1000,2000,5000 --closed 16 --duration $(BENCH_DURATION) --warmup 2s \
		--steal-limit 1 --steal-retries 8 --json $(BENCH_OUT)/webhook.json || status=1; \
	$(BENCH_OUT)/agentload --duration 5s --warmup 1s --dir $(BENCH_OUT) --json $(BENCH_OUT)/agent.json || status=1; \
	exit $$status

##@ Deployment

# OVERLAY is the directory of config/ to render or install: default,
# cert-manager, agent, prometheus, samples, local. KUBECTL defaults to the
# kubectl that hack/control-plane.sh builds; set KUBECTL=kubectl for yours.
OVERLAY ?= default

.PHONY: render
render: ## Print the manifests of config/OVERLAY (default: default) with the IMG and AGENT_IMG images.
	@$(call kustomization) && $(kubectl) kustomize $(BIN)/deploy

.PHONY: deploy
deploy: ## Install config/OVERLAY with the IMG and AGENT_IMG images into the current kubectl context.
	@$(call kustomization) && $(kubectl) apply --server-side -k $(BIN)/deploy

.PHONY: undeploy
undeploy: ## Remove config/OVERLAY; the webhook configuration goes first, so nothing is rejected meanwhile.
	case "$(OVERLAY)" in default|cert-manager|local) $(kubectl) delete validatingwebhookconfiguration pipeguard --ignore-not-found;; esac
	$(kubectl) delete -k config/$(OVERLAY) --ignore-not-found

# kustomization writes bin/deploy/kustomization.yaml: config/$(OVERLAY)
# with the images set (IMG and AGENT_IMG are name:tag).
kubectl = "$${KUBECTL:-$$(hack/control-plane.sh | tail -n 1)/kubectl}"
define kustomization
mkdir -p $(BIN)/deploy && printf '%s\n' \
	'apiVersion: kustomize.config.k8s.io/v1beta1' 'kind: Kustomization' \
	'resources: [../../config/$(OVERLAY)]' 'images:' \
	'- {name: ghcr.io/pipeguard/pipeguard, newName: "$(firstword $(subst :, ,$(IMG)))", newTag: "$(lastword $(subst :, ,$(IMG)))"}' \
	'- {name: ghcr.io/pipeguard/pipeguard-agent, newName: "$(firstword $(subst :, ,$(AGENT_IMG)))", newTag: "$(lastword $(subst :, ,$(AGENT_IMG)))"}' \
	> $(BIN)/deploy/kustomization.yaml
endef

##@ Images

.PHONY: docker-build
docker-build: ## Build the webhook/CLI image (needs a Docker engine).
	docker build -t $(IMG) .

.PHONY: docker-build-agent
docker-build-agent: ## Build and push the Windows HostProcess image of the agent (needs docker buildx).
	docker buildx build --platform windows/amd64 -f Dockerfile.agent.windows -t $(AGENT_IMG) --push .

$(CONTROLLER_GEN):
	GOBIN=$(dir $(CONTROLLER_GEN)) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
