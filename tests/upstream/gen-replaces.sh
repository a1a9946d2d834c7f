#!/usr/bin/env bash
# Regenerates the `replace` block of this module's go.mod from the pinned k8s.io/kubernetes
# release's own go.mod.
#
# k8s.io/kubernetes requires its staging modules (k8s.io/api, k8s.io/client-go, ...) at v0.0.0
# and replaces them with directories of its own tree. A module that depends on it must replace
# each of them with the published release of the same minor: k8s.io/kubernetes v1.X.Y ships its
# staging modules as v0.X.Y. The list of staging modules changes between releases, so it is read
# from the release's go.mod rather than written by hand.
#
# Usage: gen-replaces.sh [K8S_VERSION]   (default: the k8s.io/kubernetes version go.mod requires)
set -euo pipefail
cd "$(dirname "$0")"

version="${1:-$(go list -m -mod=mod -f '{{.Version}}' k8s.io/kubernetes 2>/dev/null ||
	awk '$1 == "k8s.io/kubernetes" { print $2 }' go.mod)}"
case "$version" in
v1.*.*) ;;
*)
	echo "gen-replaces.sh: expected a k8s.io/kubernetes version like v1.36.3, got '$version'" >&2
	exit 2
	;;
esac
staging_version="v0.${version#v1.}"

# `go mod download` fetches the release's go.mod through the module proxy (and checks it against
# the checksum database); .GoMod is the path of that file in the module cache.
upstream_mod="$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
if [[ ! -f "$upstream_mod" ]]; then
	echo "gen-replaces.sh: could not download the go.mod of k8s.io/kubernetes@$version" >&2
	exit 1
fi

# Every replace whose target is ./staging/src/<module> names a staging module.
mapfile -t staging < <(go mod edit -json "$upstream_mod" |
	sed -n 's/^[[:space:]]*"Path": "\.\/staging\/src\/\(.*\)"$/\1/p' | sort -u)
if [[ ${#staging[@]} -eq 0 ]]; then
	echo "gen-replaces.sh: no staging replaces found in $upstream_mod" >&2
	exit 1
fi

# Drop the replaces of the previous run, then add one per staging module.
go mod edit -json go.mod | sed -n 's/^[[:space:]]*"Path": "\(k8s\.io\/[^"]*\)"$/\1/p' |
	sort -u | while read -r old; do go mod edit -dropreplace="$old" go.mod; done
args=()
for m in "${staging[@]}"; do
	args+=("-replace=$m=$m@$staging_version")
done
go mod edit -require="k8s.io/kubernetes@$version" "${args[@]}" go.mod
echo "gen-replaces.sh: ${#staging[@]} staging modules replaced at $staging_version for k8s.io/kubernetes $version" >&2
