# wick: top-level entry points (CMake underneath).
#   make                  build everything (library, `wick` command, tests, GPU code objects if the
#                         toolchains are present)
#   make run              build, then `wick check` on the default device (the parity matrix)
#   make test             build, then the whole test suite through ctest
#   make install PREFIX=/usr/local
#   make asan             build and test under AddressSanitizer + UndefinedBehaviorSanitizer
# Missing Debian build dependencies are installed first when run as root (tools/deps.sh; with
# WICK_DEPS_HIP=1 the AMD toolchain too), and the tests' PyPI packages into BUILD/venv
# (tools/pydeps.sh, tools/requirements-test.txt).
BUILD   ?= build
PREFIX  ?= /usr/local
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

VENV     = $(abspath $(BUILD))/venv
PYFLAGS  = -DPython3_EXECUTABLE=$(VENV)/bin/python

.PHONY: all deps pydeps configure run test install asan clean

all: configure
	cmake --build $(BUILD) -j$(JOBS)

deps:
	@sh tools/deps.sh

# The Python environment of the tests (numpy, pytest, safetensors, tokenizers, gguf): BUILD/venv.
pydeps: deps
	@sh tools/pydeps.sh $(VENV)

configure: deps pydeps
	@test -f $(BUILD)/CMakeCache.txt || cmake -S . -B $(BUILD) $(PYFLAGS) $(CMAKE_FLAGS)

run: all
	$(BUILD)/wick check

test: all
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

install: all
	cmake --install $(BUILD) --prefix $(PREFIX)

asan: deps pydeps
	@test -f $(BUILD)-asan/CMakeCache.txt || cmake -S . -B $(BUILD)-asan -DWICK_SANITIZE=ON -DWICK_CUDA=OFF -DWICK_HIP=OFF $(PYFLAGS) $(CMAKE_FLAGS)
	cmake --build $(BUILD)-asan -j$(JOBS)
	ctest --test-dir $(BUILD)-asan --output-on-failure -j$(JOBS)

clean:
	rm -rf $(BUILD) $(BUILD)-asan
