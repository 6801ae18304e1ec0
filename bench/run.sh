#!/bin/bash
# run.sh — time every perfcheck command against its perf counterpart on
# each recording of the suite (bench/record-suite.sh), the two alternately.
#
#   ./bench/run.sh                      # every recording of the suite in bench/out (made if none)
#   ./bench/run.sh FILE...              # other recordings
#   RUNS=5 ./bench/run.sh               # medians of 5 alternating runs instead of 3
#   SECTIONS="stats check" ./bench/run.sh
#   FRESH=1 ./bench/run.sh              # also on a copy of each file made with cp
#   PERFCHECK=/tmp/pc ./bench/run.sh    # time that binary instead of building one
#   WARM=0 ./bench/run.sh               # no warm-up run before the timed ones
#
# Sections, each perfcheck command against perf's, with the goal the ratio
# is held to (wall time; "perf / perfcheck" unless said):
#   stats    perfcheck stats   vs perf report --stats            >= 1x, and
#            perfcheck stats / bench/readfloor (a Go program that only reads the file) <= 3x;
#            on a perf record -z recording the floor is readfloor -z, which also
#            decompresses the compressed records (both floors are printed)
#   check    perfcheck check   vs perf buildid-list --with-hits  >= 1x, and
#            GOMAXPROCS=1 / GOMAXPROCS=2 of perfcheck check    >= 1.6x; and the
#            floor: bench/readfloor -ordered (the records read in time order)
#   top      perfcheck top     vs perf report --stdio --no-children   >= 5x (50x on
#            a --call-graph dwarf recording)
#   script   perfcheck script  vs perf script                    >= 3x, peak RSS <= perf's
#   pprof    perfcheck pprof   vs perf report --stdio --no-children: peak RSS <= 1/4 of
#            perf's, and <= 1 GB
#
# For each pair, both commands run once under /usr/bin/time first (which
# warms the page cache), then RUNS times alternately, A then B, each under
# /usr/bin/time; the figures are the medians of the alternating runs: wall
# time, CPU time (user + system) and peak RSS. Alternating keeps a change
# in the machine's load from favouring one side; on a loaded machine the
# CPU figures are the steadier ones, but a tool that uses both cores
# spends more CPU than wall time. The load average is printed with each
# file and each section.
#
# How the page cache holds the file matters as much as the tools: a file
# perf record has just written (in small writes) sits in small folios, and
# every reader, cat included, goes about twice as slowly as over a copy
# written in large writes (or read back from disk), which the kernel keeps
# in large folios. FRESH=1 measures each file a second time through such a
# copy (bench/out/.fresh-NAME, removed at the end).
# Output goes to /dev/null; both tools run with HOME set to an empty
# scratch directory, so that neither reads a ~/.debug cache the other
# lacks, and nothing in the user's home is written.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/.." && pwd -P)
out=$here/out
PERF=${PERF:-perf}
RUNS=${RUNS:-3}
SECTIONS=${SECTIONS:-stats check top script pprof}

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
suite=(toolchain.data toolchain-pipe.data toolchain-zstd.data shallow.data large.data dwarf.data)
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
	for f in "${suite[@]}"; do [ -e "$out/$f" ] && files+=("$out/$f"); done
	if [ ${#files[@]} -eq 0 ]; then
		"$here/record-suite.sh"
		for f in "${suite[@]}"; do [ -e "$out/$f" ] && files+=("$out/$f"); done
	fi
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
(cd "$repo" && CGO_ENABLED=0 go build -o "$scratch/readfloor" ./bench/readfloor)

# once FILE CMD...: one run under /usr/bin/time, "wall cpu rss_kb" appended
# to FILE; "failed" instead when the command fails (perfcheck check exits
# 1 when it finds problems, which is not a failure).
once() {
	local log=$1 rc=0
	shift
	/usr/bin/time -f '%e %U %S %M' -o "$scratch/t" "$@" >/dev/null 2>"$scratch/stderr" || rc=$?
	if [ "$rc" -gt 1 ] || { [ "$rc" = 1 ] && [[ " $* " != *" check "* ]]; }; then
		echo "  FAILED (exit $rc): $*" >&2
		sed -n '1,5p' "$scratch/stderr" >&2
		echo failed >>"$log"
		return 0
	fi
	tail -n 1 "$scratch/t" | awk '{ printf "%.3f %.3f %d\n", $1, $2 + $3, $4 }' >>"$log"
}

# median FILE COLUMN: the median of that column of FILE's lines; empty
# when a run failed.
median() {
	grep -q failed "$1" && return 0
	awk -v c="$2" '{ print $c }' "$1" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

# pair A B: runs the commands in arrays A and B once each to warm up, then
# RUNS times alternately, and sets A_s, A_cpu, A_mb (and B's): medians of
# wall and CPU seconds and of peak RSS in MB.
pair() {
	local v
	for v in "$1" "$2"; do : >"$scratch/$v.log"; done
	local -n ca=$1 cb=$2
	if [ "${WARM:-1}" = 1 ]; then
		once "$scratch/warm" "${ca[@]}"
		once "$scratch/warm" "${cb[@]}"
	fi
	for ((i = 0; i < RUNS; i++)); do
		once "$scratch/$1.log" "${ca[@]}"
		once "$scratch/$2.log" "${cb[@]}"
	done
	for v in "$1" "$2"; do
		printf -v "${v}_s" '%s' "$(median "$scratch/$v.log" 1)"
		printf -v "${v}_cpu" '%s' "$(median "$scratch/$v.log" 2)"
		printf -v "${v}_mb" '%s' "$(median "$scratch/$v.log" 3 | awk '$1 != "" { printf "%.1f", $1 / 1024 }')"
	done
}

# row LABEL VAR: one line of the table.
row() {
	local s=${2}_s mb=${2}_mb cpu=${2}_cpu
	if [ -z "${!s:-}" ]; then
		printf '  %-46s %10s\n' "$1" "failed"
	else
		printf '  %-46s %9ss %8ss %9s MB\n' "$1" "${!s}" "${!cpu}" "${!mb}"
	fi
}

# ratio TEXT A B KIND [OP GOAL]: prints TEXT with A/B of wall and CPU time
# (KIND time) or of peak RSS (KIND mem), and, with OP (">=" or "<=") and
# GOAL, whether the ratio (of wall time, or of RSS) meets the goal.
ratio() {
	local a=${2}_s b=${3}_s ac=${2}_cpu bc=${3}_cpu am=${2}_mb bm=${3}_mb
	[ -n "${!a:-}" ] && [ -n "${!b:-}" ] || return 0
	awk -v a="${!a}" -v b="${!b}" -v ac="${!ac}" -v bc="${!bc}" -v am="${!am}" -v bm="${!bm}" \
		-v t="$1" -v kind="$4" -v op="${5:-}" -v goal="${6:-}" 'BEGIN {
		if (kind == "mem") { r = (bm > 0) ? am / bm : 0; printf "  %-46s %9.2fx peak RSS", t, r }
		else {
			r = (b > 0) ? a / b : 0
			printf "  %-46s %9.2fx", t, r
			if (bc > 0) printf " %8.2fx", ac / bc; else printf " %9s", "-"
		}
		if (op != "") {
			met = (op == ">=") ? (r >= goal) : (r <= goal)
			printf "   goal %s %gx: %s", op, goal, met ? "met" : "NOT met"
		}
		printf "\n"
	}'
}

want() { [[ " $SECTIONS " == *" $1 "* ]]; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

if [ "${FRESH:-0}" = 1 ]; then
	for f in "${files[@]}"; do
		c=$out/.fresh-$(basename "$f")
		fresh+=("$c")
		cp "$f" "$c"
		files+=("$c")
	done
fi

for f in "${files[@]}"; do
	[ -e "$f" ] || { echo "run.sh: $f: no such file" >&2; exit 1; }
	echo
	echo "== $f ($(du -hL "$f" | cut -f1), $("$PERF" --version), median of $RUNS alternating runs, $(nproc) CPUs, load $(load))"
	printf '  %-46s %10s %9s %12s\n' "" "wall" "cpu" "peak RSS"
	# A --call-graph dwarf recording has user stack copies: perf unwinds
	# them for report and script, and the top goal is ten times higher.
	topgoal=5
	info=$("$pc" info "$f" 2>/dev/null || true)
	[[ $info == *STACK_USER* ]] && topgoal=50
	zstd=0
	[[ $info == *"compressed:  yes"* ]] && zstd=1

	if want stats; then
		echo "-- stats (load $(load))"
		# shellcheck disable=SC2034 # used through pair's namerefs
		pstats=("$PERF" report --stats -i "$f") cstats=("$pc" stats "$f")
		pair pstats cstats
		row "perf report --stats" pstats
		row "perfcheck stats" cstats
		ratio "perf report --stats / perfcheck stats" pstats cstats time ">=" 1
		# shellcheck disable=SC2034
		floor=("$scratch/readfloor" "$f") cstats2=("$pc" stats "$f")
		pair floor cstats2
		row "Go program that only reads FILE (readfloor)" floor
		if [ "$zstd" = 1 ]; then
			# Every reader of a -z recording decompresses its records:
			# reading and decompressing is the floor the goal holds to.
			ratio "perfcheck stats / readfloor" cstats2 floor time
			# shellcheck disable=SC2034
			zfloor=("$scratch/readfloor" -z "$f") cstats3=("$pc" stats "$f")
			pair zfloor cstats3
			row "... and decompresses it (readfloor -z)" zfloor
			ratio "perfcheck stats / readfloor -z" cstats3 zfloor time "<=" 3
		else
			ratio "perfcheck stats / readfloor" cstats2 floor time "<=" 3
		fi
	fi

	if want check; then
		echo "-- check (load $(load))"
		# shellcheck disable=SC2034
		phits=("$PERF" buildid-list --with-hits -i "$f") ccheck=("$pc" check "$f")
		pair phits ccheck
		row "perf buildid-list --with-hits" phits
		row "perfcheck check" ccheck
		ratio "perf buildid-list --with-hits / perfcheck" phits ccheck time ">=" 1
		# The check's floor: reading the records in time order, nothing else.
		# shellcheck disable=SC2034
		ofloor=("$scratch/readfloor" -ordered "$f")
		pair phits ofloor
		row "Go program that only reads FILE in time order (readfloor -ordered)" ofloor
		ratio "perf buildid-list --with-hits / readfloor -ordered" phits ofloor time ">=" 1
		# shellcheck disable=SC2034
		gmp1=(env GOMAXPROCS=1 "$pc" check "$f") gmp2=(env GOMAXPROCS=2 "$pc" check "$f")
		pair gmp1 gmp2
		row "GOMAXPROCS=1 perfcheck check" gmp1
		row "GOMAXPROCS=2 perfcheck check" gmp2
		ratio "GOMAXPROCS=1 / GOMAXPROCS=2" gmp1 gmp2 time ">=" 1.6
	fi

	if want top || want pprof; then
		# shellcheck disable=SC2034
		preport=("$PERF" report --stdio --no-children -i "$f")
	fi
	if want top; then
		echo "-- top (load $(load))"
		# shellcheck disable=SC2034
		ctop=("$pc" top "$f")
		pair preport ctop
		row "perf report --stdio --no-children" preport
		row "perfcheck top" ctop
		ratio "perf report / perfcheck top" preport ctop time ">=" "$topgoal"
	fi

	if want script; then
		echo "-- script (load $(load))"
		# shellcheck disable=SC2034
		pscript=("$PERF" script -i "$f") cscript=("$pc" script "$f")
		pair pscript cscript
		row "perf script" pscript
		row "perfcheck script" cscript
		ratio "perf script / perfcheck script" pscript cscript time ">=" 3
		ratio "perfcheck script / perf script" cscript pscript mem "<=" 1
	fi

	if want pprof; then
		echo "-- pprof (load $(load))"
		# shellcheck disable=SC2034
		cpprof=("$pc" pprof -o "$scratch/out.pb.gz" "$f")
		if want top; then
			# perf report was just timed against top: time pprof alone.
			: >"$scratch/cpprof.log"
			for ((i = 0; i < RUNS; i++)); do once "$scratch/cpprof.log" "${cpprof[@]}"; done
			cpprof_s=$(median "$scratch/cpprof.log" 1)
			cpprof_cpu=$(median "$scratch/cpprof.log" 2)
			cpprof_mb=$(median "$scratch/cpprof.log" 3 | awk '$1 != "" { printf "%.1f", $1 / 1024 }')
		else
			pair preport cpprof
		fi
		row "perf report --stdio --no-children" preport
		row "perfcheck pprof -o out.pb.gz" cpprof
		ratio "perfcheck pprof / perf report" cpprof preport mem "<=" 0.25
		# shellcheck disable=SC2034
		gb_s=1 gb_cpu=1 gb_mb=1024
		ratio "perfcheck pprof / 1 GB" cpprof gb mem "<=" 1
	fi
done
