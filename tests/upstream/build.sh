#!/usr/bin/env bash
# Builds kube-harness to the path given as the only argument, static (CGO_ENABLED=0), with the
# version ldflags of the pinned k8s.io/kubernetes release, so that `kubectl version` against the
# harness reports that release. Next to it go OUT-pause and OUT-http-server, the two programs that
# `kube-harness cluster up` packs into images (nothing can be pulled there).
#
# The flags are the same on every run (buildDate is the release's publication time, not the
# build time; no VCS stamp), so a rebuild with warm Go caches only checks and relinks nothing.
set -euo pipefail
out="${1:?usage: build.sh OUTPUT}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
cd "$(dirname "$0")"

version="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
released="$(go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)"
minor="${version#v1.}"
minor="${minor%%.*}"
pkg=k8s.io/component-base/version
ldflags="-X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$released -X $pkg.gitCommit="

mkdir -p "$(dirname "$out")"
CGO_ENABLED=0 go build -buildvcs=false -ldflags "$ldflags" -o "$out" .
# The two programs `kube-harness cluster up` packs into images (nothing can be pulled there); it
# finds them next to itself.
for image in pause http-server; do
	CGO_ENABLED=0 go build -buildvcs=false -ldflags "-s -w" -o "$out-$image" "./images/$image"
done
