#!/usr/bin/env bash
# Renders the README's example picture: the update graph of upstream's etcd package manifests,
# drawn by `opreg graph` in DOT and laid out by graphviz (`dot -Tsvg`), with the classic and
# OLM v1 paths from etcdoperator.v0.6.1 highlighted. Writes docs/etcd-graph.svg.
#
# Needs graphviz (Debian/Ubuntu: apt-get update && apt-get install -y graphviz) and cargo.
# Usage: scripts/graph-example.sh [MANIFESTS_DIR]   (default: ../shared/testdata/upstream-manifests/etcd)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="${1:-$root/../shared/testdata/upstream-manifests/etcd}"
out="$root/docs/etcd-graph.svg"

if ! command -v dot >/dev/null 2>&1; then
  echo "error: graphviz 'dot' not found; install it with: apt-get update && apt-get install -y graphviz" >&2
  exit 1
fi

cargo build --quiet --manifest-path "$root/Cargo.toml" --bin opreg
opreg="${CARGO_TARGET_DIR:-$root/target}/debug/opreg"

mkdir -p "$root/docs"
"$opreg" graph "$src" --package etcd --format dot --from etcdoperator.v0.6.1 \
  | dot -Tsvg > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
