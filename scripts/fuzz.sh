#!/usr/bin/env bash
# Builds and runs every cargo-fuzz target in fuzz/ for SECONDS_PER_TARGET (default 30), one
# target at a time, single job. Exits nonzero if any target finds a crash, timeout or OOM.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]
#
# Installs cargo-fuzz (crates.io, --locked) when it is missing. Only a stable toolchain is
# needed: RUSTC_BOOTSTRAP=1 lets it accept the -Z flags cargo-fuzz passes. Each target starts
# from the committed seeds (fuzz/seeds/<target>) plus whatever earlier runs found
# (fuzz/corpus/<target>, git-ignored); crashes land in fuzz/artifacts/<target>/, logs in
# fuzz/target/logs/. See fuzz/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-30}
case $secs in
'' | *[!0-9]*)
    echo "usage: $0 [SECONDS_PER_TARGET]" >&2
    exit 2
    ;;
esac

export RUSTC_BOOTSTRAP=1
start=$SECONDS
phase=$SECONDS
took() {
    echo "-- $1 took $((SECONDS - phase))s"
    phase=$SECONDS
}
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
    took "installing cargo-fuzz"
fi

# target:max_len:dictionary
targets=(
    fbc_json:16384:fbc
    fbc_yaml:16384:fbc
    fbc_stream:4096:fbc
    package_manifest:32768:manifests
    bundle_dir:32768:manifests
    csv:32768:manifests
    blang:256:ranges
    masterminds:256:ranges
    legacy_index:32768:
    image_manifest:8192:
    www_authenticate:1024:
    image_layer:65536:
    imageset_config:8192:
    mirror_history:8192:
    mirror_listing:16384:
    mirror_archive:65536:
    catalog_source_template:4096:
    signature_policy:8192:
    cosign_key:4096:
    image_mirrors:8192:
    registries_conf:4096:
    delete_config:8192:
    delete_list:8192:
)

# --debug-assertions: integer overflow and debug_assert! count as crashes too.
flags=(--debug-assertions --sanitizer address)

echo "== building fuzz targets"
cargo fuzz build "${flags[@]}"
took "building"

logs=fuzz/target/logs
mkdir -p "$logs"
failed=()
summary=()
for spec in "${targets[@]}"; do
    IFS=: read -r t max_len dict <<<"$spec"
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
    args=(
        -max_total_time="$secs"
        -max_len="$max_len"
        -rss_limit_mb=2048
        -timeout=10
        -print_final_stats=1
    )
    [ -n "$dict" ] && args+=(-dict="fuzz/dicts/$dict.dict")
    echo "== fuzzing $t for ${secs}s"
    status=0
    cargo fuzz run "${flags[@]}" "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- "${args[@]}" \
        >"$logs/$t.log" 2>&1 || status=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$t.log" | tail -1)
    tail -n 3 "$logs/$t.log"
    if [ "$status" -ne 0 ]; then
        failed+=("$t")
        echo "!! $t failed (exit $status); log: $logs/$t.log" >&2
        grep -E '^(==[0-9]+==ERROR|SUMMARY|thread .* panicked|artifact_prefix|Test unit written)' \
            "$logs/$t.log" >&2 || true
    fi
    took "$t"
    summary+=("$(printf '%-18s %6ss %12s execs  %s' "$t" "$secs" "${execs:-?}" \
        "$([ "$status" -eq 0 ] && echo ok || echo FAILED)")")
done

# The legacy_index target keeps its database in a per-process directory on /dev/shm (or the
# system temp dir); libFuzzer exits without running destructors.
rm -rf /dev/shm/opreg-fuzz-* "${TMPDIR:-/tmp}"/opreg-fuzz-* 2>/dev/null || true

echo "== summary"
printf '%s\n' "${summary[@]}"
echo "total: $((SECONDS - start))s"
if [ "${#failed[@]}" -ne 0 ]; then
    echo "fuzzing found problems in: ${failed[*]}" >&2
    exit 1
fi
