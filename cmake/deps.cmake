# cmake/deps.cmake: every system library the build needs, found in one place and one way.
# Read twice: by CMakeLists.txt, where a missing library stops the configure with the Debian
# package that provides it, and by the probe project cmake/probe (run by tools/deps.sh), which
# only collects those package names. So the installer decides what is missing by what CMake
# itself finds, never by a header path that another package may also provide (Debian's reference
# libblas-dev installs a cblas.h too).
#
# Sets: WICK_BLAS_LIBRARIES, WICK_CBLAS_INCLUDE_DIR (OpenBLAS), WICK_JANSSON_LIBRARY,
# WICK_JANSSON_INCLUDE_DIR (jansson), WICK_SLEEF_LIBRARY and WICK_SLEEF_INCLUDE_DIR (SLEEF, the CPU
# backend's vector math), WICK_PCRE2_LIBRARY and WICK_PCRE2_INCLUDE_DIR (PCRE2, the pre-tokenizer
# regexes of the llama example's tokenizer), and the targets OpenMP::OpenMP_C and Threads::Threads.
include(CheckCSourceCompiles)

# In probe mode (WICK_DEPS_PROBE) a missing dependency is recorded in WICK_DEPS_MISSING (Debian
# package names); otherwise it is fatal.
function(wick_dep_missing pkg what)
  if(WICK_DEPS_PROBE)
    set(WICK_DEPS_MISSING ${WICK_DEPS_MISSING} ${pkg} PARENT_SCOPE)
    message(STATUS "wick deps: missing ${what} (Debian: ${pkg})")
  else()
    message(FATAL_ERROR "wick needs ${what}: on Debian, `apt-get install ${pkg}` "
                        "(or run `make`, which installs it as root)")
  endif()
endfunction()

# ---- OpenMP (the CPU backend's threads; gcc's libgomp, clang's libomp)
find_package(OpenMP QUIET COMPONENTS C)
if(NOT OpenMP_C_FOUND)
  if(CMAKE_C_COMPILER_ID STREQUAL "Clang")
    wick_dep_missing(libomp-dev "OpenMP for ${CMAKE_C_COMPILER}")
  else()
    wick_dep_missing(libgomp1 "OpenMP for ${CMAKE_C_COMPILER}")
  endif()
endif()
find_package(Threads REQUIRED)

# ---- OpenBLAS: the library, and the cblas.h that sits beside its openblas_config.h (the
# reference cblas.h of libblas-dev lacks OpenBLAS's blasint), proven by linking cblas_sgemm.
set(BLA_VENDOR OpenBLAS)
find_package(BLAS QUIET)
find_path(WICK_CBLAS_INCLUDE_DIR openblas_config.h
          PATH_SUFFIXES openblas-pthread openblas-openmp openblas-serial openblas
          DOC "directory of OpenBLAS's cblas.h and openblas_config.h")
set(_wick_blas_ok OFF)
if(BLAS_FOUND AND WICK_CBLAS_INCLUDE_DIR AND EXISTS "${WICK_CBLAS_INCLUDE_DIR}/cblas.h")
  set(CMAKE_REQUIRED_INCLUDES ${WICK_CBLAS_INCLUDE_DIR})
  set(CMAKE_REQUIRED_LIBRARIES ${BLAS_LIBRARIES})
  set(CMAKE_REQUIRED_QUIET ON)
  check_c_source_compiles("#include <cblas.h>
int main(void) { float a = 1, b = 1, c = 0; blasint n = 1;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1);
  return c == 1.0f ? 0 : 1; }" WICK_OPENBLAS_LINKS)
  unset(CMAKE_REQUIRED_INCLUDES)
  unset(CMAKE_REQUIRED_LIBRARIES)
  unset(CMAKE_REQUIRED_QUIET)
  if(WICK_OPENBLAS_LINKS)
    set(_wick_blas_ok ON)
  endif()
endif()
if(_wick_blas_ok)
  set(WICK_BLAS_LIBRARIES ${BLAS_LIBRARIES})
else()
  unset(WICK_OPENBLAS_LINKS CACHE) # probe again next time (after the package is installed)
  wick_dep_missing(libopenblas-dev "OpenBLAS (libopenblas and its cblas.h)")
endif()

