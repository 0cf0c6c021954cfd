# The targets every developer and CI use. `make help` lists them.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# The version stamped into the binary.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

# The control-plane cache; hack/build-k8s-binaries.sh prints its directory.
K8S_BINARIES = $(shell hack/build-k8s-binaries.sh | tail -n 1)
# The pinned Helm; hack/build-helm.sh builds it once and prints its path.
HELM = $(shell hack/build-helm.sh | tail -n 1)

.PHONY: help
help: ## List the targets.
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: demo
demo: k8s-binaries ## Run the controller on a local control plane with simulated nodes, and narrate.
	KUBEBUILDER_ASSETS="$(K8S_BINARIES)" go run ./hack/demo $(DEMO_ARGS)

.PHONY: build
build: ## Compile every package, the nhc-controller binary and the kubectl-nhc plugin into bin/.
	go build ./...
	go build -ldflags "-X github.com/nodehealthcheck/nhc-controller/pkg/version.stamped=$(VERSION)" -o bin/nhc-controller ./cmd/nhc-controller
	go build -ldflags "-X github.com/nodehealthcheck/nhc-controller/pkg/version.stamped=$(VERSION)" -o bin/kubectl-nhc ./cmd/kubectl-nhc
	install -m 0755 plugin/kubectl_complete-nhc bin/kubectl_complete-nhc

.PHONY: image
image: ## Build the container image without a Docker daemon into _output/image (OCI layout and tarball) for this host's architecture (ARCH=amd64,arm64 for both), tagged as manifests/kustomization.yaml deploys it; IMAGE names it otherwise, PUSH=1 pushes it.
	go run ./hack/image --output _output/image $(if $(ARCH),--arch "$(ARCH)") $(if $(IMAGE),--tag "$(IMAGE)") --version "$(VERSION)" $(if $(PUSH),--push)

.PHONY: release
release: release-check ## Write a release into _output/release: VERSION=vX.Y.Z from a clean tree whose HEAD carries that tag (and its section in CHANGELOG.md), or VERSION=snapshot for the tree as it is; images for amd64 and arm64, nhc-controller.yaml, the Helm chart, kubectl-nhc archives and krew manifest, the SBOM, release notes, SHA256SUMS. The image is ghcr.io/nodehealthcheck/nhc-controller:VERSION@sha256:… (IMAGE_REPO names another repository), PUSH=1 pushes it; HELM=path packages the chart with that helm.
	go run ./hack/release --version "$(VERSION)" --output _output/release $(if $(filter command line,$(origin HELM)),--helm "$(HELM)") $(if $(IMAGE_REPO),--image "$(IMAGE_REPO)") $(if $(PUSH),--push)

# Before anything is compiled, in seconds: the version, a clean tree at
# its tag, go.mod's toolchain, and the CHANGELOG.md section.
.PHONY: release-check
release-check:
	@hack/release/check.sh "$(VERSION)"

.PHONY: test
test: unit integration ## Run all tests: unit, then integration on a real kube-apiserver.

.PHONY: unit
unit: ## Run the unit tests (no control plane).
	go test ./pkg/... ./cmd/... ./hack/...

# -timeout: on a clean clone the release test cross-compiles for four
# platforms while other packages run; go test's default 10 minutes is too few.
.PHONY: integration
integration: k8s-binaries helm ## Run the tests against a real kube-apiserver and etcd.
	KUBEBUILDER_ASSETS="$(K8S_BINARIES)" HELM="$(HELM)" go test -count=1 -timeout 45m ./test/...

# The simulation's parameters: SEEDS histories from seed FIRST, STEPS steps
# each; SEED replays one seed with its trace and shrinks it (DRAWING=
# before-held-relabels replays a found seed as it was drawn then).
SIM_FLAGS = -sim.seeds $(or $(SEEDS),1000) -sim.first $(or $(FIRST),1) -sim.steps $(or $(STEPS),40) \
	$(if $(SEED),-sim.seed $(SEED) -test.v,-sim.progress) $(if $(KEEP_GOING),-sim.keep-going) $(if $(FOCUS),-sim.focus $(FOCUS)) $(if $(DRAWING),-sim.drawing $(DRAWING))

