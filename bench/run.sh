#!/bin/bash
# run.sh — time perfcheck against perf on the same large recording.
#
#   ./bench/run.sh                      # bench/out/large.data (made if missing)
#   ./bench/run.sh FILE...              # other recordings, e.g. bench/out/large-pipe.data
#   RUNS=5 ./bench/run.sh               # best of 5 instead of 3
#   SECTIONS="stats check" ./bench/run.sh
#   FRESH=1 ./bench/run.sh              # also on a copy of each file made with cp
#   PERFCHECK=/tmp/pc ./bench/run.sh    # time that binary instead of building one
#
# Sections:
#   stats  perfcheck stats  vs perf report --stats, and cat FILE > /dev/null (the floor)
#   check  perfcheck FILE   vs perf buildid-list --with-hits and perf report --stdio
#   top    perfcheck top    vs perf report --stdio (also check + top together)
#   pprof  perfcheck pprof  vs perf report --stdio
# A perfcheck section runs only when `perfcheck -h` lists the command (the
# commands are being written); otherwise it prints "skipped: not yet
# implemented". The perf and cat figures are always measured.
#
# Each figure is the best wall time of RUNS runs (after one run under
# /usr/bin/time that warms the page cache and gives the peak RSS, %M), and
# the best CPU time (user + system of the children, from the shell's times
# builtin, 1 ms resolution; steadier than wall time on a loaded machine, but
# a tool using both cores shows more CPU than wall time). Ratios are given
# for both; a goal is judged on the wall-time ratio.
# How the page cache holds the file matters as much as the tools: a file
# perf record has just written (in small writes) sits in small folios, and
# every reader, cat included, goes about twice as slowly as over a copy
# written in large writes (or read back from disk), which the kernel keeps
# in large folios. FRESH=1 measures each file a second time through such a
# copy (bench/out/.fresh-NAME, removed at the end).
# Output goes to /dev/null; perf runs with HOME set to an empty scratch
# directory so that neither tool reads a ~/.debug cache the other lacks,
# and nothing in the user's home is written.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/.." && pwd -P)
out=$here/out
PERF=${PERF:-perf}
RUNS=${RUNS:-3}
SECTIONS=${SECTIONS:-stats check top pprof}

command -v "$PERF" >/dev/null || { echo "run.sh: perf not found (Debian: apt-get install linux-perf)" >&2; exit 1; }
if [ ! -x /usr/bin/time ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		apt-get install -y -q time >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q time >/dev/null; }
	else
		echo "run.sh: /usr/bin/time missing (Debian: apt-get install time)" >&2
		exit 1
	fi
fi

mkdir -p "$out"
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
	files=("$out/large.data")
	[ -f "$out/large.data" ] || "$here/record-large.sh" file
fi

if [ -n "${PERFCHECK:-}" ]; then
	pc=$PERFCHECK
	echo "perfcheck: $pc (PERFCHECK)"
else
	echo "building perfcheck: CGO_ENABLED=0 go build -o bench/out/perfcheck ./cmd/perfcheck"
	(cd "$repo" && CGO_ENABLED=0 go build -o "$out/perfcheck" ./cmd/perfcheck)
	pc=$out/perfcheck
fi

scratch=$(mktemp -d /tmp/perfcheck-bench.XXXXXX)
fresh=()
trap 'rm -rf "$scratch" "${fresh[@]}"' EXIT
export HOME=$scratch/home LC_ALL=C
mkdir -p "$HOME"

# has CMD: does this perfcheck have the subcommand? Asked through the
# command list of `perfcheck -h`, because `perfcheck CMD -h` for an unknown
# CMD is taken as `perfcheck check CMD -h` once check exists.
has() {
	# Not grep -q: it may exit at the match while perfcheck still writes,
	# and the SIGPIPE then fails the pipeline under pipefail.
	"$pc" -h 2>/dev/null | grep -E "^  $1 " >/dev/null
}

# cpuof FILE: the user + system seconds of the shell's finished children
# in FILE, the output of the times builtin (millisecond resolution).
cpuof() {
	tail -n 1 "$1" | awk '{
		s = 0
		for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]); s += p[1] * 60 + p[2] }
		printf "%.3f", s
	}'
}

