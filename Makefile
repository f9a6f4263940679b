# Tidegate: the two commands of the README, and a few helpers.
#
#   make run     install what is missing, build, run the example (docs/design.md §8)
#   make test    install what is missing, build, run every test
#   make bench   build, run the benchmarks
#   make deps    install the missing Debian 12 packages (no-op when all are present)
#   make build   configure (once) and build into build/
#   make clean   remove build/
#
# Everything comes from Debian 12's packages; nothing is downloaded at build time.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

BUILD_DIR  := build
BIN        := $(BUILD_DIR)/bin
BUILD_TYPE := RelWithDebInfo
JOBS       := $(shell nproc 2>/dev/null || echo 2)
# Line tables only (-g1): backtraces and perf keep file and line, and a clean
# build takes about a quarter less time than with full debug info (-g).
OPT_FLAGS  := -O2 -g1 -DNDEBUG

# The config `make run` starts the broker with.
EXAMPLE_CONFIG   := deploy/examples/tidegate.yaml
LISTEN           := 127.0.0.1:50051
HTTP_LISTEN      := 127.0.0.1:8080

# Debian 12 packages needed to build and test (docs/design.md §8).
PACKAGES := build-essential cmake ninja-build pkg-config \
            protobuf-compiler libprotobuf-dev libgrpc++-dev protobuf-compiler-grpc \
            libabsl-dev libyaml-cpp-dev libcli11-dev libspdlog-dev \
            libsqlite3-dev sqlite3 libpq-dev postgresql-15 libgtest-dev libgmock-dev libbenchmark-dev \
            nlohmann-json3-dev python3 python3-statsmodels python3-grpcio python3-protobuf slurm-wlm munge \
            tzdata openssl libssl-dev \
            libcpp-httplib-dev prometheus chromium python3-yaml \
            libcurl4-openssl-dev python3-kubernetes

.PHONY: deps build test run bench clean

# ---------------------------------------------------------------- deps
# Ask dpkg first, so this is silent and needs no root when everything is
# installed; otherwise update the package lists once and install the missing
# ones, as root directly or through sudo.
deps:
	@missing=""; \
	for p in $(PACKAGES); do \
	  dpkg -s "$$p" 2>/dev/null | grep '^Status: install ok installed' >/dev/null \
	    || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	echo "Installing missing Debian packages:$$missing"; \
	if [ "$$(id -u)" -eq 0 ]; then sudo=""; \
	elif command -v sudo >/dev/null; then sudo="sudo"; \
	else echo "error: not root and sudo not found; install as root:$$missing" >&2; exit 1; fi; \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get update; \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing

# ---------------------------------------------------------------- build
# Configure only when build/ has no Ninja build yet; after that Ninja re-runs
# CMake by itself whenever a CMakeLists.txt changes. A build/ left by another
# generator is configured afresh.
$(BUILD_DIR)/build.ninja: | deps
	@rm -rf $(BUILD_DIR)/CMakeCache.txt $(BUILD_DIR)/CMakeFiles
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$(OPT_FLAGS)"

build: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j$(JOBS)

# ---------------------------------------------------------------- test
# Every test (unit, scenario, end-to-end) is registered with CTest.
test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j2

# ---------------------------------------------------------------- run
# Starts the broker (tidegated) with the example config and its own ledger
# (--init creates it on the first run), with metrics and the web view on
# $(HTTP_LISTEN).
run: build
	@echo "Starting tidegated on $(LISTEN) with $(EXAMPLE_CONFIG) (ledger: tidegate.db; web view and metrics: http://$(HTTP_LISTEN)/)"
	@exec $(BIN)/tidegated --config $(EXAMPLE_CONFIG) --db tidegate.db --init --listen $(LISTEN) --http-listen $(HTTP_LISTEN)

# ---------------------------------------------------------------- bench
# The core's micro-benchmarks (Google Benchmark), then a replay of the Philly
# trace through the simulator. The README keeps the figures these print.
bench: build
	$(BIN)/bench_core
	$(BIN)/tidegate simulate tests/scenarios/replay/philly.yaml --trace tests/data/philly-pollux.csv -o table

# ---------------------------------------------------------------- clean
clean:
	rm -rf $(BUILD_DIR)
