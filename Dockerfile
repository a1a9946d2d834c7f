# syntax=docker/dockerfile:1
# weir as one static binary on a distroless base: no shell, no package manager, non-root, and
# nothing to write but the --cache-dir volume (deploy/kubernetes runs it read-only).
#   docker build -t weir .
# CI lints this file with hadolint (host/tests/deploy.rs).

# Alpine's Rust toolchain targets musl and links statically by default.
FROM rust:1.95-alpine3.22 AS build
# ring and wasmtime compile a little C against musl. The image tag pins the Alpine release,
# and with it this package's version.
# hadolint ignore=DL3018
RUN apk add --no-cache musl-dev \
 && rustup target add wasm32-wasip2
WORKDIR /src
COPY . .
# build.rs compiles the built-in guests (default and CEL) for wasm32-wasip2 along the way.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p weir \
 && install -D -m 0555 target/release/weir /out/weir \
 && /out/weir guest compile --into /out/compiled >/dev/null
# Above: the default guest compiled ahead of time, so that a first start loads its machine code
# instead of compiling it. It serves nodes whose CPU has the build machine's features; elsewhere
# weir compiles as without it (docs/operations.md, "Guests compiled ahead of time").

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/weir /usr/local/bin/weir
COPY --from=build --chmod=0555 /out/compiled /usr/lib/weir/compiled
ENV WEIR_COMPILED_GUESTS=/usr/lib/weir/compiled
# distroless' nonroot user; deploy/kubernetes sets the same UID.
USER 65532:65532
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/weir"]
CMD ["run", "--admin-addr=0.0.0.0:9090"]
