#!/usr/bin/env bash
# Benchmarks: regenerates BENCHMARKS.md with one command.
#
#   scripts/bench.sh                 full run (about 30 minutes on 2 cores; the first time also
#                                    the dist build, about 5, and the two revisions below, about 4
#                                    each): the corpus's community and certified catalogs plus
#                                    synthetic catalogs at 1x, 4x, 16x; then OLM fan-out and a
#                                    million-request memory run on the community catalog and growth
#                                    up to 64x (about 800 MB of FBC, plotted to
#                                    docs/bench-growth.svg); writes BENCHMARKS.md
#   scripts/bench.sh --smoke         seconds: the upstream manifests (rendered) and a tiny synthetic
#                                    catalog, short load phases; writes a temp file and prints it
#   scripts/bench.sh --catalogd      only the catalogd HTTP API section (/all against the file
#                                    server and against the curl/sendfile peer) and the build peaks
#                                    (serving a built database with the HTTP port included) on the
#                                    community catalog, printed, not written (about 3 minutes)
#   scripts/bench.sh --mirror        only the mirror section: opreg mirror against skopeo copy --all
#                                    over 200 images and about 1 GB between loopback registries
#                                    (scripts/bench-mirror.sh; about 10 minutes), printed
#   scripts/bench.sh --signing       only `serve REF`'s time to SERVING on the community catalog as
#                                    a signed image in a registry on loopback, without and with
#                                    --signature-policy (5 rounds each), printed, not written
#   scripts/bench.sh --filter        only the mirror's filtering: `opreg mirror`'s plan of a
#                                    20-package configuration over the community catalog as an
#                                    image in a registry on loopback (examples/mirror_plan.rs,
#                                    built in the dist profile; 5 rounds cold and warm), next to
#                                    `opreg validate` of the image, printed, not written
#   scripts/bench.sh --images        only `opreg validate --images` at the community catalog's
#                                    scale (19,152 images, stand-ins in a registry on loopback):
#                                    the first run, the rerun with the cache, and plain validate,
#                                    printed, not written (about 5 minutes)
#   scripts/bench.sh --delete        only `opreg mirror delete`, stand-ins in registries on loopback:
#                                    phase 2 deleting 200 mirrored images (3 rounds, each mirroring
#                                    again first) and phase 1 over the workspace of a 20-package
#                                    mirror of the community catalog (about 900 images; 5 runs),
#                                    printed, not written (about 2 minutes once built)
#   scripts/bench.sh --regression    only the side-by-side section against the baseline below
#                                    (ingest, start-up, ListBundles, unary calls, upgrade, image
#                                    build and mirror, alternately), printed, not written (about
#                                    10 minutes once both builds exist)
#   scripts/bench.sh --out FILE      write the report elsewhere
#   scripts/bench.sh --baseline REV  measure the build of git revision REV side by side with this
#                                    one (default: de8fbc1, the last build before the registry
#                                    side's consolidation: one transport, one set of formats and
#                                    primitives; earlier reports compared with 92d76c1 and
#                                    0f013dc); built once into ~/.cache/opreg-bench/
#   scripts/bench.sh --step REV      also measure the build of REV against the baseline, in a
#                                    section of its own (none by default: say which earlier build's
#                                    change you want told apart from later ones); --no-step: none
#   scripts/bench.sh --no-baseline   no side-by-side section
#   scripts/bench.sh -- ARGS...      pass ARGS to the harness's `run` (e.g. --scales 1,4 --duration 5);
#                                    see `cargo bench --bench harness -- run --help`
#
# The harness is benches/harness (a `cargo bench` target without libtest); it measures opreg in
# child processes: the binary the Dockerfile ships, built here in Cargo's `dist` profile (the
# release profile's build for --smoke, which only checks that the harness runs). The report is
# written whole by the harness: nothing of the previous file is carried over, and its "Known
# gaps" section is read from its own target tables; it is at most 350 lines. Profiles,
# experiments and the printed output of the modes above belong in docs/performance.md. Run it on a quiet machine: the client and the server share the cores,
# and other load shows up in every figure.
set -euo pipefail
cd "$(dirname "$0")/.."

smoke=0
catalogd=0
signing=0
filter=0
out=""
baseline=de8fbc1
regression=0
images=0
delete=0
step=""
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) smoke=1; shift ;;
    --catalogd) catalogd=1; shift ;;
    --mirror) shift; cargo build --profile dist --locked --quiet --bin opreg
      exec scripts/bench-mirror.sh --opreg "${CARGO_TARGET_DIR:-$PWD/target}/dist/opreg" "$@" ;;
    --signing) signing=1; shift ;;
    --filter) filter=1; shift ;;
    --regression) regression=1; shift ;;
    --images) images=1; shift ;;
    --delete) delete=1; shift ;;
    --out) out="$2"; shift 2 ;;
    --baseline) baseline="$2"; shift 2 ;;
    --no-baseline) baseline=""; shift ;;
    --step) step="$2"; shift 2 ;;
    --no-step) step=""; shift ;;
    --) shift; extra+=("$@"); break ;;
    *) echo "usage: scripts/bench.sh [--smoke | --catalogd | --mirror | --signing | --filter | --regression | --images | --delete] [--out FILE] [--baseline REV | --no-baseline] [--step REV | --no-step] [-- HARNESS-RUN-ARGS...]" >&2; exit 2 ;;
  esac
done

