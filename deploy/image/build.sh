#!/usr/bin/env bash
# Builds weir's image without pulling anything: a static (musl) release `weir` on an empty base,
# run as UID 65532 like the Dockerfile's distroless stage, committed with buildah and written as
# an OCI archive that `podman load -i` and `ctr -n k8s.io images import` take. For machines that
# reach no container registry; where one is reachable, the Dockerfile builds the same image.
#
#   deploy/image/build.sh [IMAGE [ARCHIVE]]     (`make image`)
#
# Needs buildah and musl-tools (Debian packages) and rustup's x86_64-unknown-linux-musl target;
# `make image` installs the target, and this script says which package is missing.
set -euo pipefail
image="${1:-localhost/weir:dev}"
archive="${2:-target/image/weir.oci.tar}"
cd "$(dirname "$0")/../.."

missing=()
command -v buildah >/dev/null 2>&1 || missing+=(buildah)
command -v musl-gcc >/dev/null 2>&1 || missing+=(musl-tools)
# The Dockerfile's distroless base carries the system's CA bundle, which oci:// guests on
# registries with public certificates need; this image takes the build machine's.
ca_bundle=/etc/ssl/certs/ca-certificates.crt
[ -s "$ca_bundle" ] || missing+=(ca-certificates)
if [ ${#missing[@]} -gt 0 ]; then
  echo "error: make image needs ${missing[*]}: apt-get install ${missing[*]}" >&2
  exit 1
fi

target=x86_64-unknown-linux-musl
rustup target add "$target"
# ring's and wasmtime's C parts compile with musl-gcc; the result links statically.
CC_x86_64_unknown_linux_musl=musl-gcc cargo build --release --locked --target "$target" -p weir
binary="${CARGO_TARGET_DIR:-target}/$target/release/weir"
# An empty base has no loader and no libc: no program interpreter and no shared library.
if readelf --program-headers --dynamic "$binary" | grep -q 'INTERP\|(NEEDED)'; then
  echo "error: $binary is not static:" >&2
  readelf --program-headers --dynamic "$binary" | grep 'INTERP\|(NEEDED)' >&2
  exit 1
fi

# The default guest compiled ahead of time, so that a first start loads its machine code instead
# of compiling it (docs/operations.md, "Guests compiled ahead of time"). It serves nodes whose
# CPU has this machine's features; elsewhere weir compiles as without it.
compiled="$(mktemp -d)"
container="$(buildah from scratch)"
trap 'buildah rm "$container" >/dev/null 2>&1 || true; rm -rf "$compiled"' EXIT
"$binary" guest compile --into "$compiled/guests" >/dev/null
buildah copy --chmod 0555 "$container" "$binary" /usr/local/bin/weir >/dev/null
buildah copy --chmod 0555 "$container" "$compiled/guests" /usr/lib/weir/compiled >/dev/null
buildah copy --chmod 0444 "$container" "$ca_bundle" /etc/ssl/certs/ca-certificates.crt >/dev/null
# The same entry point, user and port as the Dockerfile's final stage: the manifests in
# deploy/kubernetes run either image.
buildah config --user 65532:65532 --port 9090 --env WEIR_COMPILED_GUESTS=/usr/lib/weir/compiled \
  --entrypoint '["/usr/local/bin/weir"]' --cmd '["run", "--admin-addr=0.0.0.0:9090"]' "$container"
buildah commit --quiet "$container" "$image" >/dev/null
mkdir -p "$(dirname "$archive")"
rm -f "$archive"
buildah push --quiet "$image" "oci-archive:$archive:$image"
echo "$image -> $archive ($(du -h "$archive" | cut -f1))"
