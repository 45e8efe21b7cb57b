# pipeguard: admission webhook, node agent and admin CLI guarding the Windows
# named pipes of CSI Proxy.

SHELL := /usr/bin/env bash -o errexit -o nounset -o pipefail
.DEFAULT_GOAL := help

GO       ?= go
BIN      := $(CURDIR)/bin
# The images to build and install. No pipeguard image is published: build
# and push your own (make docker-build, make docker-build-agent) and name it
# here. make render and make deploy refuse to go on without the image an
# overlay runs.
IMG       ?=
AGENT_IMG ?=

CONTROLLER_GEN_VERSION := v0.23.0
CONTROLLER_GEN := $(BIN)/tools/controller-gen-$(CONTROLLER_GEN_VERSION)/controller-gen

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Try it

.PHONY: demo
demo: control-plane ## Run pipeguard-webhook and pipeguard-agent on a local control plane: sample manifests, agent calls, audit review (DEMO_EXIT=1 to exit after them).
	@# One go build for the four binaries: pipeguard-webhook, pipeguard-agent
	@# (its Linux build, on unix sockets), the pipeguard CLI and the demo.
	@hack/progress.sh --packages "demo: building pipeguard-webhook, pipeguard-agent, pipeguard and the demo, ~1400 packages" \
		"about 5-8 minutes on 2 CPUs" -- env CGO_ENABLED=0 $(GO) build -v -trimpath -o $(BIN)/ \
		./cmd/pipeguard-webhook ./cmd/pipeguard-agent ./cmd/pipeguard ./hack/demo
	@# The demo runs as itself, not under go run, so that Ctrl-C reaches it
	@# alone: it cleans up and exits 0 after a good run.
	KUBEBUILDER_ASSETS="$$(hack/control-plane.sh | tail -n 1)" $(BIN)/demo --webhook $(BIN)/pipeguard-webhook \
		--agent $(BIN)/pipeguard-agent --pipeguard $(BIN)/pipeguard

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
	@echo "lint 1/6: gofmt"
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	@hack/progress.sh "lint 2/6: go vet, Linux" "it compiles every package, about 5-10 minutes on 2 CPUs" -- $(GO) vet ./...
	@hack/progress.sh "lint 3/6: go build, Windows" "about 5 minutes on 2 CPUs" -- env GOOS=windows $(GO) build ./...
	@hack/progress.sh "lint 4/6: go vet, Windows" "about 2-5 minutes on 2 CPUs" -- env GOOS=windows $(GO) vet ./...
	@hack/progress.sh "lint 5/6: go vet of the Wine tests" "about a minute" -- $(GO) vet -tags wine ./test/wine
	@hack/progress.sh "lint 6/6: go vet of the load generator" "about a minute" -- $(GO) vet -tags benchtools ./hack/bench/loadtest

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code and the API group adapters.
	$(CONTROLLER_GEN) object paths=./api/...
	$(GO) generate ./agent/groups

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Regenerate the CRD from api/v1alpha1.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases

.PHONY: helm
helm: ## Regenerate the Helm chart charts/pipeguard from the kustomize overlays of config/.
	$(GO) run ./hack/helmgen --config config --out charts/pipeguard

.PHONY: verify-generated
verify-generated: $(CONTROLLER_GEN) ## Fail when the committed CRD, deepcopy code or API group adapters are stale.
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config="$$tmp/crd"; \
	if ! diff -r config/crd/bases "$$tmp/crd"; then echo "config/crd/bases is stale: run make manifests and commit the result"; exit 1; fi; \
	cp api/v1alpha1/zz_generated.deepcopy.go "$$tmp/deepcopy.go"; \
	$(CONTROLLER_GEN) object paths=./api/...; \
	if ! diff "$$tmp/deepcopy.go" api/v1alpha1/zz_generated.deepcopy.go; then cp "$$tmp/deepcopy.go" api/v1alpha1/zz_generated.deepcopy.go; echo "api/v1alpha1/zz_generated.deepcopy.go is stale: run make generate and commit the result"; exit 1; fi; \
	hack/progress.sh "verify-generated: the API group adapters, with hack/groupgen" "about a minute on 2 CPUs" -- $(GO) run ./hack/groupgen -out "$$tmp/groups"; \
	for f in $$( (cd agent/groups && ls */zz_generated.versions.go; cd "$$tmp/groups" && ls */zz_generated.versions.go) | sort -u); do \
		if ! diff "agent/groups/$$f" "$$tmp/groups/$$f"; then echo "agent/groups/$$f is stale: run make generate and commit the result"; exit 1; fi; \
	done; \
	hack/progress.sh "verify-generated: the Helm chart, with hack/helmgen" "about a minute on 2 CPUs" -- $(GO) run ./hack/helmgen --config config --out "$$tmp/chart"; \
	if ! diff -r charts/pipeguard "$$tmp/chart"; then echo "charts/pipeguard is stale: run make helm and commit the result"; exit 1; fi

