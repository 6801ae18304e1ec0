#!/usr/bin/env bash
# Runs every test of the project on a fresh Debian machine: installs what the
# tests drive for real (perf, the elfutils debuginfod server, addr2line,
# llvm-symbolizer, gcc and its i386/AArch64 cross compilers, libc's debug
# files) when it is missing, then runs the Go tests, with the race
# detector on the packages that use goroutines.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v perf >/dev/null 2>&1 || need+=(linux-perf)
command -v debuginfod >/dev/null 2>&1 || need+=(debuginfod)
command -v addr2line >/dev/null 2>&1 || need+=(binutils)
command -v llvm-symbolizer >/dev/null 2>&1 || need+=(llvm)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v objcopy >/dev/null 2>&1 || need+=(binutils)
# ld.so's and libc's separate debug files: the label and debug-file tests.
[ -d /usr/lib/debug/.build-id ] && dpkg -s libc6-dbg >/dev/null 2>&1 || need+=(libc6-dbg)
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

export CGO_ENABLED=0
go build ./...
go vet ./...
# It must also build where int is 32 bits (i686, armv7) and vet on the
# other systems Go targets (Linux is where it runs; they only build).
GOARCH=386 go build ./...
GOARCH=arm GOARM=7 go build ./...
GOARCH=arm64 go build ./...
GOOS=darwin go vet ./...
GOOS=windows go vet ./...
# The race detector needs cgo; it runs on the packages with goroutines.
race_pkgs=$(go list ./... | grep -E '/(buildidcache|symbolize|check)($|/)' || true)
plain_pkgs=$(go list ./... | grep -vE '/(buildidcache|symbolize|check)($|/)' || true)
status=0
if [ -n "$plain_pkgs" ]; then
	go test -count=1 -timeout 15m $plain_pkgs || status=1
fi
# perfdata runs without the race detector (its allocation proofs are not
# meaningful under -race, where sync.Pool drops items at random), and its
# tests that use goroutines run again under -race.
CGO_ENABLED=1 go test -count=1 -race -timeout 10m \
	-run '^(TestConcurrentRecords|TestFeaturesConcurrent|TestPrefetchSameRecords)$' ./perfdata || status=1
if [ -n "$race_pkgs" ]; then
	CGO_ENABLED=1 go test -count=1 -race -timeout 15m $race_pkgs || status=1
fi
exit $status
