#!/usr/bin/env bash
# Regenerates scripts/hot-functions.txt: every function of the opreg binary that `opreg serve`
# runs under the benchmark's load, the most executed first, after the few an idle server runs
# (its memory trims, its parked threads). build.rs hands the list to the linker (lld's
# --symbol-ordering-file), which lays those functions out together at the start of the text,
# so a loaded server maps a few MB of code instead of most of its 10 MB (each page fault maps
# the 64 KB around it; see BENCHMARKS.md, memory under load), and an idle one, which lets go
# of its code, maps back only the first pages.
#
#   scripts/hot-functions.sh [CATALOG]   default: ../shared/testdata/corpus/community-operators.fbc.json
#
# Needs valgrind and python3; takes about 6 minutes on 2 cores. It builds the dist binary and
# the benchmark harness, then runs the harness's `rows` (the OLM fan-out and a 20,000-request
# run of the stress mix) with every `opreg serve` under callgrind, which counts every function
# that runs, however rarely, not only those a sampling profiler happens to catch. Symbol
# names carry hashes of each crate's build settings, so the list fits the builds made the way
# this script builds (`cargo build --profile dist`); names the linker does not find are
# skipped, and a stale list costs nothing but the layout.
set -euo pipefail
cd "$(dirname "$0")/.."
catalog=${1:-../shared/testdata/corpus/community-operators.fbc.json}
[ -f "$catalog" ] || { echo "hot-functions.sh: no catalog at $catalog" >&2; exit 2; }
for tool in valgrind python3; do
  command -v "$tool" >/dev/null || { echo "hot-functions.sh: $tool is needed" >&2; exit 2; }
done

cargo build --profile dist --locked --quiet --bin opreg
bin="$PWD/target/dist/opreg"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The harness stops its servers with SIGKILL, which would lose callgrind's counts: the wrapper
# starts each server in a session of its own, and it is interrupted here once the load is over.
cat >"$work/serve.sh" <<EOF
#!/usr/bin/env bash
[ "\$1" = serve ] || exec "$bin" "\$@"
setsid valgrind --tool=callgrind --demangle=no --log-file="$work/vg.%p.log" \
  --callgrind-out-file="$work/cg.%p" "$bin" "\$@" </dev/null &
echo \$! >>"$work/pids"
wait
EOF
chmod +x "$work/serve.sh"
echo "hot-functions.sh: running the load under callgrind (several minutes)" >&2
OPREG_BENCH_BIN="$work/serve.sh" cargo bench --bench harness -- rows "$catalog" \
  --requests 20000 --work "$work/rows" >/dev/null
for pid in $(cat "$work/pids"); do
  kill -INT "$pid" 2>/dev/null || true
done
for pid in $(cat "$work/pids"); do
  while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
done

# The idle server: the embedded demo catalog, counted from its integrity check on, for 5 s
# (both of its trims, at 0.25 s and 3 s without a call), then dumped before it is stopped.
echo "hot-functions.sh: an idle server under callgrind (20 seconds)" >&2
mkdir "$work/idle"
setsid valgrind --tool=callgrind --demangle=no --instr-atstart=no --log-file="$work/idle/vg.log" \
  --callgrind-out-file="$work/idle/cg" "$bin" serve -p 0 -t /dev/null </dev/null 2>"$work/idle/log" &
idle=$!
for _ in $(seq 1 600); do
  grep -q "integrity check passed" "$work/idle/log" && break
  sleep 0.1
done
callgrind_control -i on "$idle" >/dev/null 2>&1
sleep 5
callgrind_control -d "$idle" >/dev/null 2>&1
kill -INT "$idle"
wait "$idle" || true

python3 - "$bin" "$work"/idle/cg.1 -- "$work"/cg.* >scripts/hot-functions.txt <<'EOF'
"""Sums callgrind's self cost (instructions) per function of one binary over each group of
profiles (the idle server's, then the loaded ones', split by --); prints the functions'
symbol names, each group the most executed first, every name once."""
import collections, re, sys

binary, rest = sys.argv[1], sys.argv[2:]
split = rest.index("--")
groups = [rest[:split], rest[split + 1:]]
spec = re.compile(r"^(c?ob|c?fn|c?fl|fi|fe)=(?:\((\d+)\))?\s*(.*)$")


def costs(profiles):
    cost = collections.Counter()
    for path in profiles:
        add(path, cost)
    return cost


def add(path, cost):
    names = {"ob": {}, "fn": {}, "fl": {}}
    obj = fn = fn_obj = None
    after_call = False
    for line in open(path, errors="replace"):
        m = spec.match(line.rstrip("\n"))
        if m:
            kind, ref, name = m.groups()
            table = names[kind[-2:]] if kind[-2:] in names else names["fl"]
            if ref:
                if name:
                    table[ref] = name
                name = table.get(ref, name)
            if kind == "ob":
                obj = name
            elif kind == "fn":
                fn, fn_obj = name, obj
            continue
        if line.startswith("calls="):
            after_call = True  # the next cost line is the call's inclusive cost
            continue
        if line[:1].isdigit() or line[:1] in "+-*":
            if after_call:
                after_call = False
                continue
            parts = line.split()
            if len(parts) > 1 and fn and fn_obj == binary:
                # callgrind marks recursion depth with 'N; the symbol is the same
                cost[re.sub(r"'\d+$", "", fn)] += int(parts[1])


printed = set()
for group in groups:
    for name, n in costs(group).most_common():
        if n > 0 and name not in printed:
            printed.add(name)
            print(name)
EOF
echo "hot-functions.sh: $(wc -l <scripts/hot-functions.txt) functions in scripts/hot-functions.txt" >&2