.PHONY: sim
sim: ## Play generated histories (restarts, faults, features meeting) against the real controller in a simulated cluster, checking every invariant (SEEDS, FIRST, STEPS, SEED to replay one, DRAWING for a found seed, KEEP_GOING=1, FOCUS=control-plane).
	go test -c -o _output/sim.test ./test/sim
	cd test/sim && ../../_output/sim.test -test.run TestHistories -test.timeout 0 $(SIM_FLAGS)

.PHONY: mutate
mutate: ## Break each rule of the spec on purpose (hack/mutate/mutations.go) and check that the simulation catches it within SEEDS generated histories (default 2000); prints the table of docs/mutations.md.
	go run ./hack/mutate -seeds $(or $(SEEDS),2000) $(if $(ONLY),-only $(ONLY))

.PHONY: fuzz
fuzz: ## Fuzz the pure packages, FUZZTIME each (default 60s).
	go test -run XXX -fuzz FuzzEvaluate -fuzztime $(or $(FUZZTIME),60s) ./pkg/health
	go test -run XXX -fuzz FuzzMinHealthy -fuzztime $(or $(FUZZTIME),60s) ./pkg/health
	go test -run XXX -fuzz FuzzKeep -fuzztime $(or $(FUZZTIME),60s) ./pkg/remediation/resource
	# Without coverage guidance: instrumented, k8s.io/api's generated
	# protobuf code slows the decoder's fuzzing to a few inputs a minute.
	go test -c -o _output/nodecache.test ./pkg/nodecache
	cd pkg/nodecache && ../../_output/nodecache.test -test.run XXX -test.fuzz FuzzDecoder -test.fuzztime $(or $(FUZZTIME),60s) -test.fuzzcachedir ../../_output/fuzzcache

.PHONY: bench
bench: ## Run the benchmarks; compare ratios within one run, the machines are noisy.
	go test -run XXX -bench . -benchmem ./pkg/...

# The scale benchmark's parameters; unset ones take the program's defaults
# (10,000 nodes, 10 NodeHealthChecks, each node's heartbeat and lease renewal
# every 120s from a 60s quiet phase to the end, every request audited at
# Metadata level, a trickle of 100 nodes over a minute, each recovering 20s after its deadline,
# 30% of one NodeHealthCheck in the storm, 10s conditions). SCALE_ARGS
# passes any other flag.
SCALE_FLAGS = $(if $(NODES),--nodes=$(NODES)) $(if $(NHCS),--nhcs=$(NHCS)) \
	$(if $(QUIET),--quiet=$(QUIET)) $(if $(RATE),--heartbeat-rate=$(RATE)) \
	$(if $(LEASE_RATE),--lease-rate=$(LEASE_RATE)) $(if $(THROUGHOUT),--heartbeats-throughout=$(THROUGHOUT)) \
	$(if $(TRICKLE),--trickle=$(TRICKLE)) $(if $(TRICKLE_RECOVERY),--trickle-recovery=$(TRICKLE_RECOVERY)) $(if $(STORM),--storm=$(STORM)) \
	$(if $(STORM_HOLD),--storm-hold=$(STORM_HOLD)) $(SCALE_ARGS)

.PHONY: bench-micro
bench-micro: ## Run every Go benchmark briefly (100 iterations), so that CI proves they run; for numbers, make bench.
	go test -run XXX -bench . -benchtime 100x ./pkg/...

.PHONY: scale
scale: k8s-binaries ## Measure the controller on a real API server: start-up, quiet, trickle, storm (NODES, NHCS, QUIET, RATE, LEASE_RATE, THROUGHOUT, TRICKLE, TRICKLE_RECOVERY, STORM, STORM_HOLD, SCALE_ARGS; see docs/performance.md).
	KUBEBUILDER_ASSETS="$(K8S_BINARIES)" go run ./test/scale $(SCALE_FLAGS)

.PHONY: scale-compare
scale-compare: ## Print the last make scale run of each size against the median of the three before, from test/scale/trend.jsonl; marks what got worse beyond its noise.
	go run ./test/scale compare

.PHONY: generate
generate: ## Regenerate the clientset, listers, informers, deepcopy and the CRD, and copy the CRD, guards, alerts and dashboard into the chart.
	hack/update-codegen.sh
	hack/update-chart.sh

