# wick: top-level entry points (CMake underneath).
#   make                  build everything (library, `wick` command, tests, GPU code objects if the
#                         toolchains are present)
#   make run              build, then `wick check` on the default device (the parity matrix)
#   make test             build, then the whole test suite through ctest
#   make install PREFIX=/usr/local
#   make asan             build and test under AddressSanitizer + UndefinedBehaviorSanitizer
#                         (LeakSanitizer included: every test must free what it takes)
#   make tsan             build (clang, CPU backend) and test under ThreadSanitizer
#   make fuzz             build the libFuzzer harnesses (clang) and fuzz each for FUZZ_SECONDS
#                         (tests/fuzz/README.md)
# Missing Debian build dependencies are installed first when run as root (tools/deps.sh; with
# WICK_DEPS_HIP=1 the AMD toolchain too), and the tests' PyPI packages into BUILD/venv
# (tools/pydeps.sh, tools/requirements-test.txt).
BUILD   ?= build
FUZZ_SECONDS ?= 60
# left out of `make tsan`: the parity matrix (too slow instrumented; its ops are the KAT tests'
# and it runs in `make asan` and `make test`), the GPU kernel compile test (no CPU code) and the
# tests that load the library into Python or cargo (an instrumented library needs its runtime first)
TSAN_SKIP ?= test_parity|wick_check_cpu|test_gpu_runtime|python_pytest|torch_diff|rust_
PREFIX  ?= /usr/local
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

# The suite runs JOBS tests at once, each with OpenMP's threads: the cores are oversubscribed,
# and libgomp's default (spin at every barrier before sleeping) then burns the time slices the
# other tests need (a decode test ran 30x slower on a loaded 2-core machine). Tests check
# results, not speed: their threads sleep at barriers. Benchmarks keep OpenMP's default.
TEST_ENV = OMP_WAIT_POLICY=passive

VENV     = $(abspath $(BUILD))/venv
PYFLAGS  = -DPython3_EXECUTABLE=$(VENV)/bin/python

.PHONY: all deps pydeps configure run test install asan tsan fuzz clean

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
	$(TEST_ENV) ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

install: all
	cmake --install $(BUILD) --prefix $(PREFIX)

asan: deps pydeps
	@test -f $(BUILD)-asan/CMakeCache.txt || cmake -S . -B $(BUILD)-asan -DWICK_SANITIZE=ON -DWICK_CUDA=OFF -DWICK_HIP=OFF $(PYFLAGS) $(CMAKE_FLAGS)
	cmake --build $(BUILD)-asan -j$(JOBS)
	$(TEST_ENV) ctest --test-dir $(BUILD)-asan --output-on-failure -j$(JOBS)

# clang + libomp + Archer (Debian: clang, libomp-14-dev); its own build directory
tsan:
	@WICK_DEPS_CLANG=1 sh tools/deps.sh
	@test -f $(BUILD)-tsan/CMakeCache.txt || CC=clang cmake -S . -B $(BUILD)-tsan -DWICK_TSAN=ON \
		-DWICK_CUDA=OFF -DWICK_HIP=OFF -DWICK_SIMT=OFF $(CMAKE_FLAGS)
	cmake --build $(BUILD)-tsan -j$(JOBS)
	$(TEST_ENV) ctest --test-dir $(BUILD)-tsan --output-on-failure -j$(JOBS) -E '$(TSAN_SKIP)'

# clang + libFuzzer (Debian: clang, libclang-rt-14-dev, libomp-14-dev); its own build directory
fuzz:
	@WICK_DEPS_CLANG=1 sh tools/deps.sh
	@test -f $(BUILD)-fuzz/CMakeCache.txt || CC=clang cmake -S . -B $(BUILD)-fuzz -DWICK_FUZZ=ON \
		-DWICK_SANITIZE=ON -DWICK_CUDA=OFF -DWICK_HIP=OFF -DWICK_SIMT=OFF $(CMAKE_FLAGS)
	cmake --build $(BUILD)-fuzz -j$(JOBS) --target wick_fuzzers
	sh tests/fuzz/run.sh $(BUILD)-fuzz $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan $(BUILD)-fuzz
