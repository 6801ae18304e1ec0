#!/bin/bash
# record-suite.sh — make the suite of recordings bench/run.sh and
# bench/ab.sh time perfcheck on, each with the real perf, into bench/out/
# (never committed). Each is made only when missing: recording is
# CPU-heavy, so a file is recorded once and kept (delete it to re-record).
#
#   ./bench/record-suite.sh                 # every recording
#   ./bench/record-suite.sh toolchain dwarf # some of them
#
# toolchain       toolchain.data: `perf record -g -e cpu-clock -c 50000` of
#                 `gcc -O2` compiling a generated C file (bench/genc, fixed
#                 seed, ~19,000 lines) while `go build -a` builds the go
#                 command and the compiler with an empty GOCACHE: many
#                 short-lived processes, a few dozen DSOs, Go and C++
#                 stacks, nearly every stack new. At least 300 MB.
# toolchain-pipe  the same in pipe mode (`-o - > toolchain-pipe.data`)
# toolchain-zstd  the same with `-z` (zstd-compressed records)
# shallow         shallow.data: bench/src/shallow.c, two processes two to
#                 four frames deep, `-g -c 20000`, stopped at 520 MB
# deepstack       large.data, made by record-large.sh (deep stacks, few distinct)
# dwarf           dwarf.data: `--call-graph dwarf` of the gcc compile alone
#
# Every recording runs with -N and HOME set to a scratch directory, so
# ~/.debug is never touched. Environment: PERF, SEED (genc's, default 1),
# SHALLOW_SIZE (default 520M).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/.." && pwd -P)
out=$here/out
PERF=${PERF:-perf}
SEED=${SEED:-1}
SHALLOW_SIZE=${SHALLOW_SIZE:-520M}

command -v "$PERF" >/dev/null || { echo "record-suite.sh: perf not found (Debian: apt-get install linux-perf)" >&2; exit 1; }
mkdir -p "$out"
scratch=$(mktemp -d /tmp/perfcheck-suite.XXXXXX)
trap 'chmod -R u+w "$scratch" 2>/dev/null; rm -rf "$scratch"' EXIT
export HOME=$scratch/home LC_ALL=C
mkdir -p "$HOME"

# The C file is written once per suite, in bench/out, so that every
# recording of the compile compiles the same source at the same path.
src=$out/genc-$SEED.c
[ -f "$src" ] || (cd "$repo" && go run ./bench/genc -seed "$SEED" >"$src.tmp" && mv "$src.tmp" "$src")

# toolchain_workload: the compile and the Go build, side by side. The Go
# build gets an empty cache, no network and the local toolchain.
cat >"$scratch/toolchain.sh" <<SCRIPT
#!/bin/sh
rm -rf "$scratch/gocache" "$scratch/gobin"
mkdir -p "$scratch/gobin"
gcc -O2 -c -o "$scratch/genc.o" "$src" &
GOCACHE="$scratch/gocache" GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod \
	go build -a -o "$scratch/gobin/" cmd/go cmd/compile &
wait
SCRIPT
chmod +x "$scratch/toolchain.sh"
tool=(-N -g -e cpu-clock -c 50000 -m 1024)

# done_msg FILE START: how large FILE is and how long it took.
done_msg() {
	printf 'record-suite.sh: %s: %s bytes in %.0f s\n' "$out/$1" "$(stat -L -c %s "$out/$1")" \
		"$(awk -v a="$2" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')"
}

# atleast FILE MB: warns when FILE is smaller than the suite asks.
atleast() {
	local mb=$(($(stat -L -c %s "$out/$1") / 1000000))
	[ "$mb" -ge "$2" ] || echo "record-suite.sh: $1 is $mb MB, under the $2 MB the suite asks (the machine was busy?)" >&2
}

variants=("$@")
[ ${#variants[@]} -eq 0 ] && variants=(toolchain shallow deepstack dwarf toolchain-pipe toolchain-zstd)
cd "$out"
for v in "${variants[@]}"; do
	f=$v.data
	[ "$v" = deepstack ] && f=large.data
	if [ -e "$f" ]; then
		echo "record-suite.sh: $out/$f exists, kept"
		continue
	fi
	start=$(date +%s.%N)
	case $v in
	toolchain)
		"$PERF" record "${tool[@]}" -o "$f.tmp" -- "$scratch/toolchain.sh"
		mv "$f.tmp" "$f"
		atleast "$f" 300
		;;
	toolchain-pipe)
		"$PERF" record "${tool[@]}" -o - -- "$scratch/toolchain.sh" >"$f.tmp"
		mv "$f.tmp" "$f"
		;;
	toolchain-zstd)
		"$PERF" record "${tool[@]}" -z -o "$f.tmp" -- "$scratch/toolchain.sh"
		mv "$f.tmp" "$f"
		;;
	shallow)
		gcc -O1 -g -fno-omit-frame-pointer -Wall -Wl,--build-id=sha1 -o "$out/shallow" "$here/src/shallow.c"
		# --max-size stops perf and the workload: exit 143 is success
		# (see record-large.sh).
		rc=0
		"$PERF" record -N -g -e cpu-clock -c 20000 -m 1024 --max-size="$SHALLOW_SIZE" -o "$f.tmp" -- "$out/shallow" 600000 || rc=$?
		[ "$rc" -eq 0 ] || [ "$rc" -eq 143 ] || { echo "record-suite.sh: perf record failed (exit $rc)" >&2; exit 1; }
		mv "$f.tmp" "$f"
		atleast "$f" 500
		;;
	deepstack)
		"$here/record-large.sh" file
		;;
	dwarf)
		"$PERF" record -N --call-graph dwarf -e cpu-clock -m 1024 -o "$f.tmp" -- gcc -O2 -c -o "$scratch/genc.o" "$src"
		mv "$f.tmp" "$f"
		;;
	*)
		echo "record-suite.sh: unknown recording $v" >&2
		exit 2
		;;
	esac
	done_msg "$f" "$start"
done
