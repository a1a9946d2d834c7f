# weir's entry points. `make test` is what CI runs (.ci/run).
CARGO ?= cargo

.PHONY: demo test policies lint wasm-target

wasm-target:
	@rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2

## demo: build weir and run the controller on the embedded API server with demo data
demo: wasm-target
	$(CARGO) run -p weir -- demo

# The `weir` that `cargo build --workspace` produced. `cargo run -p weir` would resolve
# features for weir alone, differently from the workspace build, and rebuild wasmtime.
WEIR_BIN := $(or $(CARGO_TARGET_DIR),target)/debug/weir

## test: every test: unit, property, golden cases, end to end (one build of the workspace)
# The golden cases run on a debug build, where a 1,000-pod case can take over the default 100 ms
# deadline on a busy 2-core machine; the deadline itself is tested in host/tests/deadline.rs.
test: wasm-target
	$(CARGO) build --workspace --all-targets
	$(CARGO) test --workspace
	$(WEIR_BIN) test --guest-deadline 10s tests/cases

## policies: build every example policy (guest/examples/NAME) to target/policies/NAME.wasm
# Their cases run under `cargo test` (host/tests/policy_kit.rs); by hand:
#   weir test --guest target/policies/NAME.wasm guest/examples/NAME/cases
POLICIES := $(patsubst guest/examples/%/Cargo.toml,%,$(wildcard guest/examples/*/Cargo.toml))
POLICY_BUILD_DIR := $(or $(CARGO_TARGET_DIR),target)/wasm32-wasip2/release
policies: wasm-target
	$(CARGO) build --release --target wasm32-wasip2 $(foreach p,$(POLICIES),-p weir-example-$(p))
	@mkdir -p target/policies
	$(foreach p,$(POLICIES),cp $(POLICY_BUILD_DIR)/weir_example_$(subst -,_,$(p)).wasm target/policies/$(p).wasm;)

## lint: formatting and clippy, as reviewers expect
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