# RACE is the flag that turns on the race detector for the unit run:
# -race when cgo is on and its C compiler is installed (the detector needs
# both), else empty, and make test says so. Set RACE= to run without it.
RACE ?= $(shell [ "$$($(GO) env CGO_ENABLED)" = 1 ] && command -v "$$($(GO) env CC)" >/dev/null 2>&1 && echo -race)

.PHONY: test
test: lint verify-generated control-plane ## Run every test: lint, unit (with -race), rego, fuzz seeds, integration, the bench tools' and the Windows tests.
	@[ -n '$(RACE)' ] || [ '$(origin RACE)' != file ] || echo "make test: no race detector (it needs CGO_ENABLED=1 and the C compiler $$($(GO) env CC)): running the unit tests without -race"
	@PROGRESS_EVERY=30 hack/progress.sh "test: go test $(RACE) ./... (unit, integration on a real kube-apiserver, the demo)" \
		"it compiles every package and test binary, 10-20 minutes on 2 CPUs, more with -race; then the tests run for minutes" -- \
		env KUBEBUILDER_ASSETS="$$(hack/control-plane.sh | tail -n 1)" $(GO) test $(RACE) ./...
	@$(MAKE) --no-print-directory test-bench-tools
	@$(MAKE) --no-print-directory test-windows

.PHONY: test-bench-tools
test-bench-tools: control-plane ## Run the tests of the load generator hack/bench/loadtest (build tag benchtools, left out of the unit run).
	@hack/progress.sh "test-bench-tools: go vet of the load generator" "about a minute" -- $(GO) vet -tags benchtools ./hack/bench/loadtest
	@hack/progress.sh "test-bench-tools: go test of the load generator" "about 2 minutes" -- \
		env KUBEBUILDER_ASSETS="$$(hack/control-plane.sh | tail -n 1)" $(GO) test -tags benchtools -count=1 ./hack/bench/loadtest

.PHONY: test-windows
test-windows: ## Run the Windows agent under Wine: named pipes, the CSI Proxy client, PowerShell, the service (needs wine64, gcc-mingw-w64-x86-64).
	@PROGRESS_EVERY=30 hack/progress.sh "test-windows: go test of the Wine tests" "the Windows builds and a Wine prefix, about 5-10 minutes, then the tests" -- \
		$(GO) test -tags wine -count=1 -timeout 45m -v ./test/wine

.PHONY: fuzz
fuzz: ## Fuzz the pipe path normalizer, the object reader, the matchConditions prefilter and the decoders of Windows' answers (page 83, SMBIOS, IOCTL layouts, reparse points), each for FUZZTIME (default 3m).
	$(GO) test ./pipepath -run '^$$' -fuzz FuzzClassify -fuzztime $${FUZZTIME:-3m}
	$(GO) test ./webhook/decode -run '^$$' -fuzz FuzzDecodeMatchesJSON -fuzztime $${FUZZTIME:-3m}
	$(GO) test ./test/admission -run '^$$' -fuzz FuzzPrefilterKeepsPipes -fuzztime $${FUZZTIME:-3m}
	$(GO) test ./agent/hostops/disk -run '^$$' -fuzz FuzzParsePage83 -fuzztime $${FUZZTIME:-3m}
	$(GO) test ./agent/hostops/system -run '^$$' -fuzz FuzzSystemSerialNumber -fuzztime $${FUZZTIME:-3m}
	for f in FuzzParseReparsePoint FuzzParseStorageDeviceDescriptor FuzzParseVolumeDiskExtents FuzzParseStorageDeviceNumber \
		FuzzParseSCSIAddress FuzzParseLengthInformation FuzzParsePhysicalDrives; do \
		$(GO) test ./agent/hostops/win32 -run '^$$' -fuzz "^$$f$$" -fuzztime $${FUZZTIME:-3m} || exit 1; \
	done

