# weir's entry points. `make test` is what CI runs (.ci/run).
CARGO ?= cargo
# The test tools `make tools` installs, pinned, in the project's own prefix (tests/install-tools.sh):
# cosign in its bin, the Python-packaged ones (kubectl, wasmtime, wasm-tools, componentize-py, ...)
# in a virtual environment. First on PATH, so every test and recipe runs the pinned ones.
export WEIR_TOOLS_DIR ?= $(CURDIR)/target/tools
export PATH := $(WEIR_TOOLS_DIR)/bin:$(WEIR_TOOLS_DIR)/venv/bin:$(PATH)

.PHONY: image demo test tools doctor policies lint fmt-check wasm-target upstream upstream-prebuild conformance jco e2e-real cluster-e2e

wasm-target:
	@rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2

# The `weir` that `cargo build --workspace` produced. `cargo run -p weir` would resolve
# features for weir alone, differently from the workspace build, and rebuild wasmtime.
WEIR_BIN := $(or $(CARGO_TARGET_DIR),target)/debug/weir

## demo: build weir and tell its story on the embedded API server (a live view on a
## terminal, one line per step otherwise), then leave the cluster to explore with kubectl
# The same build as `make test`, so the two share every compiled crate.
demo: wasm-target
	$(CARGO) build --workspace --all-targets
	$(WEIR_BIN) demo

## test: every test: unit, property, golden cases, end to end (one build of the workspace)
# The golden cases run on a debug build, where a 1,000-pod case can take over the default 100 ms
# deadline on a busy 2-core machine; the deadline itself is tested in host/tests/deadline.rs.
test: wasm-target tools
	$(CARGO) build --workspace --all-targets
	$(CARGO) test --workspace
	$(WEIR_BIN) test --guest-deadline 10s tests/cases
	$(MAKE) --no-print-directory jco

## jco: the default guest's golden cases under Node.js, its component transpiled by jco
## (tests/jco): proof that it is a standard component, not something only weir can run
# npm ci installs the pinned jco and preview2-shim from the lockfile, again only when the lockfile
# changed. run.sh prints `N passed, N failed` and fails on any failure.
JCO_STAMP := node_modules/.weir-package-lock.sha256
jco: wasm-target
	$(CARGO) build --workspace --all-targets
	cd tests/jco && { sha256sum package-lock.json | cmp -s - $(JCO_STAMP) \
		|| { npm ci --no-audit --no-fund --loglevel=error && sha256sum package-lock.json > $(JCO_STAMP); }; }
	tests/jco/run.sh $(WEIR_BIN) tests/cases

## tools: install every outside tool a test runs, pinned, into target/tools (kubectl, wasm-tools,
## wasmtime, PyYAML, hadolint, kubernetes-validate, componentize-py, cosign), plus promtool, tmux
## and docker-registry from Debian; each only when missing or its pin changed
# No test skips for a missing tool: it fails, so `make test` installs them first.
tools:
	tests/install-tools.sh

## doctor: check the prerequisites README lists (Rust, Go, Node.js, Python, apt) and the tools
## `make tools` installs; say what is missing and how to get it
doctor:
	@tests/doctor.sh

