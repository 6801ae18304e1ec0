#!/bin/bash
# record.sh — rebuild the fixture programs and re-record every perf.data
# fixture in testdata/perf/ with the real `perf` (perf 6.1 when this was
# written; run as root, or with kernel.perf_event_paranoid <= 1).
#
#   ./testdata/perf/record.sh            # everything
#   ./testdata/perf/record.sh goprog     # only the named fixtures (without .data)
#
# What it writes, next to this script:
#   bin/                  the profiled programs (committed, so that tests can
#                         symbolize and verify build-ids against them)
#   NAME                  the recordings, NAME = *.data (threads.data is a
#                         directory)
#   NAME.stats            stdout of `perf report --stats -i NAME`
#   NAME.buildid-list     stdout of `perf buildid-list -i NAME`
#   perf-version          `perf --version` of the perf that recorded them
#
# docs/fixtures.md lists each file, the exact command and what it covers.
#
# RE-RUNNING CHANGES EVERYTHING AT ONCE: every recording gets new
# timestamps, pids, sample counts and addresses. The binaries are built
# reproducibly (the same gcc and Go give the same bytes, wherever the
# checkout is), but another compiler or Go version gives new build-ids.
# Every golden file derived from these fixtures (the .stats and .buildid-list written here, and the goldens
# that tests in perfdata/, check/, cmd/perfcheck/ ... keep, regenerated with
# `go test ./... -update`) must be regenerated and committed together with
# the new recordings and binaries.
#
# Not made here: truncated files, zero data size, corrupt records and
# big-endian copies. The reader's tests build those in test code from these
# real recordings.
#
# Paths: perf stores the absolute path of every binary it saw. The programs
# are run from this checkout's absolute path (it was /work/main when the
# committed fixtures were recorded, so the files name
# /work/main/testdata/perf/bin/...). Tests must not assume the checkout is
# still there; they map that prefix to their own testdata/perf/bin.
#
# The user's build-id cache is never touched: every `perf record` runs with
# -N (--no-buildid-cache) and HOME points to a scratch directory, so neither
# ~/.debug nor ~/.perfconfig is read or written.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../.." && pwd -P)
bin=$here/bin
src=$here/src

PERF=${PERF:-perf}
command -v "$PERF" >/dev/null || { echo "record.sh: perf not found (Debian: apt-get install linux-perf)" >&2; exit 1; }
command -v gcc >/dev/null || { echo "record.sh: gcc not found" >&2; exit 1; }
command -v go >/dev/null || { echo "record.sh: go not found" >&2; exit 1; }