# Builds opreg at git revision $1 outside this tree (so that this tree's .cargo/config.toml
# does not apply), with the same toolchain and, when the revision has it, the same `dist`
# profile as the build under test (else the release profile), and prints the binary's path.
build_rev() {
  local rev dir profile
  rev=$(git rev-parse --verify --quiet --short=12 "$1^{commit}") || {
    echo "bench.sh: revision $1 is not in this repository's history; no side-by-side section" >&2
    return 1
  }
  profile=release
  git show "$rev:Cargo.toml" | grep -q '^\[profile\.dist\]' && profile=dist
  dir="${XDG_CACHE_HOME:-$HOME/.cache}/opreg-bench/$rev"
  if [ ! -x "$dir/target/$profile/opreg" ]; then
    echo "bench.sh: building revision $rev (once, $profile profile) in $dir" >&2
    rm -rf "$dir/src" && mkdir -p "$dir/src"
    git archive "$rev" | tar -x -C "$dir/src"
    (cd "$dir/src" && CARGO_TARGET_DIR="$dir/target" cargo build --profile "$profile" --locked --quiet --bin opreg) >&2 || {
      echo "bench.sh: revision $rev did not build; no side-by-side section" >&2
      return 1
    }
  fi
  echo "$dir/target/$profile/opreg"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Where Cargo puts the binaries (CARGO_TARGET_DIR when set).
target_dir=${CARGO_TARGET_DIR:-$PWD/target}

if [ "$catalogd" = 1 ]; then
  cargo build --profile dist --locked --quiet --bin opreg
  export OPREG_BENCH_BIN="$target_dir/dist/opreg"
  cargo bench --bench harness -- catalogd ../shared/testdata/corpus/community-operators.fbc.json \
    --work "$tmp/work" "${extra[@]}"
  exit 0
fi

if [ "$signing" = 1 ]; then
  cargo build --profile dist --locked --quiet --bin opreg
  export OPREG_BENCH_BIN="$target_dir/dist/opreg"
  cargo bench --bench harness -- signing ../shared/testdata/corpus/community-operators.fbc.json \
    --work "$tmp/work" "${extra[@]}"
  exit 0
fi

if [ "$filter" = 1 ]; then
  cargo build --profile dist --locked --quiet --bin opreg --example mirror-plan
  export OPREG_BENCH_BIN="$target_dir/dist/opreg"
  export OPREG_BENCH_PLAN_BIN="$target_dir/dist/examples/mirror-plan"
  cargo bench --bench harness -- filter ../shared/testdata/corpus/community-operators.fbc.json \
    --work "$tmp/work" "${extra[@]}"
  exit 0
fi

if [ "$images" = 1 ]; then
  cargo build --profile dist --locked --quiet --bin opreg
  export OPREG_BENCH_BIN="$target_dir/dist/opreg"
  cargo bench --bench harness -- image-checks --work "$tmp/work" "${extra[@]}"
  exit 0
fi

if [ "$delete" = 1 ]; then
  cargo build --profile dist --locked --quiet --bin opreg
  export OPREG_BENCH_BIN="$target_dir/dist/opreg"
  cargo bench --bench harness -- delete ../shared/testdata/corpus/community-operators.fbc.json \
    --work "$tmp/work" "${extra[@]}"
  exit 0
fi

if [ "$regression" = 1 ]; then
  cargo build --profile dist --locked --quiet --bin opreg
  export OPREG_BENCH_BIN="$target_dir/dist/opreg"
  bin=$(build_rev "$baseline") || exit 1
  cargo bench --bench harness -- baseline ../shared/testdata/corpus/community-operators.fbc.json \
    --bin "$bin" --label "$baseline" --work "$tmp/work" "${extra[@]}"
  exit 0
fi

args=(run --out "$tmp/report.md" --work "$tmp/work")
if [ "$smoke" = 1 ]; then
  [ -n "$out" ] || out="$tmp/BENCHMARKS.smoke.md"
  cargo run --release --quiet -- render ../shared/testdata/upstream-manifests > "$tmp/upstream.json"
  args+=(--smoke --catalog "$tmp/upstream.json" --command "scripts/bench.sh --smoke")
else
  [ -n "$out" ] || out=BENCHMARKS.md
  args+=(--command "scripts/bench.sh${extra[*]:+ -- ${extra[*]}}")
  cargo build --profile dist --locked --quiet --bin opreg
  export OPREG_BENCH_BIN="$target_dir/dist/opreg"
  if [ -n "$baseline" ] && bin=$(build_rev "$baseline"); then
    args+=(--baseline "$bin" --baseline-label "$baseline")
    if [ -n "$step" ] && bin=$(build_rev "$step"); then
      args+=(--step "$bin" --step-label "$step")
    fi
  fi
fi

cargo bench --bench harness -- "${args[@]}" "${extra[@]}"

# BENCHMARKS.md is a report, read whole: at most 350 lines. History and narrative belong in
# docs/performance.md.
lines=$(wc -l < "$tmp/report.md")
if [ "$lines" -gt 350 ]; then
  echo "the report is $lines lines; BENCHMARKS.md holds at most 350 (move narrative to docs/performance.md)" >&2
  exit 1
fi

if [ "$smoke" = 1 ] && [ "$out" = "$tmp/BENCHMARKS.smoke.md" ]; then
  cat "$tmp/report.md"
else
  mv "$tmp/report.md" "$out"
  echo "wrote $out"
fi