# make bench writes its raw results to BENCH_OUT and the report to
# docs/benchmarks. BENCH_ROUNDS rounds each send three mixes of reviews (as
# deployed, pipe mounts that rego decides every time, denials) to every
# webhook target (the floor, pipeguard, pipeguard with 10,000 namespaces and
# 50 policies, and OPA Gatekeeper with the same rule at its own GOGC and at
# pipeguard's) for BENCH_DURATION each, interleaved, then as many rounds of
# pod creations through kube-apiserver; the report takes the medians of the
# per-round ratios and differences. make bench takes about 12 minutes on 2
# cores.
BENCH_OUT      ?= $(BIN)/bench
BENCH_ROUNDS   ?= 10
BENCH_DURATION ?= 2s

# OPA Gatekeeper, the peer make bench measures pipeguard-webhook against
# (deciding the same rule), is built from hack/tools/gatekeeper as its
# release image is built: CGO_ENABLED=0, its version stamped. Only
# bench-load needs it; a cold build takes several CPU-minutes.
GATEKEEPER        := $(BIN)/tools/gatekeeper
GATEKEEPER_MODULE := github.com/open-policy-agent/gatekeeper/v3

.PHONY: bench
bench: ## Run every benchmark but bench-windows and write the report docs/benchmarks/README.md (about 12 minutes on 2 cores).
	@start=$$(date +%s); status=0; \
	$(MAKE) --no-print-directory bench-load bench-go || status=$$?; \
	$(GO) run ./hack/bench/report --in $(BENCH_OUT) --out docs/benchmarks --elapsed $$(( $$(date +%s) - start ))s || status=1; \
	echo "make bench: $$(( $$(date +%s) - start )) s wall time"; \
	exit $$status

# bench-windows stays out of make bench, which runs on any machine within
# its budget and writes the report: it needs Wine and its own prefix (a
# minute or two to prepare), and measures Wine's WMI service, not Windows'
# WMI provider host.
.PHONY: bench-windows
bench-windows: ## Measure host calls/s and CPU per call through WMI in the calling process under Wine (a Win32_BIOS query, StdRegProv.GetStringValue), beside the PowerShell worker's previous figure (needs wine64, gcc-mingw-w64-x86-64).
	$(GO) test -tags wine -run '^$$' -bench BenchmarkHostCallsWMI -benchtime 1x -timeout 30m -v ./test/wine

.PHONY: bench-go
bench-go: ## Run the Go benchmarks on one core (output also in BENCH_OUT/gobench.txt).
	mkdir -p $(BENCH_OUT)
	$(GO) test ./webhook/... ./policy/... ./agent/... -run '^$$' -bench . -benchmem -cpu 1 | tee $(BENCH_OUT)/gobench.txt

.PHONY: bench-load
bench-load: control-plane $(GATEKEEPER) ## Load the webhook (hack/bench/loadtest, also end to end, and Gatekeeper) and the agent (hack/bench/agentload) into BENCH_OUT/*.json.
	mkdir -p $(BENCH_OUT)
	rm -f $(BENCH_OUT)/machine.json $(BENCH_OUT)/webhook.json $(BENCH_OUT)/gatekeeper.json $(BENCH_OUT)/e2e.json $(BENCH_OUT)/agent.json
	$(GO) run ./hack/bench/report machine > $(BENCH_OUT)/machine.json
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BENCH_OUT)/ ./hack/bench/loadtest ./hack/bench/agentload
	@status=0; \
	KUBEBUILDER_ASSETS="$$(hack/control-plane.sh | tail -n 1)" $(BENCH_OUT)/loadtest --rounds $(BENCH_ROUNDS) --duration $(BENCH_DURATION) \
		--gatekeeper $(GATEKEEPER) --json $(BENCH_OUT)/webhook.json --gatekeeper-json $(BENCH_OUT)/gatekeeper.json || status=1; \
	KUBEBUILDER_ASSETS="$$(hack/control-plane.sh | tail -n 1)" $(BENCH_OUT)/loadtest e2e --rounds $(BENCH_ROUNDS) --json $(BENCH_OUT)/e2e.json || status=1; \
	$(BENCH_OUT)/agentload --duration 5s --warmup 1s --dir $(BENCH_OUT) --json $(BENCH_OUT)/agent.json || status=1; \
	exit $$status

.PHONY: bench-gatekeeper
bench-gatekeeper: $(GATEKEEPER) ## Build OPA Gatekeeper, the peer bench-load measures, from hack/tools/gatekeeper into bin/tools.

