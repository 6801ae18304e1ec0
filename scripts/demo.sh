#!/usr/bin/env bash
# The main job on a recording committed in the repository.
#
# testdata/perf/cshared-fp.data was recorded (testdata/perf/record.sh) with
# its programs at /work/main/testdata/perf/bin; on any other checkout or
# machine nothing is at those paths any more — exactly the situation
# perfcheck is for. A deploy pipeline would have kept the binaries that ran
# with `perfcheck cache add` (or `perf buildid-cache -a`); this script does
# that step into a scratch build-id cache, then checks the recording against
# it. Expect cshared and libhot.so to be verified through the cache, and, on
# a machine running another kernel than the one that recorded, the kernel to
# be a mismatch: its 2 samples stay unnamed, and the exit status is 1.
set -u
cd "$(dirname "$0")/.."
cache=$(mktemp -d "${TMPDIR:-/tmp}/perfcheck-demo.XXXXXX")
trap 'rm -rf "$cache"' EXIT
go run ./cmd/perfcheck cache add --buildid-dir "$cache" testdata/perf/bin/cshared testdata/perf/bin/libhot.so >/dev/null || exit 2
go run ./cmd/perfcheck --buildid-dir "$cache" testdata/perf/cshared-fp.data
status=$?
echo "(perfcheck exited with status $status: 0 = every DSO the samples touch can be trusted, 1 = some cannot, 2 = error)"
exit 0
