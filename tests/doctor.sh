#!/usr/bin/env bash
# `make doctor`: checks the prerequisites README lists, and the tools `make tools` installs, and
# says for each missing one how to get it. Exits 1 when a prerequisite is missing (then
# `make demo` or `make test` cannot pass); a missing tool alone is fine, `make test` installs it.
set -uo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
tools="${WEIR_TOOLS_DIR:-$repo/target/tools}"
PATH="$tools/bin:$tools/venv/bin:$PATH"

missing=0
row() { # row STATUS WHAT FOUND [HOW]
  printf '%-8s %-26s %s\n' "$1" "$2" "$3"
  [ -z "${4:-}" ] || printf '%-8s %-26s %s\n' "" "" "-> $4"
}
# at_least FOUND WANTED: whether dotted version FOUND >= WANTED.
at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }
# prerequisite NAME FOUND WANTED HOW: FOUND is a version, or empty when absent.
prerequisite() {
  if [ -z "$2" ]; then
    row missing "$1 >= $3" "not found" "$4"; missing=1
  elif ! at_least "$2" "$3"; then
    row old "$1 >= $3" "$2" "$4"; missing=1
  else
    row ok "$1 >= $3" "$2"
  fi
}

echo "prerequisites (README, Prerequisites):"
rust_wanted="$(sed -n 's/^rust-version = "\(.*\)"/\1/p' "$repo/Cargo.toml" | head -1)"
prerequisite rustc "$(rustc --version 2>/dev/null | awk '{print $2}')" "$rust_wanted" \
  "install rustup (rustup.rs, or Debian's rustup package), then: rustup update stable"
if command -v rustup >/dev/null 2>&1; then
  row ok rustup "$(rustup --version 2>/dev/null | awk '{print $2}')"
else
  row missing rustup "not found" "the Makefile adds the wasm32-wasip2 target with rustup: install rustup"
  missing=1
fi
prerequisite go "$(go env GOVERSION 2>/dev/null | sed 's/^go//')" "1.26" \
  "Go from go.dev or your distribution; the real-server tier (make conformance) builds kube-apiserver with it"
prerequisite node "$(node --version 2>/dev/null | sed 's/^v//')" "20" \
  "Node.js 20 or later with npm (Debian 12's nodejs is 18: use NodeSource's or nvm's)"
prerequisite npm "$(npm --version 2>/dev/null)" "9" "npm comes with Node.js"
python="$(python3 -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null)"
prerequisite python3 "$python" "3.11" "Python 3.11 or later (Debian: apt-get install python3)"
if [ -n "$python" ]; then
  if python3 -c 'import venv, ensurepip' 2>/dev/null; then
    row ok "python3 venv" "yes"
  else
    # make tools installs python3-venv with apt-get when it can.
    row missing "python3 venv" "no" "Debian: apt-get install python3-venv (make tools does, as root)"
  fi
fi
prerequisite cc "$(cc -dumpversion 2>/dev/null)" "10" "a C compiler for ring and jemalloc (Debian: apt-get install build-essential)"
if command -v apt-get >/dev/null 2>&1; then
  row ok apt-get "yes (make tools installs promtool, tmux and docker-registry with it)"
else
  row manual apt-get "not found" "install prometheus (promtool), tmux and docker-registry (the CNCF distribution server) yourself"
fi

echo
echo "tools (make tools installs them into $tools, or with apt-get):"
tool() { # tool NAME CHECK...
  local name=$1; shift
  local found
  if found="$("$@" 2>/dev/null | head -1)" && [ -n "$found" ]; then
    row ok "$name" "$found"
  else
    row absent "$name" "not installed" "make tools"
  fi
}
tool kubectl kubectl version --client
tool wasm-tools wasm-tools --version
tool wasmtime wasmtime --version
tool componentize-py componentize-py --version
tool hadolint hadolint --version
tool kubernetes-validate kubernetes-validate --version
tool PyYAML python3 -c 'import yaml; print(yaml.__version__)'
cosign_version() { cosign version 2>/dev/null | sed -n 's/^GitVersion: *//p'; }
tool cosign cosign_version
tool promtool promtool --version
tool tmux tmux -V
tool docker-registry docker-registry --version
js_packages() { test -d "$repo/guest/js/node_modules" && echo installed; }
tool "guest/js npm packages" js_packages

echo
if [ "$missing" = 0 ]; then
  echo "doctor: every prerequisite is here; make demo and make test can run"
else
  echo "doctor: a prerequisite is missing or too old (see the arrows above)"
  exit 1
fi
