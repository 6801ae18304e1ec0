#!/bin/bash
# record-large.sh — make the large recording the benchmarks run on:
# bench/out/large.data, at least 100 MB of samples with frame-pointer
# callchains 40-120 frames deep through two DSOs (bench/src/deepstack.c
# linked to testdata/perf's libhot.so), recorded with the real perf.
# It is never committed (bench/out/ is ignored).
#
#   ./bench/record-large.sh              # large.data only
#   ./bench/record-large.sh file pipe zstd
#       pipe: large-pipe.data, `perf record -o - > FILE` (pipe mode)
#       zstd: large-zstd.data, `perf record -z` (file mode, zstd records)
#
# Environment: SIZE (perf --max-size of large.data, default 120M), NAME
# (the file variant's name in bench/out, default large.data: e.g.
# SIZE=1G NAME=large-1g.data for the memory figures of bench/README.md),
# PIPE_MS / ZSTD_MS (workload run time of the pipe and zstd variants, default
# 8000 and 20000 ms), RATE (sampling frequency per thread, default 20000 Hz;
# the kernel caps it at kernel.perf_event_max_sample_rate), PERF.
#
# Runs as root (or with kernel.perf_event_paranoid <= 1). Takes ~15-20 s per
# variant on 2 CPUs, two busy threads, plus the time perf needs to finish
# writing. perf runs with -N and HOME set to a scratch directory, so ~/.debug
# is never touched.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/.." && pwd -P)
out=$here/out
PERF=${PERF:-perf}
SIZE=${SIZE:-120M}
PIPE_MS=${PIPE_MS:-8000}
ZSTD_MS=${ZSTD_MS:-20000}
RATE=${RATE:-20000}
NAME=${NAME:-large.data}
case $NAME in */* | "") echo "record-large.sh: NAME is a file name in $out, not a path" >&2; exit 2 ;; esac

command -v "$PERF" >/dev/null || { echo "record-large.sh: perf not found (Debian: apt-get install linux-perf)" >&2; exit 1; }
mkdir -p "$out"
scratch=$(mktemp -d /tmp/perfcheck-bench.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
export HOME=$scratch/home LC_ALL=C
mkdir -p "$HOME"

# The workload: deepstack, linked to the fixtures' libhot.so, which it finds
# through an rpath relative to itself.
lib=$repo/testdata/perf/bin
[ -f "$lib/libhot.so" ] || { echo "record-large.sh: $lib/libhot.so missing (run testdata/perf/record.sh)" >&2; exit 1; }
# shellcheck disable=SC2016 # $ORIGIN is for the dynamic linker
gcc -O1 -g -fno-omit-frame-pointer -Wall -Wl,--build-id=sha1 \
	-I"$repo/testdata/perf/src/cshared" -o "$out/deepstack" "$here/src/deepstack.c" \
	-L"$lib" -lhot -Wl,-rpath,'$ORIGIN/../../testdata/perf/bin' -pthread
work=$out/deepstack

# -m 1024: 4 MB ring buffers, so that 20 kHz of deep callchains are not lost.
common=(-N -e cpu-clock -F "$RATE" -g -m 1024)

variants=("$@")
[ ${#variants[@]} -eq 0 ] && variants=(file)

cd "$out"
for v in "${variants[@]}"; do
	start=$(date +%s.%N)
	case $v in
	file)
		# --max-size stops perf (and the workload) once SIZE is written.
		# perf then SIGTERMs the workload and, having written the
		# file, re-raises the workload's signal on itself (record__sig_exit
		# in tools/perf/builtin-record.c): exit status 143 is success here.
		rm -f "$NAME" "$NAME.old"
		rc=0
		"$PERF" record "${common[@]}" --max-size="$SIZE" -o "$NAME" -- "$work" 600000 2 || rc=$?
		if [ "$rc" -ne 0 ] && [ "$rc" -ne 143 ]; then
			echo "record-large.sh: perf record failed (exit $rc)" >&2
			exit 1
		fi
		f=$NAME
		;;
	pipe)
		rm -f large-pipe.data
		"$PERF" record "${common[@]}" -o - -- "$work" "$PIPE_MS" 2 >large-pipe.data
		f=large-pipe.data
		;;
	zstd)
		rm -f large-zstd.data large-zstd.data.old
		"$PERF" record "${common[@]}" -z -o large-zstd.data -- "$work" "$ZSTD_MS" 2
		f=large-zstd.data
		;;
	*)
		echo "record-large.sh: unknown variant $v (want file, pipe or zstd)" >&2
		exit 2
		;;
	esac
	end=$(date +%s.%N)
	printf 'record-large.sh: %s: %s bytes in %.1f s\n' "$out/$f" "$(stat -c %s "$f")" "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')"
done