# measure VAR OKCODES CMD...: runs CMD once under /usr/bin/time, which
# warms the page cache and gives the peak RSS (%M), then RUNS times timed
# directly (EPOCHREALTIME around the command, CPU from the times builtin):
# /usr/bin/time would add its own start-up, a few ms here, to every wall
# time. Sets VAR_s (best seconds), VAR_cpu (best user+system seconds) and
# VAR_mb (peak RSS in MB). Output goes to /dev/null, not to a file:
# writing cat's 128 MB to a file made the "floor" three times slower than
# cat. OKCODES is a regex of acceptable exit statuses (perfcheck check
# exits 1 when it finds problems). On failure prints the error and sets
# VAR_s to "".
measure() {
	local var=$1 ok=$2
	shift 2
	local best="" bestcpu="" kb=0 i t0 t1 rc el cpu
	for ((i = 0; i <= RUNS; i++)); do
		rc=0
		if [ "$i" -eq 0 ]; then
			/usr/bin/time -f '%M' -o "$scratch/rss" "$@" >/dev/null 2>"$scratch/stderr" || rc=$?
		else
			# times snapshots only between the two stamps: a
			# $(...) there would be a child of its own and count.
			times >"$scratch/times0"
			t0=$EPOCHREALTIME
			"$@" >/dev/null 2>"$scratch/stderr" || rc=$?
			t1=$EPOCHREALTIME
			times >"$scratch/times1"
		fi
		if ! [[ $rc =~ ^($ok)$ ]]; then
			echo "  FAILED (exit $rc): $*" >&2
			sed -n '1,5p' "$scratch/stderr" >&2
			printf -v "${var}_s" '%s' ""
			printf -v "${var}_mb" '%s' ""
			printf -v "${var}_cpu" '%s' ""
			return 0
		fi
		if [ "$i" -eq 0 ]; then
			kb=$(tail -n 1 "$scratch/rss")
			continue
		fi
		el=$(awk -v a="${t0/,/.}" -v b="${t1/,/.}" 'BEGIN { printf "%.3f", b - a }')
		cpu=$(awk -v a="$(cpuof "$scratch/times0")" -v b="$(cpuof "$scratch/times1")" 'BEGIN { printf "%.3f", b - a }')
		if [ -z "$best" ] || awk -v a="$el" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$el; fi
		if [ -z "$bestcpu" ] || awk -v a="$cpu" -v b="$bestcpu" 'BEGIN { exit !(a < b) }'; then bestcpu=$cpu; fi
	done
	printf -v "${var}_s" '%s' "$best"
	printf -v "${var}_cpu" '%s' "$bestcpu"
	printf -v "${var}_mb" '%s' "$(awk -v k="$kb" 'BEGIN { printf "%.1f", k / 1024 }')"
}

# row LABEL VAR: one line of the table.
row() {
	local s=${2}_s mb=${2}_mb cpu=${2}_cpu
	if [ -z "${!s}" ]; then
		printf '  %-44s %10s\n' "$1" "failed"
	else
		printf '  %-44s %9ss %8ss %9s MB\n' "$1" "${!s}" "${!cpu:--}" "${!mb}"
	fi
}

# ratio TEXT A B [OP GOAL]: prints TEXT with A/B of wall and of CPU times,
# when both were measured. With OP (">=" or "<=") and GOAL, also whether the
# best wall-time ratio meets the goal.
ratio() {
	local a=${2}_s b=${3}_s ac=${2}_cpu bc=${3}_cpu
	[ -n "${!a}" ] && [ -n "${!b}" ] || return 0
	awk -v a="${!a}" -v b="${!b}" -v ac="${!ac:-0}" -v bc="${!bc:-0}" -v t="$1" -v op="${4:-}" -v goal="${5:-}" 'BEGIN {
		if (b <= 0) exit
		printf "  %-44s %9.2fx", t, a / b
		if (bc > 0) printf " %8.2fx", ac / bc
		else printf " %9s", "-"
		if (op != "") {
			met = (op == ">=") ? (a / b >= goal) : (a / b <= goal)
			printf "   goal %s %gx: %s", op, goal, met ? "met" : "NOT met"
		}
		printf "\n"
	}'
}

skipped() {
	printf '  %-44s skipped: not yet implemented\n' "$1"
}

want() { [[ " $SECTIONS " == *" $1 "* ]]; }