## policies: build every example policy (guest/examples/NAME) to target/policies/NAME.wasm, and
## its Python and JavaScript versions to NAME-python.wasm and NAME-js.wasm, and the hooks
## policies composed with weir's engine
# Their cases run under `cargo test` (host/tests/policy_kit.rs); by hand:
#   weir test --guest target/policies/NAME.wasm guest/examples/NAME/cases
POLICIES := $(patsubst guest/examples/%/Cargo.toml,%,$(wildcard guest/examples/*/Cargo.toml))
POLICY_BUILD_DIR := $(or $(CARGO_TARGET_DIR),target)/wasm32-wasip2/release
# Policies of other languages export only hooks: `weir policy build` composes each with weir's
# engine (in-process, as `wac plug` composes). drain-annotation-hooks.wasm is the Rust hooks one
# (tests/guests/drain-annotation-hooks); it passes guest/examples/drain-annotation/cases.
policies: wasm-target tools
	$(CARGO) build --release --target wasm32-wasip2 $(foreach p,$(POLICIES),-p weir-example-$(p)) \
	  -p weir-test-drain-annotation-hooks
	$(CARGO) build --workspace --all-targets
	@mkdir -p target/policies
	$(foreach p,$(POLICIES),cp $(POLICY_BUILD_DIR)/weir_example_$(subst -,_,$(p)).wasm target/policies/$(p).wasm;)
	$(WEIR_BIN) policy build $(POLICY_BUILD_DIR)/weir_test_drain_annotation_hooks.wasm \
	  -o target/policies/drain-annotation-hooks.wasm

# The Python and JavaScript/TypeScript examples (guest/examples/NAME/python/policy.py,
# .../js/policy.ts): a hooks component built with componentize-py or componentize-js
# (guest/python, guest/js), composed with upstream's engine by `weir policy build` into
# target/policies/NAME-python.wasm and NAME-js.wasm.
PY_POLICIES := $(patsubst guest/examples/%/python/policy.py,%,$(wildcard guest/examples/*/python/policy.py))
JS_POLICIES := $(patsubst guest/examples/%/js/policy.ts,%,$(wildcard guest/examples/*/js/policy.ts))
HOOKS_WIT := wit/hooks/v0.2
# The limits the Python and JS guests ask for (docs/policy-authoring.md, section 5): at 1,000
# pods a call takes about 15 ms in Python and 30 ms in JavaScript on a release weir
# (docs/performance.md), within the 100 ms default; these leave room for larger Services.
PY_POLICY_LIMITS := --deadline 1s --memory-mib 128
JS_POLICY_LIMITS := --deadline 2s --memory-mib 128
policies: $(PY_POLICIES:%=target/policies/%-python.wasm) $(JS_POLICIES:%=target/policies/%-js.wasm)
# componentize-py writes `__pycache__` beside the sources it imports, whatever
# PYTHONDONTWRITEBYTECODE says; in guest/examples, which the weir crate's build script watches,
# that would rebuild weir. It builds from a copy.
target/policies/%-python.wasm: guest/examples/%/python/policy.py $(wildcard guest/python/weir_policy/*.py) $(HOOKS_WIT)/hooks.wit | weir-bin
	@mkdir -p target/policies/hooks
	rm -rf target/policies/src/$* && mkdir -p target/policies/src/$*/policy
	cp $< target/policies/src/$*/policy/ && cp -r guest/python/weir_policy target/policies/src/$*/
	componentize-py -d $(HOOKS_WIT) -w hooks componentize -p target/policies/src/$*/policy \
		-p target/policies/src/$* weir_policy.component -o target/policies/hooks/$*-python.wasm
	$(WEIR_BIN) policy build target/policies/hooks/$*-python.wasm -o $@ $(PY_POLICY_LIMITS)
target/policies/%-js.wasm: guest/examples/%/js/policy.ts guest/js/src/weir-policy.ts guest/js/build.mjs $(HOOKS_WIT)/hooks.wit guest/js/node_modules/.package-lock.json | weir-bin
	@mkdir -p target/policies/hooks
	node guest/js/build.mjs $< -o target/policies/hooks/$*-js.wasm
	$(WEIR_BIN) policy build target/policies/hooks/$*-js.wasm -o $@ $(JS_POLICY_LIMITS)
# componentize-js, jco and rolldown at the versions of guest/js/package-lock.json; npm's cache
# makes later installs offline.
guest/js/node_modules/.package-lock.json: guest/js/package-lock.json
	cd guest/js && npm ci --prefer-offline --no-audit --no-fund
# The same build as `make test`, so wasmtime is not built a second way.
.PHONY: weir-bin
weir-bin:
	$(CARGO) build --workspace --all-targets

## lint: formatting and clippy, as reviewers expect
lint: fmt-check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## fmt-check: formatting only (CI lints with clippy inside its build: .ci/run)
fmt-check:
	$(CARGO) fmt --all -- --check

## image: weir's image, built with no registry to pull from: a static (musl) release `weir` on
## an empty base, non-root (deploy/image/build.sh), written to target/image/weir.oci.tar for
## `podman load -i` or `ctr -n k8s.io images import`; IMAGE names it. Needs buildah and musl-tools
IMAGE ?= localhost/weir:dev
image:
	deploy/image/build.sh $(IMAGE) target/image/weir.oci.tar

## upstream: build kube-harness (tests/upstream: etcd, the real kube-apiserver and upstream's
## endpoint controllers, from the pinned k8s.io/kubernetes module) to target/upstream/kube-harness
# The first build compiles kube-apiserver (see README, "Real Kubernetes"); Go's own caches keep
# later builds to a check and, when nothing changed, no relink.
KUBE_HARNESS := $(or $(CARGO_TARGET_DIR),target)/upstream/kube-harness
upstream:
	tests/upstream/build.sh $(KUBE_HARNESS)

## e2e-real: the end-to-end tests (host/tests/e2e) against the real kube-apiserver instead of
## weir-apiserver (one kube-harness for the run; the tests take it one at a time)
# The tests in host/tests/e2e/not-on-kube-apiserver.txt need weir-apiserver's fault injection or
# internals: they are skipped by exact name and printed with their reason, never passed silently.
E2E_NOT_APPLICABLE_FILE := host/tests/e2e/not-on-kube-apiserver.txt
E2E_NOT_APPLICABLE := $(shell sed -n 's/^\([a-z0-9_:]*\): .*/\1/p' $(E2E_NOT_APPLICABLE_FILE))
e2e-real: upstream wasm-target
	$(CARGO) build --workspace --all-targets
	@sed -n 's/^\([a-z0-9_:]*\): \(.*\)/not applicable on kube-apiserver: \1 (\2)/p' $(E2E_NOT_APPLICABLE_FILE)
	WEIR_E2E_SERVER=kube-apiserver WEIR_KUBE_HARNESS=$(abspath $(KUBE_HARNESS)) \
		$(CARGO) test -p weir --test e2e -- --exact $(foreach t,$(E2E_NOT_APPLICABLE),--skip $(t))
	@echo "$(words $(E2E_NOT_APPLICABLE)) not applicable on kube-apiserver ($(E2E_NOT_APPLICABLE_FILE))"

# The Go packages whose tests `make conformance` runs.
UPSTREAM_TEST_PACKAGES := . ./internal/... ./sidebyside/ ./conformance/ ./apidiff/ ./clustere2e/ ./e2e/...

## upstream-prebuild: compile what `make conformance` runs in Go (vet, the test binaries, the
## differential driver) without running any of it, so that Go's cache is warm when it does
# .ci/run does this beside the Rust build, whose single-crate stretches leave a core idle.
# `-run '^$$'` matches no test: each binary is built and started, and runs none.
upstream-prebuild:
	cd tests/upstream && CGO_ENABLED=0 go vet ./...
	cd tests/upstream && CGO_ENABLED=0 go test -count=1 -run '^$$' $(UPSTREAM_TEST_PACKAGES) >/dev/null
	cd tests/upstream && CGO_ENABLED=0 go build -o /dev/null ./conformance

## conformance: the real-server tier: weir and upstream's controllers against kube-apiserver
# The e2e tests against kube-apiserver first (e2e-real), then the harness's own tests and the
# differential run. CGO_ENABLED=0 everywhere, as build.sh builds: another cgo setting would
# recompile every dependency of kube-apiserver. The differential run prints `N passed, N failed`
# last. CI runs a fixed sample: generated scenarios of seeds 1 to 10, and every scenario of the
# spec that a real cluster can express. The broad run is a command of its own:
# `make conformance CONFORMANCE_SCENARIOS=500 CONFORMANCE_SEED=1`.
CONFORMANCE_SCENARIOS ?= 10
CONFORMANCE_SEED ?= 1
# Scenarios at once, each with its own namespaces and controller processes on the one API server;
# most of a scenario is waiting for quiet, so this divides the wall time on 2 cores too.
CONFORMANCE_PARALLEL ?= 4
conformance: upstream wasm-target e2e-real
	@# --all-targets, as every build here: `--bins` alone resolves the dependencies' features
	@# without the dev-dependencies and compiles a second copy of the tree (minutes on a cold cache).
	$(CARGO) build --workspace --all-targets
	cd tests/upstream && test -z "$$(gofmt -l .)" || { gofmt -l .; exit 1; }
	cd tests/upstream && CGO_ENABLED=0 go vet ./...
	cd tests/upstream && CGO_ENABLED=0 KUBE_HARNESS=$(abspath $(KUBE_HARNESS)) WEIR=$(abspath $(WEIR_BIN)) \
		go test -count=1 $(UPSTREAM_TEST_PACKAGES)
	cd tests/upstream && CGO_ENABLED=0 go run ./conformance --harness $(abspath $(KUBE_HARNESS)) \
		--weir $(abspath $(WEIR_BIN)) --scenarios $(CONFORMANCE_SCENARIOS) --seed $(CONFORMANCE_SEED) \
		--parallel $(CONFORMANCE_PARALLEL) --spec all

## cluster-e2e: packets through policies on a one-node cluster (`kube-harness cluster up`: a
## kubelet on containerd, kube-proxy in nftables mode, kube-controller-manager without its
## endpoint controllers): calls to a Service's ClusterIP follow the default guest, the
## drain-annotation policy in Rust (ConfigMap guest), Python (guest file) and CEL (rules in a
## ConfigMap), and ignore a guest the swap gate refuses. Needs root; prints `N passed, N failed`
# The guests come from the same nested build as the tests' (host/tests/support/guests.rs), so
# after `make test` it finds them fresh. CLUSTER_E2E_FLAGS adds driver flags (`--keep` leaves
# the cluster up, `--proxy-mode iptables`).
CLUSTER_GUESTS_DIR := $(or $(CARGO_TARGET_DIR),target)/test-guests
CLUSTER_GUESTS := $(CLUSTER_GUESTS_DIR)/wasm32-wasip2/release
CLUSTER_E2E_FLAGS ?=
# CLUSTER_E2E_PROFILE=full also deploys weir as users do: `make image`, imported into the node's
# containerd, and `kubectl apply -k` of an overlay of deploy/kubernetes (two replicas, a failover).
# The musl release build of the image takes too long for CI, which runs the short profile.
CLUSTER_E2E_PROFILE ?= short
CLUSTER_E2E_PROFILE_FLAGS := $(if $(filter full,$(CLUSTER_E2E_PROFILE)),--profile full \
	--image $(CURDIR)/target/image/weir.oci.tar --image-name $(IMAGE) --deploy $(CURDIR)/deploy/kubernetes)
cluster-e2e: upstream wasm-target tools target/policies/drain-annotation-python.wasm \
		$(if $(filter full,$(CLUSTER_E2E_PROFILE)),image)
	tests/install-cluster-packages.sh
	$(CARGO) build --workspace --all-targets
	$(CARGO) build --release --target wasm32-wasip2 --target-dir $(CLUSTER_GUESTS_DIR) \
		-p weir-example-drain-annotation -p weir-test-all-not-ready
	cd tests/upstream && CGO_ENABLED=0 go run ./clustere2e --harness $(abspath $(KUBE_HARNESS)) \
		--weir $(abspath $(WEIR_BIN)) \
		--rust-drain $(abspath $(CLUSTER_GUESTS))/weir_example_drain_annotation.wasm \
		--python-drain $(CURDIR)/target/policies/drain-annotation-python.wasm \
		--refused $(abspath $(CLUSTER_GUESTS))/weir_test_all_not_ready.wasm \
		--refused-by $(CURDIR)/guest/examples/drain-annotation/cases \
		--cel-drain $(CURDIR)/guest/examples/cel/drain-annotation.yaml $(CLUSTER_E2E_PROFILE_FLAGS) \
		$(CLUSTER_E2E_FLAGS)
