# A catalog image on opreg: what a catalog author writes. It is the Dockerfile that
# `opm generate dockerfile` writes, with only the base image changed; upstream's
# `quay.io/operator-framework/opm` base becomes the opreg image, which has /bin/opm (it
# implements `opm serve`) and /bin/grpc_health_probe.
#
#   podman build -f examples/catalog.Dockerfile -t quay.io/example/hello-catalog:v1 examples
#
# The build context is examples/, so `catalog` below is examples/catalog/ (an FBC: one
# directory per package). Set OPREG_IMAGE to build on another tag of the opreg image.
ARG OPREG_IMAGE=quay.io/opreg/opreg:latest

# Builder stage: add the FBC and pre-build the serving cache. `--cache-only` builds the cache
# and exits without serving. It fails the build if the catalog is invalid.
FROM ${OPREG_IMAGE} AS builder
ADD catalog /configs
RUN ["/bin/opm", "serve", "/configs", "--cache-dir=/tmp/cache", "--cache-only"]

# Final stage: the FBC, its cache, and the serving command. OLM runs this image with no
# command or args, so ENTRYPOINT and CMD must start the server. With --cache-dir and without
# --cache-only, the cache's integrity is enforced: the server refuses to start if the cache
# does not match /configs. It never writes, so the pod can run with a read-only root filesystem.
FROM ${OPREG_IMAGE}
ENTRYPOINT ["/bin/opm"]
CMD ["serve", "/configs", "--cache-dir=/tmp/cache"]
COPY --from=builder /configs /configs
COPY --from=builder /tmp/cache /tmp/cache
# Where the FBC is, for `opm render <image>`, mirroring tools, OLM v1 catalogd and OLM's
# extractContent mode.
LABEL operators.operatorframework.io.index.configs.v1=/configs
