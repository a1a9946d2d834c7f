#!/usr/bin/env bash
# The default guest's golden cases under Node.js (`make jco`): weir writes the request of every
# case, the component `jco transpile` made of the default guest answers them in Node.js, and weir
# judges the answers with the checks of `weir test`. Prints `N passed, N failed`; fails on any
# failure. Then checks that the judging can fail: a tampered answer must.
#
#   tests/jco/run.sh WEIR [CASES...]      (CASES defaults to tests/cases; run from the repo root)
set -euo pipefail

weir=$(realpath "$1")
shift
cases=("${@:-tests/cases}")
here=$(dirname "$(realpath "$0")")
build=$here/build
rm -rf "$build"
mkdir -p "$build"

# The shape checks themselves first: they are what makes a mismatch fail loudly.
node --test "$here/shapes.test.mjs" >"$build/shapes-test.txt" || { cat "$build/shapes-test.txt"; exit 1; }
"$weir" guest export "$build/default.wasm" 2>/dev/null
# The module goes under tests/jco, where it resolves @bytecodealliance/preview2-shim (the WASI
# imports) from the pinned node_modules.
(cd "$here" && npx --no-install jco transpile build/default.wasm -o build/default --name default --quiet)
"$weir" test --write-requests "$build/requests.json" "${cases[@]}"
node "$here/run.mjs" "$build/default/default.js" "$build/default/interfaces/weir-endpoints-types.d.ts" \
  "$build/requests.json" "$build/answers.json"
status=0
"$weir" test --answers "$build/answers.json" "${cases[@]}" >"$build/verdicts.txt" || status=$?
grep -v '^ok ' "$build/verdicts.txt" || true
if [ "$status" -ne 0 ]; then
  echo "error: the golden cases disagree under Node.js (every verdict: $build/verdicts.txt)" >&2
  exit "$status"
fi

# The comparison can fail: one answer whose Endpoints has a ready address, that address made not
# ready, must fail its case.
node "$here/tamper.mjs" "$build/answers.json" "$build/tampered.json"
if "$weir" test --answers "$build/tampered.json" "${cases[@]}" >"$build/tampered.txt"; then
  echo "error: a tampered answer passed (verdicts: $build/tampered.txt)" >&2
  exit 1
fi
grep -q '^[0-9]* passed, 1 failed$' "$build/tampered.txt" || {
  echo "error: a tampered answer should fail exactly one case: $(tail -1 "$build/tampered.txt")" >&2
  exit 1
}
echo "jco: a tampered answer fails its case ($(tail -1 "$build/tampered.txt"))"
