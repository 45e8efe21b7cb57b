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
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

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
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code.
	$(CONTROLLER_GEN) object paths=./policy/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Regenerate the CRD from policy/v1alpha1.
	$(CONTROLLER_GEN) crd paths=./policy/... output:crd:artifacts:config=config/crd/bases

.PHONY: test
test: lint ## Run every test: lint, unit, rego, fuzz seeds and integration tests.
	$(GO) test ./...

.PHONY: fuzz
fuzz: ## Fuzz the pipe path normalizer for FUZZTIME (default 3m).
	$(GO) test ./webhook/pipepath -run '^$$' -fuzz FuzzClassify -fuzztime $${FUZZTIME:-3m}

.PHONY: bench
bench: ## Run the Go benchmarks on one core.
	$(GO) test ./webhook/... ./policy/... -run '^$$' -bench . -benchmem -cpu 1

##@ Images

.PHONY: docker-build
docker-build: ## Build the webhook/CLI image (needs a Docker engine).
	docker build -t $(IMG) .

$(CONTROLLER_GEN):
	GOBIN=$(dir $(CONTROLLER_GEN)) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
