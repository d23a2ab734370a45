#!/usr/bin/env bash
# The mirror benchmark (scripts/bench.sh --mirror runs it): opreg mirror against skopeo copy --all
# over the same image set, registry to registry on loopback, in the same run.
#
#   scripts/bench-mirror.sh [--images N] [--unique-mb M] [--base-mb B] [--opreg BIN]
#
# The source, a Debian docker-registry, is filled with N images (default 200), each with a layer
# of its own of M MB (default 5) over one of four shared base layers of B MB (default 20), so
# that the set holds N*M + 4*B MB of blobs (1,080 MB by default) and most images share a base.
# Layers are uncompressed tars of random bytes (compression would only time gzip).
#
# Then, each into an empty registry of its own:
#   - skopeo: `skopeo copy --all` of each image, one after another, as `skopeo sync` copies;
#   - opreg: `opreg mirror` of an ImageSetConfiguration listing the same images as
#     additionalImages (defaults: 4 images and 5 blobs at a time);
#   - opreg again, to the same registry (nothing new).
# Each destination's access log counts the blob uploads (PUTs that complete one) and mounts.
# Prints a Markdown section for BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."

images=200
unique_mb=5
base_mb=20
bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --images) images="$2"; shift 2 ;;
    --unique-mb) unique_mb="$2"; shift 2 ;;
    --base-mb) base_mb="$2"; shift 2 ;;
    --opreg) bin="$2"; shift 2 ;;
    *) echo "usage: scripts/bench-mirror.sh [--images N] [--unique-mb M] [--base-mb B] [--opreg BIN]" >&2; exit 2 ;;
  esac
done
if [ -z "$bin" ]; then
  cargo build --release --quiet --bin opreg
  bin="${CARGO_TARGET_DIR:-$PWD/target}/release/opreg"
fi
for t in docker-registry skopeo python3; do
  command -v "$t" >/dev/null || { echo "bench-mirror: $t is not installed (scripts/test-deps.sh)" >&2; exit 1; }
done

tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_registry NAME: a registry with its access log in $tmp/NAME.log; its port in $port.
# (Not run in a command substitution: the registry's pid must reach the cleanup's list.)
start_registry() {
  local name=$1
  port=$(free_port)
  mkdir -p "$tmp/$name"
  cat > "$tmp/$name.yml" <<EOF
version: 0.1
log: {level: error, accesslog: {disabled: false}}
storage: {filesystem: {rootdirectory: $tmp/$name}}
http: {addr: 127.0.0.1:$port}
EOF
  docker-registry serve "$tmp/$name.yml" > "$tmp/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/v2/" >/dev/null 2>&1 && break
    sleep 0.1
  done
}

uploads() { grep -c '"PUT /v2/[^ ]*/blobs/uploads/' "$tmp/$1.log" || true; }
mounts() { grep -c '"POST /v2/[^ ]*/blobs/uploads/?[^ ]*mount=' "$tmp/$1.log" || true; }

start_registry src; src=$port
echo "bench-mirror: filling the source with $images images" >&2
python3 - "$tmp/layouts" "$images" "$unique_mb" "$base_mb" <<'EOF'
import hashlib, io, json, os, sys, tarfile
out, n, unique_mb, base_mb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def layer(name, mb):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        data = os.urandom(mb << 20)
        info = tarfile.TarInfo(name); info.size = len(data); info.mtime = 0
        t.addfile(info, io.BytesIO(data))
    return buf.getvalue()
