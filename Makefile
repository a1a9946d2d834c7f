# weir's entry points. `make test` is what CI runs (.ci/run).
CARGO ?= cargo

.PHONY: demo test policies lint wasm-target

wasm-target:
	@rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2

## demo: build weir and run the controller on the embedded API server with demo data
demo: wasm-target
	$(CARGO) run -p weir -- demo

## test: every test: unit, property, golden cases, end to end
test: wasm-target
	$(CARGO) build --workspace --all-targets
	$(CARGO) test --workspace
	$(CARGO) run -q -p weir -- test tests/cases

## lint: formatting and clippy, as reviewers expect
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
