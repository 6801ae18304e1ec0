#!/usr/bin/env bash
# Benchmarks perfcheck symbolize against llvm-symbolizer and addr2line on a
# large binary: the same N addresses (default 100,000), spread uniformly and
# reproducibly (seed 1) over .text, fed to each tool in one batch on stdin.
# It prints, per tool, the time to the first answer (one address, from
# process start), the batch's wall and CPU time, the peak RSS, and the
# ratios against perfcheck, and the peak of anonymous memory (sampled,
# see measure). Targets:
#   compile       the Go toolchain's compiler as shipped (no DWARF: we read
#                 .gopclntab, the others only the symbol table)
#   compile-dwarf the same compiler rebuilt with DWARF (the first run builds
#                 it, a few minutes on 2 cores; later runs hit the cache)
# Usage: bench/symbolize.sh [N]      (needs go, llvm-symbolizer, addr2line, objcopy)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}
work=${TMPDIR:-/tmp}/perfcheck-bench-symbolize
mkdir -p "$work/gen"
export GOTOOLCHAIN=local

CGO_ENABLED=0 go build -o "$work/perfcheck" ./cmd/perfcheck
CGO_ENABLED=0 go build -o "$work/anonpeak" ./bench/anonpeak
compile="$(go env GOROOT)/pkg/tool/$(go env GOOS)_$(go env GOARCH)/compile"
if [ ! -x "$work/compile-dwarf" ]; then
	echo "building cmd/compile with DWARF into $work/compile-dwarf ..." >&2
	CGO_ENABLED=0 go build -o "$work/compile-dwarf" cmd/compile
fi

# A throwaway generator: N addresses uniform over .text, seeded.
cat >"$work/gen/main.go" <<'GO'
package main

import (
	"bufio"
	"debug/elf"
	"fmt"
	"math/rand"
	"os"
	"strconv"
)

func main() {
	ef, err := elf.Open(os.Args[1])
	if err != nil {
		panic(err)
	}
	n, _ := strconv.Atoi(os.Args[2])
	t := ef.Section(".text")
	r := rand.New(rand.NewSource(1))
	w := bufio.NewWriter(os.Stdout)
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, "0x%x\n", t.Addr+uint64(r.Int63n(int64(t.Size))))
	}
	w.Flush()
}
GO
(cd "$work/gen" && [ -f go.mod ] || (cd "$work/gen" && go mod init gen >/dev/null 2>&1))
(cd "$work/gen" && go build -o "$work/genaddrs" .)

# measure INPUT CMD...: prints "wall user+sys maxrss_kb peakanon_kb", from
# bench/anonpeak: the peak of anonymous memory (RssAnon in
# /proc/PID/status: the memory the process adds to the machine, without
# the file pages of its code and of mapped sections) is sampled every
# millisecond while the command runs, so it may miss a shorter peak; the
# peak RSS is the kernel's.
measure() {
	local in=$1
	shift
	"$work/anonpeak" "$@" <"$in" >/dev/null 2>"$work/stderr" || {
		cat "$work/stderr" >&2
		return 1
	}
	# anonpeak: wall W s, cpu C s, maxrss M kB, peak anon P kB, last anon L kB
	tail -1 "$work/stderr" | awk '{printf "%.2f %.2f %s %s\n", $3, $6, $9, $13}'
}

# debugsize FILE: MB of .debug_* sections as stored (compressed if they are).
debugsize() {
	local total=0 size
	for size in $(readelf -SW "$1" | sed -n 's/^ *\[ *[0-9]*\] *\.z\{0,1\}debug_[a-z_]* *[A-Z_]* *[0-9a-f]* *[0-9a-f]* *\([0-9a-f]*\).*/\1/p'); do
		total=$((total + 16#$size))
	done
	awk -v t="$total" 'BEGIN {printf "%.1f", t / 1048576}'
}

# rawdebugsize FILE: MB of .debug_* sections decompressed (objcopy
# --decompress-debug-sections into a scratch copy): the debug info a
# symbolizer must read, printed beside each peak for scale.
rawdebugsize() {
	objcopy --decompress-debug-sections "$1" "$work/decompressed" 2>/dev/null || {
		echo "n/a"
		return
	}
	debugsize "$work/decompressed"
	rm -f "$work/decompressed"
}

for target in "$compile" "$work/compile-dwarf"; do
	"$work/genaddrs" "$target" "$N" >"$work/addrs"
	head -1 "$work/addrs" >"$work/one"
	name=$(basename "$target")
	echo "== $name ($(du -m "$target" | cut -f1) MB, debug sections on disk $(debugsize "$target") MB, decompressed $(rawdebugsize "$target") MB), $N addresses"
	printf "%-16s %12s %10s %10s %10s %10s\n" tool first_s batch_s cpu_s rss_MB anon_MB
	declare -A first batch cpu rss anon
	for tool in perfcheck llvm-symbolizer addr2line; do
		case $tool in
		perfcheck) cmd=("$work/perfcheck" symbolize --inlines -e "$target") ;;
		llvm-symbolizer) cmd=(llvm-symbolizer --inlines --demangle "--obj=$target") ;;
		addr2line) cmd=(addr2line -f -i -C -e "$target") ;;
		esac
		read -r f _ _ _ <<<"$(measure "$work/one" "${cmd[@]}")"
		read -r w c m a <<<"$(measure "$work/addrs" "${cmd[@]}")"
		first[$tool]=$f batch[$tool]=$w cpu[$tool]=$c rss[$tool]=$((m / 1024)) anon[$tool]=$(awk -v a="$a" 'BEGIN {printf "%.1f", a / 1024}')
		printf "%-16s %12s %10s %10s %10s %10s\n" "$tool" "$f" "$w" "$c" "${rss[$tool]}" "${anon[$tool]}"
	done
	# The memory floor: perfcheck with no address at all (open, read the
	# unit table and the symbol table, load the DWARF sections), and the
	# process alone on a binary with nothing to read (the Go runtime and
	# perfcheck's own code pages).
	read -r _ _ m0 a0 <<<"$(measure /dev/null "$work/perfcheck" symbolize --inlines -e "$target")"
	read -r _ _ m1 a1 <<<"$(measure /dev/null "$work/perfcheck" symbolize --inlines -e /bin/true)"
	echo "perfcheck, no address: rss $((m0 / 1024)) MB, anon $((a0 / 1024)) MB (process alone: rss $((m1 / 1024)) MB, anon $((a1 / 1024)) MB)"
	for tool in llvm-symbolizer addr2line; do
		awk -v t="$tool" -v f1="${first[$tool]}" -v f0="${first[perfcheck]}" -v b1="${batch[$tool]}" -v b0="${batch[perfcheck]}" \
			-v c1="${cpu[$tool]}" -v c0="${cpu[perfcheck]}" -v r1="${rss[$tool]}" -v r0="${rss[perfcheck]}" \
			'function ratio(a, b) { return b > 0 ? sprintf("%.2fx", a / b) : "n/a" }
			BEGIN { printf "%s / perfcheck: first answer %s, batch wall %s, batch cpu %s, rss %s\n", t, ratio(f1, f0), ratio(b1, b0), ratio(c1, c0), ratio(r1, r0) }'
	done
	unset first batch cpu rss anon
	echo
done
echo "(ratios above 1 mean perfcheck is faster or smaller; wall times suffer from other load on the machine: compare cpu_s)"
