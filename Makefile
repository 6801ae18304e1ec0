.PHONY: test build bench demo

# The whole test suite; installs perf, debuginfod, binutils and llvm when missing.
test:
	./scripts/test.sh

build:
	CGO_ENABLED=0 go build -o bin/perfcheck ./cmd/perfcheck

bench:
	./bench/run.sh

# The main job on the committed recording testdata/perf/cshared-fp.data.
demo:
	./scripts/demo.sh