# ---- jansson: the JSON parser of the safetensors header (src/io/safetensors.c), proven by linking
# json_loadb.
find_path(WICK_JANSSON_INCLUDE_DIR jansson.h DOC "directory of jansson.h")
find_library(WICK_JANSSON_LIBRARY jansson DOC "the jansson library")
set(_wick_jansson_ok OFF)
if(WICK_JANSSON_INCLUDE_DIR AND WICK_JANSSON_LIBRARY)
  set(CMAKE_REQUIRED_INCLUDES ${WICK_JANSSON_INCLUDE_DIR})
  set(CMAKE_REQUIRED_LIBRARIES ${WICK_JANSSON_LIBRARY})
  set(CMAKE_REQUIRED_QUIET ON)
  check_c_source_compiles("#include <jansson.h>
int main(void) { json_error_t e; json_t *j = json_loadb(\"{}\", 2, JSON_REJECT_DUPLICATES, &e);
  int ok = json_is_object(j); json_decref(j); return ok ? 0 : 1; }" WICK_JANSSON_LINKS)
  unset(CMAKE_REQUIRED_INCLUDES)
  unset(CMAKE_REQUIRED_LIBRARIES)
  unset(CMAKE_REQUIRED_QUIET)
  if(WICK_JANSSON_LINKS)
    set(_wick_jansson_ok ON)
  endif()
endif()
if(NOT _wick_jansson_ok)
  unset(WICK_JANSSON_LINKS CACHE)
  wick_dep_missing(libjansson-dev "jansson (the safetensors header parser)")
endif()

# ---- zstd: the AMD code objects are embedded compressed (cmake/gpu.cmake runs the `zstd` command
# at build time; src/gpu/gpu_blob.c links libzstd to inflate them). Needed with the AMD toolchain
# only. Sets WICK_ZSTD (the command), WICK_ZSTD_LIBRARY and WICK_ZSTD_INCLUDE_DIR.
macro(wick_find_zstd)
  find_program(WICK_ZSTD zstd DOC "zstd, to compress the embedded AMD code objects")
  find_path(WICK_ZSTD_INCLUDE_DIR zstd.h)
  find_library(WICK_ZSTD_LIBRARY zstd)
  if(NOT WICK_ZSTD)
    wick_dep_missing(zstd "the zstd command (compresses the AMD code objects)")
  endif()
  if(NOT WICK_ZSTD_INCLUDE_DIR OR NOT WICK_ZSTD_LIBRARY)
    wick_dep_missing(libzstd-dev "libzstd (inflates the AMD code objects at their first load)")
  endif()
endmacro()

# ---- SLEEF: vectorised libm (exp, log, tanh, erf, pow, sin, cos with documented ulp bounds) for
# the CPU backend's elementwise math (src/cpu/cpu_vmath*.c), proven by linking Sleef_expf_u10.
find_path(WICK_SLEEF_INCLUDE_DIR sleef.h DOC "directory of SLEEF's sleef.h")
find_library(WICK_SLEEF_LIBRARY sleef DOC "SLEEF's library")
set(_wick_sleef_ok OFF)
if(WICK_SLEEF_INCLUDE_DIR AND WICK_SLEEF_LIBRARY)
  set(CMAKE_REQUIRED_INCLUDES ${WICK_SLEEF_INCLUDE_DIR})
  set(CMAKE_REQUIRED_LIBRARIES ${WICK_SLEEF_LIBRARY} m)
  set(CMAKE_REQUIRED_QUIET ON)
  check_c_source_compiles("#include <sleef.h>
int main(void) { return Sleef_expf_u10(0.0f) == 1.0f ? 0 : 1; }" WICK_SLEEF_LINKS)
  unset(CMAKE_REQUIRED_INCLUDES)
  unset(CMAKE_REQUIRED_LIBRARIES)
  unset(CMAKE_REQUIRED_QUIET)
  if(WICK_SLEEF_LINKS)
    set(_wick_sleef_ok ON)
  endif()
endif()
if(NOT _wick_sleef_ok)
  unset(WICK_SLEEF_LINKS CACHE) # probe again next time (after the package is installed)
  wick_dep_missing(libsleef-dev "SLEEF (libsleef and sleef.h)")
endif()

# ---- PCRE2 (8-bit): the pre-tokenizer regexes of the llama example's byte-level BPE tokenizer
# (examples/tokenizer_pre.c; not linked into the library), proven by linking a program that
# compiles a pattern with \p{L} and \s in UTF mode with Unicode properties and matches it.
find_path(WICK_PCRE2_INCLUDE_DIR pcre2.h DOC "directory of PCRE2's pcre2.h")
find_library(WICK_PCRE2_LIBRARY pcre2-8 DOC "PCRE2's 8-bit library")
set(_wick_pcre2_ok OFF)
if(WICK_PCRE2_INCLUDE_DIR AND WICK_PCRE2_LIBRARY)
  set(CMAKE_REQUIRED_INCLUDES ${WICK_PCRE2_INCLUDE_DIR})
  set(CMAKE_REQUIRED_LIBRARIES ${WICK_PCRE2_LIBRARY})
  set(CMAKE_REQUIRED_QUIET ON)
  # (no backslashes in the source: CheckCSourceCompiles evaluates it once more; 92 is '\\')
  check_c_source_compiles([=[#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
int main(void) { int e; PCRE2_SIZE o;
  const unsigned char s[] = {0xc3, 0xa9, 0xe3, 0x80, 0x80}; /* e-acute, ideographic space */
  const char p[] = {'^', 92, 'p', '{', 'L', '}', 92, 's', '$', 0};
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)p, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                                 &e, &o, NULL);
  if (!re) return 1;
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
  int rc = pcre2_match(re, s, sizeof s, 0, 0, md, NULL);
  pcre2_match_data_free(md); pcre2_code_free(re); return rc == 1 ? 0 : 1; }]=] WICK_PCRE2_LINKS)
  unset(CMAKE_REQUIRED_INCLUDES)
  unset(CMAKE_REQUIRED_LIBRARIES)
  unset(CMAKE_REQUIRED_QUIET)
  if(WICK_PCRE2_LINKS)
    set(_wick_pcre2_ok ON)
  endif()
endif()
if(NOT _wick_pcre2_ok)
  unset(WICK_PCRE2_LINKS CACHE) # probe again next time (after the package is installed)
  wick_dep_missing(libpcre2-dev "PCRE2 (libpcre2-8 and pcre2.h, with Unicode support)")
endif()

# ---- the AMD toolchain, only when asked for (WICK_DEPS_HIP): hipcc, the HIP runtime headers
# (host code of src/gpu/hip.c) and the device libraries, proven by compiling a kernel for one
# target the way cmake/gpu.cmake does.
if(WICK_DEPS_HIP)
  find_program(WICK_HIPCC hipcc HINTS ENV ROCM_PATH ENV HIP_PATH /opt/rocm PATH_SUFFIXES bin)
  find_path(WICK_HIP_INCLUDE_DIR hip/hip_runtime_api.h HINTS ENV ROCM_PATH ENV HIP_PATH /opt/rocm
            PATH_SUFFIXES include)
  if(NOT WICK_HIPCC)
    wick_dep_missing(hipcc "hipcc (the AMD code objects)")
  endif()
  if(NOT WICK_HIP_INCLUDE_DIR)
    wick_dep_missing(libamdhip64-dev "the HIP runtime headers")
  endif()
  if(WICK_HIPCC)
    set(_k ${CMAKE_CURRENT_BINARY_DIR}/wick_hip_probe.cu)
    file(WRITE ${_k} "#include <hip/hip_runtime.h>\nextern \"C\" __global__ void k(float *p) { p[threadIdx.x] = __expf(1.0f); }\n")
    execute_process(COMMAND ${WICK_HIPCC} --genco --offload-arch=gfx90a -O1 -o ${_k}.hsaco ${_k}
                    RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
    if(NOT _rc EQUAL 0)
      wick_dep_missing(rocm-device-libs "the ROCm device libraries (hipcc cannot build a kernel)")
    endif()
  endif()
  # clang 19 (HIP mode) builds every AMD target, RDNA 3/4 and MI300 included, which hipcc 5.2
  # cannot (cmake/hip_clang.cmake): its driver, its linker (lld) and llvm-as
  find_program(WICK_HIP_CLANG NAMES clang++-19 HINTS /usr/lib/llvm-19/bin)
  if(NOT WICK_HIP_CLANG)
    wick_dep_missing(clang-19 "clang 19 (the AMD code objects of gfx942, gfx11xx, gfx12xx)")
  endif()
  if(NOT EXISTS /usr/lib/llvm-19/bin/ld.lld AND NOT EXISTS /usr/bin/ld.lld-19)
    wick_dep_missing(lld-19 "lld 19 (clang 19 links the AMD code objects with it)")
  endif()
  find_program(WICK_HIP_LLVM_AS NAMES llvm-as-19 HINTS /usr/lib/llvm-19/bin)
  if(NOT WICK_HIP_LLVM_AS)
    wick_dep_missing(llvm-19 "llvm-as 19 (the device library constants of the newer targets)")
  endif()
  wick_find_zstd()
endif()