scratch=$(mktemp -d /tmp/perfcheck-record.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
orig_home=${HOME:-}
export HOME=$scratch/home
mkdir -p "$HOME"
# Untranslated, stable perf output.
export LC_ALL=C

# --- build ------------------------------------------------------------------

# -fdebug-prefix-map keeps the checkout's location out of the DWARF, so the
# same sources and compiler give the same bytes (and build-id) anywhere.
# shellcheck disable=SC2054,SC2191 # commas and = belong to the flags
CFLAGS=(-O1 -g -fno-omit-frame-pointer -fdebug-prefix-map="$repo"=. -Wall -Wl,--build-id=sha1)

build() {
	mkdir -p "$bin"
	# The compile directory goes into DW_AT_comp_dir: build from the
	# checkout's root so that it, too, maps to ".".
	cd "$repo"
	gcc "${CFLAGS[@]}" -fPIC -shared -o "$bin/libhot.so" "$src/cshared/libhot.c"
	# rpath $ORIGIN: cshared finds libhot.so next to itself, wherever the
	# checkout is.
	# shellcheck disable=SC2016 # $ORIGIN is for the dynamic linker
	gcc "${CFLAGS[@]}" -I"$src/cshared" -o "$bin/cshared" "$src/cshared/main.c" \
		-L"$bin" -lhot -Wl,-rpath,'$ORIGIN' -pthread
	gcc "${CFLAGS[@]}" -o "$bin/forkparent" "$src/forkexec/parent.c"
	gcc "${CFLAGS[@]}" -o "$bin/forkchild" "$src/forkexec/child.c"
	# -trimpath and -buildvcs=false make the Go binary reproducible (Go
	# derives its GNU build-id from the Go build ID since Go 1.24).
	# The user's HOME for go only: its build cache, not perf's ~/.debug.
	(cd "$src/goprog" && HOME=$orig_home CGO_ENABLED=0 GOFLAGS='' go build -trimpath -buildvcs=false -o "$bin/goprog" .)
}

# --- record -----------------------------------------------------------------

# Sample rates are low and runs short so that everything committed stays
# at a few MB.
P=(-N)   # never write the build-id cache

want() { # NAME: is this fixture selected?
	[ ${#only[@]} -eq 0 ] && return 0
	local o
	for o in "${only[@]}"; do [ "$o" = "$1" ] && return 0; done
	return 1
}

rec_all() {
	cd "$here"
	local c=$bin/cshared

	# C program + our shared library, frame-pointer callchains.
	want cshared-fp && "$PERF" record "${P[@]}" -e cpu-clock -F 999 -g -o cshared-fp.data -- "$c" 300 >/dev/null
	# Same with DWARF unwinding data (user regs + 4 KB of stack per sample).
	want cshared-dwarf && "$PERF" record "${P[@]}" -e cpu-clock -F 199 --call-graph dwarf,4096 -o cshared-dwarf.data -- "$c" 300 >/dev/null
	# Pipe mode, the default event (this VM has no PMU, so perf falls back
	# from cycles:ppp to cpu-clock:ppp).
	want pipe && "$PERF" record "${P[@]}" -F 999 -g -o - -- "$c" 200 >pipe.data
	# zstd-compressed records, file mode and pipe mode.
	want zstd && "$PERF" record "${P[@]}" -e cpu-clock -F 999 -g -z -o zstd.data -- "$c" 200 >/dev/null
	want zstd-pipe && "$PERF" record "${P[@]}" -e cpu-clock -F 999 -g -z -o - -- "$c" 200 >zstd-pipe.data
	# Build-ids in MMAP2 records (no header build-id table then).
	want buildid-mmap && "$PERF" record "${P[@]}" -e cpu-clock -F 999 -g --buildid-mmap -o buildid-mmap.data -- "$c" 200 >/dev/null
	# Two events, no callchains.
	want twoevents && "$PERF" record "${P[@]}" -e cpu-clock -e page-faults -F 999 -o twoevents.data -- "$c" 200 >/dev/null
	# A parent that forks; the child execs forkchild; both busy.
	want forkexec && "$PERF" record "${P[@]}" -e cpu-clock -F 999 -g -o forkexec.data -- "$bin/forkparent" 200 >/dev/null
	# A Go program.
	want goprog && "$PERF" record "${P[@]}" -e cpu-clock -F 999 -g -o goprog.data -- "$bin/goprog" 300 >/dev/null
	# The directory form: --threads writes threads.data/data plus data.N.
	want threads && "$PERF" record "${P[@]}" --threads -e cpu-clock -F 499 -g -o threads.data -- "$c" 200 2 >/dev/null
	true
}

# Some perf versions rename an existing output to NAME.old; start clean.
clean_outputs() {
	local f
	for f in "$here"/*.data; do
		[ -e "$f" ] || continue
		want "$(basename "$f" .data)" && rm -rf "$f" "$f.old"
	done
	true
}

expected() {
	cd "$here"
	local f name
	for f in *.data; do
		name=${f%.data}
		want "$name" || continue
		# stdout only, exactly as perf prints it. perf 6.1 cannot read
		# some files it wrote itself (zstd-pipe.data: "Couldn't decompress
		# data"); the .stats is then what it printed before failing, and
		# its stderr goes to the terminal.
		"$PERF" report --stats -i "$f" >"$f.stats" 2>"$scratch/stats.err" ||
			echo "record.sh: perf report --stats -i $f failed: $(cat "$scratch/stats.err")" >&2
		if grep -q . "$scratch/stats.err"; then
			echo "record.sh: perf report --stats -i $f said: $(cat "$scratch/stats.err")" >&2
		fi
		"$PERF" buildid-list -i "$f" >"$f.buildid-list" 2>"$scratch/bl.err" ||
			echo "record.sh: perf buildid-list -i $f failed: $(cat "$scratch/bl.err")" >&2
	done
}

only=("$@")
build
clean_outputs
rec_all
expected
"$PERF" --version >"$here/perf-version"
cd "$here"
du -ch -- *.data bin | tail -n 1
