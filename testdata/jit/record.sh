#!/bin/bash
# record.sh — run perf's jitdump path by hand, as check/jitdump_test.go
# does (x86-64, perf and gcc needed; root or kernel.perf_event_paranoid <= 1):
#
#   ./testdata/jit/record.sh [OUTDIR]
#
# builds jitprog.c, records it with `perf record -k mono` (jitdump
# timestamps are CLOCK_MONOTONIC; perf inject refuses other clocks), runs
# `perf inject --jit`, and prints what perf report and perfcheck say of the
# injected file. Everything, the build-id cache included (HOME points
# there), stays in OUTDIR (default: a new directory under /tmp), which is
# kept: the jitted-PID-N.so files perf inject writes beside jit-PID.dump
# are named in the recording by their absolute path.
#
# Nothing is committed from here: tests record afresh, because a recording
# names the absolute paths of its jitted files and a build-id perf drew at
# random.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../.." && pwd -P)
out=${1:-$(mktemp -d /tmp/perfcheck-jit.XXXXXX)}
mkdir -p "$out/home" "$out/jit"
out=$(cd "$out" && pwd -P)
[ "$(uname -m)" = x86_64 ] || { echo "record.sh: jitprog generates x86-64 code" >&2; exit 1; }
# Built before HOME moves: go's module and build caches live under HOME.
(cd "$repo" && go build -o "$out/perfcheck" ./cmd/perfcheck)
export HOME=$out/home LC_ALL=C

gcc -O1 -g -Wall -o "$out/jitprog" "$here/jitprog.c"
perf record -q -k mono -e cpu-clock -F 2000 -g -o "$out/jit.data" -- "$out/jitprog" "$out/jit" 0.3
perf inject --jit -i "$out/jit.data" -o "$out/jit-injected.data"

echo "== $out/jit: dump and jitted files"
ls -l "$out/jit"
echo "== perf buildid-list"
perf buildid-list -i "$out/jit-injected.data"
echo "== perf report --sort dso,sym"
perf report -i "$out/jit-injected.data" --no-children --stdio -q --sort dso,sym -g none 2>/dev/null | head -5
echo "== perfcheck"
"$out/perfcheck" check "$out/jit-injected.data" || true
"$out/perfcheck" top -n 5 "$out/jit-injected.data" || true
