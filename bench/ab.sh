#!/bin/bash
# ab.sh — compare two builds of perfcheck on the same recordings, to show
# that a change costs no speed or memory on every kind of recording, not
# only the one it was tuned on.
#
#   ./bench/ab.sh OLDREV FILE...        # OLDREV against the work tree
#   RUNS=5 CMDS="check top" ./bench/ab.sh HEAD~3 bench/out/*.data
#
# For each file and command (default: check, top, script, pprof; stats
# may be named too) it runs
# the old and the new binary alternately RUNS times (default 3) under
# /usr/bin/time and prints the median wall time, CPU time (user + system)
# and peak RSS of each, and the ratio new/old. Output goes to /dev/null;
# both binaries look binaries up in the same empty build-id cache with no
# debuginfod, so they do the same work.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/.." && pwd -P)
old=${1:?usage: ab.sh OLDREV FILE...}
shift
RUNS=${RUNS:-3}
CMDS=${CMDS:-check top script pprof}
work=$(mktemp -d)
trap 'git -C "$repo" worktree remove --force "$work/old" 2>/dev/null; rm -rf "$work"' EXIT
git -C "$repo" worktree add -q --detach "$work/old" "$old"
(cd "$work/old" && CGO_ENABLED=0 go build -o "$work/pc-old" ./cmd/perfcheck)
(cd "$repo" && CGO_ENABLED=0 go build -o "$work/pc-new" ./cmd/perfcheck)
mkdir "$work/cache"
unset DEBUGINFOD_URLS PERF_BUILDID_DIR

# once BIN CMD FILE: "wall cpu rss_kb" of one run.
once() {
	local args=("$2" --buildid-dir "$work/cache")
	[ "$2" = pprof ] && args+=(-o "$work/out.pb.gz")
	[ "$2" = stats ] && args=(stats) # it looks nothing up
	/usr/bin/time -f '%e %U %S %M' -o "$work/t" "$1" "${args[@]}" "$3" >/dev/null 2>&1 || true
	# A failing command makes time print a status line first.
	tail -n 1 "$work/t" | awk '{printf "%.2f %.2f %d\n", $1, $2 + $3, $4}'
}

# median COLUMN: the median of that column of stdin's lines.
median() { awk -v c="$1" '{print $c}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf '%-22s %-7s %17s %17s %19s  %s\n' file command "wall old/new s" "cpu old/new s" "rss old/new MB" "new/old wall cpu rss"
for f in "$@"; do
	for c in $CMDS; do
		: >"$work/old.txt"
		: >"$work/new.txt"
		for _ in $(seq "$RUNS"); do
			once "$work/pc-old" "$c" "$f" >>"$work/old.txt"
			once "$work/pc-new" "$c" "$f" >>"$work/new.txt"
		done
		read -r ow oc orss < <(paste <(median 1 <"$work/old.txt") <(median 2 <"$work/old.txt") <(median 3 <"$work/old.txt"))
		read -r nw nc nrss < <(paste <(median 1 <"$work/new.txt") <(median 2 <"$work/new.txt") <(median 3 <"$work/new.txt"))
		awk -v f="$(basename "$f")" -v c="$c" -v ow="$ow" -v nw="$nw" -v oc="$oc" -v nc="$nc" -v orss="$orss" -v nrss="$nrss" 'BEGIN {
			printf "%-22s %-7s %8.2f %8.2f %8.2f %8.2f %9.1f %9.1f  %.2f %.2f %.2f\n", f, c, ow, nw, oc, nc, orss/1024, nrss/1024,
				nw/(ow>0?ow:1), nc/(oc>0?oc:1), nrss/(orss>0?orss:1) }'
	done
done
