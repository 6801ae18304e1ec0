#!/usr/bin/env bash
# Runs every test of the project on a fresh Debian machine: installs what the
# tests drive for real (perf, the elfutils debuginfod server, addr2line,
# llvm-symbolizer, gcc and its i386/AArch64 cross compilers, libc's debug
# files, chromium for the HTML and SVG outputs, speedscope from npm, man,
# zsh and fish for the man pages and completion scripts) when it is missing, then runs the Go tests, and the race detector
# over the packages that use goroutines.
#
# Three jobs run at once, because the tests spend much of their time waiting
# for perf record, gcc and go build while the other two compile and compute:
#   - the tests of every package but buildidcache, without the race
#     detector;
#   - the race detector (it needs cgo): over buildidcache, all its tests;
#     over check and symbolize in -short mode, where only the tests that
#     record with the real perf or build the standard library for another
#     system are skipped (they ran above; their goroutines are the ones the
#     fixture tests drive); and over perfdata's tests that use goroutines
#     (its allocation proofs are not meaningful under -race, where
#     sync.Pool drops items at random);
#   - vet, and the builds and vets for the other systems and word sizes.
# Each job's output is printed when it ends; the exit status is 1 when any
# job failed.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v perf >/dev/null 2>&1 || need+=(linux-perf)
command -v debuginfod >/dev/null 2>&1 || need+=(debuginfod)
command -v addr2line >/dev/null 2>&1 || need+=(binutils)
command -v llvm-symbolizer >/dev/null 2>&1 || need+=(llvm)
# The demanglers the symbolize tests compare names with.
command -v llvm-cxxfilt >/dev/null 2>&1 || need+=(llvm)
command -v c++filt >/dev/null 2>&1 || need+=(binutils)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v objcopy >/dev/null 2>&1 || need+=(binutils)
# Headless chromium opens the flame graph and the report (cmd/perfcheck),
# and speedscope's page; npm installs speedscope.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v npm >/dev/null 2>&1 || need+=(npm)
# ld.so's and libc's separate debug files: the label and debug-file tests.
[ -d /usr/lib/debug/.build-id ] && dpkg -s libc6-dbg >/dev/null 2>&1 || need+=(libc6-dbg)
# The man pages are rendered with man -l (cmd/perfcheck), the completion
# scripts run in zsh and fish as well as bash.
command -v man >/dev/null 2>&1 || need+=(man-db)
command -v zsh >/dev/null 2>&1 || need+=(zsh)
command -v fish >/dev/null 2>&1 || need+=(fish)
# A bridge in a network namespace of its own makes the bridge tracepoints
# the MAC and hex-dump formats are compared on (cmd/perfcheck).
command -v bridge >/dev/null 2>&1 && command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v unshare >/dev/null 2>&1 || need+=(util-linux)
# Cross compilers: PLT naming and the differential test on i386 and AArch64.
if [ "$(uname -m)" = x86_64 ]; then
	command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
	command -v i686-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-i686-linux-gnu libc6-dev-i386-cross)
fi
if [ ${#need[@]} -gt 0 ]; then
	echo "test.sh: installing ${need[*]}" >&2
	sudo=""
	[ "$(id -u)" -ne 0 ] && sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# speedscope (the npm package), whose importer reads perfcheck script's
# text in TestSpeedscopeImportsEverySample, kept in the user's cache.
speedscope_dir="${XDG_CACHE_HOME:-$HOME/.cache}/perfcheck/npm"
if [ ! -f "$speedscope_dir/node_modules/speedscope/dist/release/index.html" ]; then
	echo "test.sh: installing speedscope with npm into $speedscope_dir" >&2
	npm install --no-audit --no-fund --silent --prefix "$speedscope_dir" speedscope@1.25.0 >/dev/null ||
		echo "test.sh: npm could not install speedscope; its test will skip" >&2
fi
export PERFCHECK_SPEEDSCOPE="$speedscope_dir/node_modules/speedscope"

export CGO_ENABLED=0
# A package that does not compile fails every job: stop here instead.
go build ./...

logs=$(mktemp -d)
# On an interrupt, the jobs still running go too.
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$logs"' EXIT

# static: vet here, then build where int is 32 bits (i686, armv7) and on
# arm64, and vet on the other systems Go targets (Linux is where it runs;
# they only build).
static() {
	go vet ./...
	GOARCH=386 go vet ./...
	GOARCH=arm GOARM=7 go build ./...
	GOARCH=arm64 go build ./...
	GOOS=darwin go vet ./...
	GOOS=windows go vet ./...
}

race() {
	local status=0
	CGO_ENABLED=1 go test -count=1 -race -short -timeout 15m ./symbolize/... ./check/... || status=1
	CGO_ENABLED=1 go test -count=1 -race -timeout 10m ./buildidcache/... || status=1
	CGO_ENABLED=1 go test -count=1 -race -timeout 10m \
		-run '^(TestConcurrentRecords|TestFeaturesConcurrent|TestPrefetchSameRecords)$' ./perfdata || status=1
	return $status
}

(set -e; race) >"$logs/race" 2>&1 &
race_pid=$!
(set -e; static) >"$logs/static" 2>&1 &
static_pid=$!

status=0
# shellcheck disable=SC2046 # one package per word
go test -count=1 -timeout 15m $(go list ./... | grep -v '/buildidcache$') || status=1

# report NAME PID: print a background job's output once it has ended.
report() {
	local rc=0
	wait "$2" || rc=$?
	echo "--- $1 (exit $rc)"
	cat "$logs/$1"
	[ $rc -eq 0 ] || status=1
}
report race $race_pid
report static $static_pid
exit $status
