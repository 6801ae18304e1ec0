.PHONY: test build bench demo

# The whole test suite; installs perf, debuginfod, binutils and llvm when missing.
test:
	./scripts/test.sh

build:
	CGO_ENABLED=0 go build -o bin/perfcheck ./cmd/perfcheck

bench:
	./bench/run.sh
