# The opreg image: an OLM catalog registry that can replace the opm base image.
#
# The build is offline and needs the crates vendored into the build context first:
#
#   cargo vendor --locked vendor >/dev/null
#   podman build -t quay.io/opreg/opreg:latest .       (docker build works too)
#
# What's in the image (FROM scratch, about 17 MB):
#   /bin/opreg                  the static binary
#   /bin/opm                    the same file (a hard link): `opm serve ...`, as in catalog
#                               images built on upstream's opm image
#   /bin/grpc_health_probe      the same file: grpc_health_probe's flags and exit codes, for
#                               OLM's exec probes
#   /tmp/cache                  the embedded demo catalog's pre-built cache (1001:0, 0775)
#   USER 1001, EXPOSE 50051, LABEL operators.operatorframework.io.index.configs.v1=/configs
#
# Default command: `opm serve /configs --cache-dir=/tmp/cache --fallback-demo ...`. A catalog
# image built FROM this one (examples/catalog.Dockerfile) serves its /configs; the bare image
# serves the demo. Both work with a read-only root filesystem and any UID in group 0, as long
# as the cache in /tmp/cache was pre-built (the catalog Dockerfile does that with --cache-only).
# No network access is needed at run time.

ARG RUST_IMAGE=docker.io/library/rust:1.95-bookworm

FROM ${RUST_IMAGE} AS builder
WORKDIR /src
# Build from vendor/ only, never from the network. (In /.cargo, which cargo reads from any
# directory below it, so that a .cargo/ in the sources cannot replace it.)
RUN mkdir -p /.cargo && printf '%s\n' '[source.crates-io]' 'replace-with = "vendored-sources"' \
        '[source.vendored-sources]' 'directory = "/src/vendor"' '[net]' 'offline = true' \
        >/.cargo/config.toml
# The dependencies first, in a layer that is rebuilt only when the manifest, the lock file,
# build.rs, .cargo/, proto/ or vendor/ change: a stub crate stands in for src/, with the manifest's
# [[bin]], [[test]], [[bench]] and [[example]] targets left out (their files are not here yet).
COPY Cargo.toml Cargo.lock build.rs ./
# The bundled SQLite's build flags ([env] LIBSQLITE3_FLAGS), merged with /.cargo's settings.
COPY .cargo/ .cargo/
COPY proto/ proto/
COPY vendor/ vendor/
# The dist profile (Cargo.toml: fat LTO, one codegen unit). Static glibc (crt-static with an
# explicit --target, so build scripts and proc macros stay dynamic); symbols kept, debug info
# stripped.
ENV CARGO_PROFILE_DIST_STRIP=debuginfo \
    RUSTFLAGS="-C target-feature=+crt-static"
RUN set -eu; \
    target="$(rustc -vV | sed -n 's/^host: //p')"; \
    awk '/^[[:space:]]*\[/ { skip = ($0 ~ /^[[:space:]]*\[\[[[:space:]]*(bin|test|bench|example)[[:space:]]*\]\]/) } !skip' \
        Cargo.toml >Cargo.stub && mv Cargo.stub Cargo.toml; \
    mkdir -p src; echo 'fn main() {}' >src/main.rs; : >src/lib.rs; \
    cargo build --profile dist --locked --target "$target" --bin opreg; \
    cargo clean --profile dist --target "$target" -p opreg; \
    rm -rf src
COPY . .
RUN set -eu; \
    target="$(rustc -vV | sed -n 's/^host: //p')"; \
    cargo build --profile dist --locked --target "$target" --bin opreg; \
    mkdir -p /rootfs/bin /rootfs/etc /rootfs/tmp /demo/cache; \
    cp "target/$target/dist/opreg" /rootfs/bin/opreg; \
    ln /rootfs/bin/opreg /rootfs/bin/opm; \
    ln /rootfs/bin/opreg /rootfs/bin/grpc_health_probe; \
    chmod 0755 /rootfs/bin/opreg; \
    chmod 1777 /rootfs/tmp; \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nopreg:x:1001:0:opreg:/tmp:/sbin/nologin\n' >/rootfs/etc/passwd; \
    printf 'root:x:0:\n' >/rootfs/etc/group; \
    printf 'hosts: files dns\n' >/rootfs/etc/nsswitch.conf; \
    /rootfs/bin/opreg serve --cache-dir=/demo/cache --cache-only; \
    chmod 0775 /demo/cache; \
    chmod 0644 /demo/cache/*

FROM scratch
COPY --from=builder /rootfs/ /
# /tmp/cache is writable by the default user and by any UID in group 0, so that a catalog
# image's `RUN ["/bin/opm", "serve", "/configs", "--cache-dir=/tmp/cache", "--cache-only"]`
# can replace the demo's cache with its own.
COPY --from=builder --chown=1001:0 /demo/ /tmp/
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
USER 1001
EXPOSE 50051
LABEL operators.operatorframework.io.index.configs.v1=/configs \
      org.opencontainers.image.title="opreg" \
      org.opencontainers.image.description="Operator catalog registry: serves OLM catalogs over the operator-registry gRPC API, a drop-in for opm serve" \
      org.opencontainers.image.licenses="Apache-2.0"
ENTRYPOINT ["/bin/opm"]
CMD ["serve", "/configs", "--cache-dir=/tmp/cache", "--cache-enforce-integrity=false", "--fallback-demo"]
