#!/usr/bin/env bash
# guard.sh OUTDIR: save what perfcheck prints for every committed recording
# and every file of ../shared/corpus, so that a refactoring can be compared
# with `diff -r OLD NEW`. Each command's stdout, stderr and exit status go in
# OUTDIR/<file>/<command>. Lookups use an empty build-id cache and no
# debuginfod, so the outputs depend only on the tree and this machine.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: guard.sh OUTDIR}
mkdir -p "$out"
bin=$(mktemp -d)/perfcheck
CGO_ENABLED=0 go build -o "$bin" ./cmd/perfcheck || exit 2
cache=$(mktemp -d)
unset DEBUGINFOD_URLS PERF_BUILDID_DIR
files=(testdata/perf/*.data)
if [ -d ../shared/corpus ]; then
	while IFS= read -r f; do files+=("$f"); done < <(
		find ../shared/corpus -type f ! -path '*/perf-6.1/*' \
			! -name '*.md' ! -name 'LICENSE*' ! -name '*.buildids' ! -name '*.txt' | sort)
fi
run() { # run NAME ARGS...: one command's output into $dir/NAME
	local name=$1; shift
	"$@" >"$dir/$name" 2>"$dir/$name.err"
	echo "exit $?" >>"$dir/$name.err"
	sed -i "s#$cache#CACHE#g; s#$bin#PERFCHECK#g" "$dir/$name" "$dir/$name.err"
}
for f in "${files[@]}"; do
	name=${f#../shared/}; dir=$out/${name//\//_}
	mkdir -p "$dir"
	lookup=(--buildid-dir "$cache")
	run check "$bin" check --json "${lookup[@]}" "$f"
	run script "$bin" script --json "${lookup[@]}" "$f"
	run top "$bin" top --json -n 0 "${lookup[@]}" "$f"
	run stats "$bin" stats "$f"
	run buildids "$bin" buildids "$f"
	if "$bin" pprof "${lookup[@]}" -o "$dir/profile.pb.gz" "$f" 2>"$dir/pprof.err"; then
		go tool pprof -raw "$dir/profile.pb.gz" >"$dir/pprof-raw" 2>&1
	fi
	rm -f "$dir/profile.pb.gz"
	sed -i "s#$cache#CACHE#g; s#$bin#PERFCHECK#g" "$dir/pprof.err" "$dir/pprof-raw" 2>/dev/null
done
rm -rf "$cache" "$(dirname "$bin")"
echo "guard: $(ls "$out" | wc -l) recordings in $out"