$(GATEKEEPER): hack/tools/gatekeeper/go.mod hack/tools/gatekeeper/go.sum
	cd hack/tools/gatekeeper && version="$$(GOWORK=off $(GO) list -m -f '{{.Version}}' $(GATEKEEPER_MODULE))" && \
	GOWORK=off CGO_ENABLED=0 $(GO) build -trimpath -mod=readonly -buildvcs=false \
		-ldflags "-s -w -X $(GATEKEEPER_MODULE)/pkg/version.Version=$$version" -o $(GATEKEEPER) $(GATEKEEPER_MODULE)

##@ Deployment

# OVERLAY is the directory of config/ to render or install: default,
# cert-manager, agent, prometheus, samples, local, manifest-admission. hack/deploy.sh does the
# work: it writes $(DEPLOY_DIR)/kustomization.yaml with hack/kustomization
# (which parses IMG and AGENT_IMG as docker does and stops make with an error
# naming the variable when one is malformed), refuses while the overlay would
# run an image that is not set or not published, and for deploy checks the
# CRDs the overlay needs from other projects before applying anything. An
# overlay with a Deployment and a webhook configuration (default,
# cert-manager) is applied in three steps: everything but the webhook
# configuration, kubectl rollout status of the Deployment (at most
# ROLLOUT_TIMEOUT), then the webhook configuration, so that the fail-closed
# webhook is registered only once a replica answers. render builds the
# manifests with kustomize's Go API and needs no kubectl; deploy and
# undeploy apply with $(KUBECTL) when set, else kubectl from PATH.
OVERLAY         ?= default
DEPLOY_DIR      ?= $(BIN)/deploy
ROLLOUT_TIMEOUT ?= 5m
# OVERLAY=manifest-admission writes the files kube-apiserver loads its
# admission configuration from into $(DEPLOY_DIR)/manifest-admission, calling
# pipeguard-webhook at WEBHOOK_URL and trusting the CA in WEBHOOK_CA_FILE,
# for ADMISSION_DIR on the control-plane nodes (docs/install.md).
WEBHOOK_URL     ?=
WEBHOOK_CA_FILE ?=
ADMISSION_DIR   ?= /etc/kubernetes/pipeguard
deploy_sh = OVERLAY='$(OVERLAY)' IMG='$(IMG)' AGENT_IMG='$(AGENT_IMG)' DEPLOY_DIR='$(DEPLOY_DIR)' ROLLOUT_TIMEOUT='$(ROLLOUT_TIMEOUT)' GO='$(GO)' \
	WEBHOOK_URL='$(WEBHOOK_URL)' WEBHOOK_CA_FILE='$(WEBHOOK_CA_FILE)' ADMISSION_DIR='$(ADMISSION_DIR)' hack/deploy.sh

.PHONY: render
render: ## Print the manifests of config/OVERLAY (default: default) with IMG (and AGENT_IMG for config/agent); refuses while one it runs is unset. Needs no kubectl.
	@$(deploy_sh) render

.PHONY: deploy
deploy: ## Install config/OVERLAY with IMG (and AGENT_IMG) into the current kubectl context: CRD prerequisites first, the webhook configuration only after the Deployment rolled out (ROLLOUT_TIMEOUT, default 5m).
	@$(deploy_sh) deploy

.PHONY: undeploy
undeploy: ## Remove config/OVERLAY; the webhook configuration goes first, so nothing is rejected meanwhile.
	@$(deploy_sh) undeploy

##@ Images

.PHONY: docker-build
docker-build: ## Build the webhook/CLI image IMG (needs a Docker engine).
	@[ -n '$(IMG)' ] || { echo 'make docker-build: IMG is not set: name the image to build, e.g. make docker-build IMG=registry.example.com/pipeguard:v0.1.0'; exit 1; }
	docker build -t $(IMG) .

.PHONY: docker-build-agent
docker-build-agent: ## Build and push the Windows HostProcess image of the agent AGENT_IMG (needs docker buildx).
	@[ -n '$(AGENT_IMG)' ] || { echo 'make docker-build-agent: AGENT_IMG is not set: name the image to build and push, e.g. make docker-build-agent AGENT_IMG=registry.example.com/pipeguard-agent:v0.1.0'; exit 1; }
	docker buildx build --platform windows/amd64 -f Dockerfile.agent.windows -t $(AGENT_IMG) --push .

$(CONTROLLER_GEN):
	@hack/progress.sh --packages "building controller-gen $(CONTROLLER_GEN_VERSION) into $(dir $(CONTROLLER_GEN)) (once)" "about 2 minutes on 2 CPUs" -- \
		env GOBIN=$(dir $(CONTROLLER_GEN)) $(GO) install -v sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