.PHONY: verify
verify: ## Check generated code, the CRD, the chart (its copies, helm lint), gofmt, go vet, go.mod, the k8s.io versions, the controller's imports, the house rules (hack/verify-house: each package's row, each file's tier in pkg/health and pkg/remediation and no cycle among their files, pure packages without client-go, function and file lengths), the docs' checks (test/docs: figures quoted from performance.md, the spec table, the workflows) and golangci-lint's curated linters (.golangci.yaml).
	hack/verify-codegen.sh
	hack/verify-chart.sh
	hack/verify-gofmt.sh
	go vet ./...
	hack/verify-gomod.sh
	hack/verify-k8s-versions.sh
	hack/verify-imports.sh
	go run ./hack/verify-house
	go test -count=1 ./test/docs/
	hack/verify-lint.sh

.PHONY: k8s-binaries
k8s-binaries: ## Build kube-apiserver, kubectl and etcd from source into bin/k8s/ (once).
	hack/build-k8s-binaries.sh

.PHONY: helm
helm: ## Build the pinned Helm from its Go module into bin/helm/ (once).
	hack/build-helm.sh

# The node's binaries (kubelet, kube-proxy, kube-controller-manager,
# kube-scheduler); hack/node/build-node-binaries.sh prints their directory.
NODE_BINARIES = $(shell hack/node/build-node-binaries.sh | tail -n 1)
# The cluster of make node-up needs root: sudo where make runs as a user.
# Everything is built before, as the user.
AS_ROOT = $(if $(filter 0,$(shell id -u)),,sudo --preserve-env=NHC_NODE_DIR)
NODE_ENV = K8S_BINARIES="$(K8S_BINARIES)" NODE_BINARIES="$(NODE_BINARIES)"

.PHONY: node-binaries
node-binaries: ## Build kubelet, kube-proxy, kube-controller-manager and kube-scheduler from source into bin/k8s-node/ (once).
	hack/node/build-node-binaries.sh

.PHONY: node-up
node-up: k8s-binaries node-binaries ## Start a one-node cluster on this machine, as root (sudo): etcd, kube-apiserver, kube-controller-manager, kube-scheduler, and a node running containerd, a kubelet and kube-proxy on a bridge network; installs containerd, runc, the CNI plugins, iptables and conntrack with apt-get when missing.
	go build -o _output/node/ ./hack/node/pki
	go run ./hack/node/pauseimage --output _output/node/pause.tar
	$(AS_ROOT) hack/node/install-packages.sh
	$(AS_ROOT) env $(NODE_ENV) hack/node/cluster.sh up

.PHONY: node-down
node-down: ## Stop the cluster of make node-up: no process, mount, interface or packet filter rule of it is left.
	$(AS_ROOT) env $(NODE_ENV) hack/node/cluster.sh down

.PHONY: test-node
test-node: k8s-binaries node-binaries ## Install what a release installs (its image and nhc-controller.yaml, built by make release's own tasks into _output/node/release, kept while the tree is unchanged) on a cluster of make node-up with a worker joined, and test it as a user meets it: Pods Ready, leading, scraped, a worker whose kubelet stops remediated, a rolling update, the uninstall; then make node-down.
	@start=$$(date +%s); \
	go run ./hack/release --version snapshot --only "install file" --reuse --output _output/node/release || exit 1; \
	go test -c -o _output/node/node.test ./test/node; \
	status=0; \
	{ $(MAKE) node-up && \
	  $(AS_ROOT) env $(NODE_ENV) NHC_NODE_KUBECONFIG="$$($(AS_ROOT) env $(NODE_ENV) hack/node/cluster.sh kubeconfig)" NHC_NODE_RELEASE="$(CURDIR)/_output/node/release" \
	    bash -c 'cd test/node && ../../_output/node/node.test -test.v -test.timeout 20m'; } || status=$$?; \
	$(MAKE) node-down || status=1; \
	echo "test-node: $$( ((status == 0)) && echo passed || echo FAILED ) in $$(( $$(date +%s) - start ))s"; \
	exit $$status

.PHONY: tools
tools: k8s-binaries ## Build the control plane and the pinned generators into bin/.
	GOBIN="$(CURDIR)/bin/tools" go install tool

.PHONY: clean
clean: ## Remove build output, keeping the control-plane cache.
	rm -rf bin/codegen bin/tools _output