def sha(b): return "sha256:" + hashlib.sha256(b).hexdigest()
bases = [layer(f"base/{i}", base_mb) for i in range(4)]
for i in range(n):
    d = os.path.join(out, str(i)); blobs = os.path.join(d, "blobs", "sha256")
    os.makedirs(blobs)
    own = layer(f"app/{i}", unique_mb)
    base = bases[i % 4]
    cfg = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Labels": {"i": str(i)}},
        "rootfs": {"type": "layers", "diff_ids": [sha(base), sha(own)]}}).encode()
    man = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha(cfg), "size": len(cfg)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": sha(b), "size": len(b)} for b in (base, own)]}).encode()
    for b in (base, own, cfg, man):
        with open(os.path.join(blobs, sha(b)[7:]), "wb") as f: f.write(b)
    with open(os.path.join(d, "oci-layout"), "w") as f: f.write('{"imageLayoutVersion":"1.0.0"}')
    with open(os.path.join(d, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": sha(man), "size": len(man), "annotations": {"org.opencontainers.image.ref.name": "v1"}}]}, f)
EOF
list=()
for i in $(seq 0 $((images - 1))); do
  ref="127.0.0.1:$src/bench/team$((i % 10))/app$i:v1"
  skopeo copy -q --dest-tls-verify=false "oci:$tmp/layouts/$i:v1" "docker://$ref"
  list+=("$ref")
done
rm -rf "$tmp/layouts"
total_mb=$(du -sm "$tmp/src" | cut -f1)

# skopeo, one image after another.
start_registry skopeo; sk=$port
start=$(date +%s.%N)
for ref in "${list[@]}"; do
  skopeo copy -q --all --src-tls-verify=false --dest-tls-verify=false \
    "docker://$ref" "docker://127.0.0.1:$sk/${ref#*/}"
done
skopeo_s=$(printf '%.2f' "$(echo "$(date +%s.%N) - $start" | bc)")

# opreg mirror.
start_registry opreg; op=$port
{
  echo "apiVersion: mirror.openshift.io/v2alpha1"
  echo "kind: ImageSetConfiguration"
  echo "mirror:"
  echo "  additionalImages:"
  for ref in "${list[@]}"; do echo "  - name: $ref"; done
} > "$tmp/imageset.yaml"
run_opreg() {
  /usr/bin/time -f '%e %M' -o "$tmp/time" "$bin" mirror -q --use-http --config "$tmp/imageset.yaml" \
    --workspace "$tmp/ws" "docker://127.0.0.1:$op"
  cat "$tmp/time"
}
read -r opreg_s opreg_kb < <(run_opreg)
up1=$(uploads opreg); mo1=$(mounts opreg)
read -r again_s again_kb < <(run_opreg)
up2=$(( $(uploads opreg) - up1 ))
sk_up=$(uploads skopeo); sk_mo=$(mounts skopeo)
blobs=$((images * 2 + 4))   # a config and an own layer each, and the four bases

ratio=$(printf '%.2f' "$(echo "scale=3; $opreg_s / $skopeo_s" | bc)")
again_pct=$(echo "scale=1; 100 * $again_s / $opreg_s" | bc)
cat <<EOF
## Mirror: opreg mirror against skopeo copy --all

Measured by \`scripts/bench.sh --mirror\` on $(nproc) cores, $(date -u +%Y-%m-%d): $images images
($total_mb MB of blobs in the source registry: each image a ${unique_mb} MB layer of its own over one
of four shared ${base_mb} MB bases, in 10 repositories' namespaces), Debian \`docker-registry\`
instances on loopback, each run into an empty registry.

| run | wall time | blob uploads | mounts | peak RSS |
|---|---:|---:|---:|---:|
| \`skopeo copy --all\`, one image after another (the floor) | ${skopeo_s} s | $sk_up | $sk_mo | |
| \`opreg mirror\` (4 images, 5 blobs at a time) | ${opreg_s} s (**${ratio}x** skopeo) | $up1 | $mo1 | $((opreg_kb / 1024)) MB |
| \`opreg mirror\` again, nothing new | ${again_s} s (${again_pct} % of the first) | $up2 | | $((again_kb / 1024)) MB |

The set has $blobs distinct blobs; a blob uploaded more than once would show as more uploads than
that (a shared base is mounted into the other repositories, not sent again).
EOF