if [ "${FRESH:-0}" = 1 ]; then
	for f in "${files[@]}"; do
		if [ -f "$f" ]; then
			c=$out/.fresh-$(basename "$f")
			fresh+=("$c")
			cp "$f" "$c"
			files+=("$c")
		fi
	done
fi

for f in "${files[@]}"; do
	[ -e "$f" ] || { echo "run.sh: $f: no such file" >&2; exit 1; }
	echo
	echo "== $f ($(du -h "$f" | cut -f1), $("$PERF" --version), best of $RUNS, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
	printf '  %-44s %10s %9s %12s\n' "" "wall" "cpu" "peak RSS"
	measure cat 0 cat "$f"
	row "cat FILE > /dev/null (floor)" cat
	reportran=0

	if want stats; then
		echo "-- stats (goals: perf report --stats / perfcheck stats >= 4x; perfcheck stats / cat <= 3x;"
		echo "   peak RSS independent of the file's size, < 64 MB on 1 GB)"
		measure pstats 0 "$PERF" report --stats -i "$f"
		row "perf report --stats" pstats
		if has stats; then
			measure cstats 0 "$pc" stats "$f"
			row "perfcheck stats" cstats
			ratio "perf report --stats / perfcheck stats" pstats cstats ">=" 4
			ratio "perfcheck stats / cat" cstats cat "<=" 3
			# Could any Go reader meet the 4x here? A program that only
			# reads the file (start-up included) against perf's time:
			# where this goal is not met, no reader can meet it.
			[ -x "$scratch/readfloor" ] ||
				(cd "$repo" && CGO_ENABLED=0 go build -o "$scratch/readfloor" ./bench/readfloor)
			measure floor 0 "$scratch/readfloor" "$f"
			row "Go program that only reads FILE (floor)" floor
			ratio "perf report --stats / that floor" pstats floor ">=" 4
		else
			skipped "perfcheck stats"
		fi
	fi

	if want check || want top || want pprof; then
		measure preport 0 "$PERF" report --stdio -i "$f"
		reportran=1
	fi

	if want check; then
		echo "-- check (goal: faster than perf buildid-list --with-hits)"
		measure phits 0 "$PERF" buildid-list --with-hits -i "$f"
		row "perf buildid-list --with-hits" phits
		row "perf report --stdio" preport
		if has check; then
			measure ccheck '0|1' "$pc" check "$f"
			row "perfcheck check" ccheck
			ratio "perf buildid-list --with-hits / perfcheck" phits ccheck ">=" 1
			ratio "perf report --stdio / perfcheck check" preport ccheck
		else
			skipped "perfcheck check"
		fi
	fi

	if want top; then
		echo "-- top (goal: check + top >= 5x faster than perf report --stdio)"
		[ "$reportran" = 1 ] && row "perf report --stdio" preport
		if has top; then
			measure ctop 0 "$pc" top "$f"
			row "perfcheck top" ctop
			ratio "perf report --stdio / perfcheck top" preport ctop
			if has check && [ -n "${ccheck_s:-}" ] && [ -n "$ctop_s" ]; then
				# shellcheck disable=SC2034 # read by row through ${!name}
				checktop_s=$(awk -v a="$ccheck_s" -v b="$ctop_s" 'BEGIN { printf "%.3f", a + b }')
				# shellcheck disable=SC2034
				checktop_mb=-
				# shellcheck disable=SC2034,SC2154 # set by measure through printf -v
				checktop_cpu=$(awk -v a="$ccheck_cpu" -v b="$ctop_cpu" 'BEGIN { printf "%.2f", a + b }')
				row "perfcheck check + perfcheck top" checktop
				ratio "perf report --stdio / (check + top)" preport checktop ">=" 5
			fi
		else
			skipped "perfcheck top"
		fi
	fi

	if want pprof; then
		echo "-- pprof (no goal: compared with perf report --stdio, and with the check it includes)"
		[ "$reportran" = 1 ] && row "perf report --stdio" preport
		if has pprof; then
			measure cpprof 0 "$pc" pprof -o "$scratch/out.pb.gz" "$f"
			row "perfcheck pprof -o out.pb.gz" cpprof
			ratio "perf report --stdio / perfcheck pprof" preport cpprof
			[ -n "${ccheck_s:-}" ] && ratio "perfcheck pprof / perfcheck check" cpprof ccheck
		else
			skipped "perfcheck pprof"
		fi
	fi
done
