# cmake/gpu.cmake: the GPU half of the build, included by CMakeLists.txt after wick_obj exists.
#   - finds nvcc and hipcc (WICK_CUDA / WICK_HIP: ON, OFF or AUTO) and the driver headers;
#   - compiles every kernels/<module>.cu with custom commands (no CMake CUDA/HIP language: CMake
#     3.25 cannot find Debian's HIP) into an NVIDIA fatbin (SASS for WICK_CUDA_ARCHS + PTX for
#     newer GPUs; archs share one PTX where the kernels cannot tell them apart) and a clang
#     offload bundle of HSACO (every gfx target of WICK_HIP_TARGETS and WICK_HIP_EXTRA_TARGETS);
#   - embeds them, the kernel sources and headers (for run-time compilation) into wick_obj
#     through generated C files under gen/: one per module (top-level asm .incbin, so they compile
#     in milliseconds and only a changed .cu is rebuilt) and a table (gen/wk_gpu_embed_table.c)
#     that src/gpu/gpu_module.c reads;
#   - sets the per-source flags of src/gpu/cuda.c and src/gpu/hip.c and what
#     tests/test_gpu_runtime.c needs to know.
# libwick never links a GPU library: src/gpu/cuda.c and hip.c dlopen them at run time.

# SASS for sm_80 and sm_90, PTX of compute_90 for newer GPUs. sm_80's code runs on every GPU of
# compute capability 8.x (8.6: RTX 30xx, A10, A40; 8.7; 8.9: RTX 40xx, L4, L40S), as CUDA's
# binary compatibility within a major version guarantees, and the kernels compare __CUDA_ARCH__
# only with 610, 800 and 900 (checked below), so SASS of sm_86 or sm_89 would be the same
# instructions from the same PTX, only scheduled by ptxas for that GPU: two more ptxas runs per
# module, 37% of nvcc's build time (unary.cu: 43 s of CPU against 27 s), for a difference
# nobody here can measure (no such GPU is lent). PyTorch makes the same trade for 8.9 (sm_86's
# code); a build for one of those GPUs adds it: -DWICK_CUDA_ARCHS="80;86;89;90".
set(WICK_CUDA_ARCHS "80;90" CACHE STRING
    "Compute capabilities with SASS in the CUDA fatbin; PTX for the last one's features is added")
# The AMD targets compiled ahead of time: those AMD's own ROCm builds ship code objects for (ROCm
# 5.x/6.x rocBLAS/MIOpen and the PyTorch ROCm wheels) and the families people own today:
#   gfx900 (Vega 10: MI25, Vega 56/64)      gfx906 (Vega 20: MI50/MI60, Radeon VII)
#   gfx908 (CDNA 1: MI100)                  gfx90a (CDNA 2: MI210/MI250/MI250X)
#   gfx942 (CDNA 3: MI300X, MI300A, MI325X)
#   gfx1030 (RDNA 2: RX 6800/6900, PRO W6800/V620)
#   gfx1100 (RDNA 3: RX 7900 XTX/XT/GRE, PRO W7900/W7800)  gfx1101 (RX 7800 XT/7700 XT, W7700)
#   gfx1102 (RX 7600/7600 XT, W7600)        gfx1200 (RDNA 4: RX 9060 XT)  gfx1201 (RX 9070/XT)
# Not gfx940/gfx941 (MI300 pre-production steppings, no product; gfx942 is MI300): hipRTC.
# Debian's clang 19 builds all of them (cmake/hip_clang.cmake); without it Debian's hipcc 5.2
# builds the five its device libraries know (not gfx942, gfx11xx, gfx12xx) and the others run
# the embedded source through hipRTC at first use, kept in the kernel cache (configure says so).
# Every other GPU (RDNA 1, the other RDNA 2 and 3 dies, APUs) runs through hipRTC too; a
# toolchain that knows it adds it with WICK_HIP_EXTRA_TARGETS. Each target costs about 178 s of
# clang 19's CPU time (89 s of a 2-core build) and ~0.5 MB compressed in libwick.so.
set(WICK_HIP_TARGETS "gfx900;gfx906;gfx908;gfx90a;gfx942;gfx1030;gfx1100;gfx1101;gfx1102;gfx1200;gfx1201"
    CACHE STRING "gfx targets of the ahead-of-time HIP code object")
set(WICK_HIP_EXTRA_TARGETS "" CACHE STRING
    "More gfx targets, e.g. gfx1103;gfx1150 (any the AMD compiler in use knows)")

set(WICK_GEN_DIR ${CMAKE_CURRENT_BINARY_DIR}/gen)
file(MAKE_DIRECTORY ${WICK_GEN_DIR})

# ---- toolchains and headers
# AUTO: use it if found; ON (or any true value): required; OFF: never.
function(_wick_gpu_mode var out)
  string(TOUPPER "${${var}}" v)
  if(v STREQUAL "AUTO")
    set(${out} AUTO PARENT_SCOPE)
  elseif(${var})
    set(${out} ON PARENT_SCOPE)
  else()
    set(${out} OFF PARENT_SCOPE)
  endif()
endfunction()
_wick_gpu_mode(WICK_CUDA _wick_cuda_mode)
_wick_gpu_mode(WICK_HIP _wick_hip_mode)

set(WICK_HAVE_NVCC OFF)
set(WICK_HAVE_HIPCC OFF)
if(NOT _wick_cuda_mode STREQUAL "OFF")
  find_program(WICK_NVCC nvcc HINTS ENV CUDA_PATH ENV CUDA_HOME /usr/local/cuda PATH_SUFFIXES bin
               DOC "nvcc, for the CUDA code objects")
  set(_wick_cuda_hints /usr/local/cuda/include)
  if(WICK_NVCC)
    get_filename_component(_d "${WICK_NVCC}" DIRECTORY)
    list(PREPEND _wick_cuda_hints "${_d}/../include")
  endif()
  find_path(WICK_CUDA_INCLUDE_DIR cuda.h HINTS ${_wick_cuda_hints} ENV CUDA_PATH PATH_SUFFIXES include
            DOC "directory of cuda.h (driver API header; build time only)")
  if(WICK_NVCC)
    set(WICK_HAVE_NVCC ON)
  elseif(_wick_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "WICK_CUDA=ON but nvcc was not found (set WICK_NVCC or CUDA_PATH)")
  endif()
  if(_wick_cuda_mode STREQUAL "ON" AND NOT WICK_CUDA_INCLUDE_DIR)
    message(FATAL_ERROR "WICK_CUDA=ON but cuda.h was not found (set WICK_CUDA_INCLUDE_DIR)")
  endif()
endif()
if(NOT _wick_hip_mode STREQUAL "OFF")
  find_program(WICK_HIPCC hipcc HINTS ENV ROCM_PATH ENV HIP_PATH /opt/rocm PATH_SUFFIXES bin
               DOC "hipcc, for the ROCm code objects")
  find_path(WICK_HIP_INCLUDE_DIR hip/hip_runtime_api.h HINTS ENV ROCM_PATH ENV HIP_PATH /opt/rocm
            PATH_SUFFIXES include DOC "directory holding hip/hip_runtime_api.h (build time only)")
  if(WICK_HIPCC)
    set(WICK_HAVE_HIPCC ON)
  elseif(_wick_hip_mode STREQUAL "ON")
    message(FATAL_ERROR "WICK_HIP=ON but hipcc was not found (set WICK_HIPCC or ROCM_PATH)")
  endif()
  if(_wick_hip_mode STREQUAL "ON" AND NOT WICK_HIP_INCLUDE_DIR)
    message(FATAL_ERROR "WICK_HIP=ON but hip/hip_runtime_api.h was not found (set WICK_HIP_INCLUDE_DIR)")
  endif()
endif()

# The drivers: compiled always; without their header they report "built without ... headers".
set(_wick_cuda_c ${CMAKE_CURRENT_SOURCE_DIR}/src/gpu/cuda.c)
set(_wick_hip_c ${CMAKE_CURRENT_SOURCE_DIR}/src/gpu/hip.c)
if(NOT _wick_cuda_mode STREQUAL "OFF" AND WICK_CUDA_INCLUDE_DIR)
  set_property(SOURCE ${_wick_cuda_c} APPEND PROPERTY COMPILE_DEFINITIONS WK_HAVE_CUDA_H=1)
  set_property(SOURCE ${_wick_cuda_c} APPEND PROPERTY COMPILE_OPTIONS -isystem ${WICK_CUDA_INCLUDE_DIR})
endif()
if(NOT _wick_hip_mode STREQUAL "OFF" AND WICK_HIP_INCLUDE_DIR)
  set_property(SOURCE ${_wick_hip_c} APPEND PROPERTY COMPILE_DEFINITIONS WK_HAVE_HIP_H=1 __HIP_PLATFORM_AMD__)
  if(NOT WICK_HIP_INCLUDE_DIR STREQUAL "/usr/include")
    set_property(SOURCE ${_wick_hip_c} APPEND PROPERTY COMPILE_OPTIONS -isystem ${WICK_HIP_INCLUDE_DIR})
  endif()
endif()

# ---- kernels
file(GLOB WICK_KERNEL_SRC CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.cu)
file(GLOB WICK_KERNEL_HDR CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.h)
list(SORT WICK_KERNEL_SRC)
list(SORT WICK_KERNEL_HDR)
# Headers the kernels include by name (kernels/<x>.h and fpconv.h): build dependencies, and
# embedded for run-time compilation.
set(WICK_KERNEL_HEADERS ${WICK_KERNEL_HDR} ${CMAKE_CURRENT_SOURCE_DIR}/src/core/fpconv.h
    ${CMAKE_CURRENT_SOURCE_DIR}/src/core/philox.h)

set(_wick_kinc -I${CMAKE_CURRENT_SOURCE_DIR}/kernels -I${CMAKE_CURRENT_SOURCE_DIR}/src/core)
# The code objects are embedded zstd-compressed (-19) where zstd is at hand, and inflated by
# src/gpu/gpu_blob.c at their module's first load: required with the AMD toolchain (a bundle of
# every gfx target compresses about tenfold), used for the NVIDIA fatbins whenever found (zstd
# makes them 38% smaller than nvcc's own -compress-all: 26 MB -> ~16 MB for the whole set, which
# keeps libwick.so under tests/install_test.sh's 40 MB). Without zstd a CUDA-only build keeps
# -compress-all (the driver inflates those entries itself).
set(WICK_GPU_ZSTD OFF)
if(WICK_HAVE_HIPCC)
  wick_find_zstd() # cmake/deps.cmake: required
  set(WICK_GPU_ZSTD ON)
elseif(WICK_HAVE_NVCC)
  find_program(WICK_ZSTD zstd DOC "zstd, to compress the embedded code objects")
  find_path(WICK_ZSTD_INCLUDE_DIR zstd.h)
  find_library(WICK_ZSTD_LIBRARY zstd)
  if(WICK_ZSTD AND WICK_ZSTD_INCLUDE_DIR AND WICK_ZSTD_LIBRARY)
    set(WICK_GPU_ZSTD ON)
  endif()
endif()
if(WICK_GPU_ZSTD)
  target_compile_definitions(wick_obj PRIVATE WK_HAVE_ZSTD=1)
  target_include_directories(wick_obj PRIVATE ${WICK_ZSTD_INCLUDE_DIR})
  set(WICK_ZSTD_LINK ${WICK_ZSTD_LIBRARY}) # linked into wick and wick_static by CMakeLists.txt
endif()
set(_wick_nvcc_flags -fatbin -std=c++17 -O3 -fmad=false)
if(NOT WICK_GPU_ZSTD)
  list(APPEND _wick_nvcc_flags -Xfatbin=-compress-all) # SASS entries compressed too (8x smaller)
endif()
# The SASS of each arch is assembled from the PTX of a "feature arch": the largest value that
# the kernels compare __CUDA_ARCH__ with (>=) that is <= the arch, or the arch itself where none
# is. One front-end pass (cicc, about 60% of nvcc's time per arch) then serves several archs
# (with WICK_CUDA_ARCHS "80;86;89;90": 80 for 80, 86 and 89): the PTX of compute_86 or
# compute_89 differs from compute_80's only in its .target line, and ptxas makes the same SASS
# of either. The list is checked against the
# kernels' sources here, so a new `__CUDA_ARCH__ >= N` cannot be silently compiled from an older
# PTX: configuring fails until N is added.
set(_wick_cuda_feature_archs 610 800 900)
file(GLOB _wick_kfiles ${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.cu ${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.h)
foreach(f ${_wick_kfiles})
  file(STRINGS ${f} _lines REGEX "__CUDA_ARCH__ *[<>=!]=? *[0-9]+")
  foreach(l ${_lines})
    string(REGEX MATCHALL "__CUDA_ARCH__ *[<>=!]=? *[0-9]+" _cmps "${l}")
    foreach(c ${_cmps})
      string(REGEX REPLACE ".*[^0-9]([0-9]+)$" "\\1" v "${c}")
      if(NOT c MATCHES ">= *[0-9]+$" OR NOT v IN_LIST _wick_cuda_feature_archs)
        message(FATAL_ERROR "${f}: `${c}`: cmake/gpu.cmake compiles SASS from shared PTX and "
          "knows only `__CUDA_ARCH__ >= N` for N in ${_wick_cuda_feature_archs}: add it there")
      endif()
    endforeach()
  endforeach()
endforeach()
set(_wick_ptx_of "") # the feature arch of each of WICK_CUDA_ARCHS, in order
foreach(a ${WICK_CUDA_ARCHS})
  set(v ${a})
  foreach(f ${_wick_cuda_feature_archs})
    math(EXPR f2 "${f} / 10")
    if(f2 LESS_EQUAL a)
      set(v ${f2})
    endif()
  endforeach()
  list(APPEND _wick_ptx_of ${v})
endforeach()
list(GET _wick_ptx_of -1 _wick_ptx) # the PTX embedded for newer GPUs (the driver's JIT)
set(_wick_ptx_set ${_wick_ptx_of})
list(REMOVE_DUPLICATES _wick_ptx_set)
foreach(v ${_wick_ptx_set})
  set(codes "")
  list(LENGTH WICK_CUDA_ARCHS _n)
  math(EXPR _last "${_n} - 1")
  foreach(i RANGE ${_last})
    list(GET WICK_CUDA_ARCHS ${i} a)
    list(GET _wick_ptx_of ${i} av)
    if(av EQUAL v)
      list(APPEND codes sm_${a})
    endif()
  endforeach()
  if(v EQUAL _wick_ptx)
    list(APPEND codes compute_${v})
  endif()
  string(REPLACE ";" "," codes "${codes}")
  list(APPEND _wick_nvcc_flags -gencode arch=compute_${v},code=[${codes}])
endforeach()
set(_wick_hip_flags --genco -O3 -ffp-contract=off -std=c++17)
set(_wick_hip_all_targets ${WICK_HIP_TARGETS} ${WICK_HIP_EXTRA_TARGETS})
list(REMOVE_DUPLICATES _wick_hip_all_targets)
set(_wick_hip_by_clang "")
set(_wick_hip_by_hipcc "")
if(WICK_HAVE_HIPCC)
  include(${CMAKE_CURRENT_LIST_DIR}/hip_clang.cmake) # who compiles which target
endif()
foreach(t ${_wick_hip_by_hipcc})
  list(APPEND _wick_hip_flags --offload-arch=${t})
endforeach()
set(_wick_hip_bundle_targets ${_wick_hip_by_clang} ${_wick_hip_by_hipcc}) # in the bundles
set(_wick_have_hip_objs OFF)
if(_wick_hip_bundle_targets)
  set(_wick_have_hip_objs ON)
endif()
find_program(WICK_LLVM_READELF NAMES llvm-readelf-19 llvm-readelf-15 llvm-readelf
             HINTS /usr/lib/llvm-19/bin /usr/lib/llvm-15/bin DOC "llvm-readelf (tests/hip_bundle_check.sh)")

# Writes a generated file only when its content changes (keeps builds incremental).
function(_wick_write_if_changed path content)
  if(EXISTS ${path})
    file(READ ${path} old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE ${path} "${content}")
endfunction()

# Assembler lines (inside a C string) that embed `file` as the hidden symbols sym .. sym_end,
# followed by a NUL byte (so embedded text is a C string).
function(_wick_incbin out sym file)
  set(${out} "${${out}}    \"  .balign 64\\n  .globl ${sym}\\n  .hidden ${sym}\\n${sym}:\\n\"
    \"  .incbin \\\"${file}\\\"\\n  .globl ${sym}_end\\n  .hidden ${sym}_end\\n${sym}_end:\\n  .byte 0\\n\"
" PARENT_SCOPE)
endfunction()

set(_wick_gen_head "/* Generated by cmake/gpu.cmake; do not edit. */\n")
set(_wick_table_decl "")
set(_wick_table_rows "")
set(_wick_blobs "")
set(_wick_nmod 0)
foreach(cu ${WICK_KERNEL_SRC})
  get_filename_component(mod ${cu} NAME_WE)
  string(MAKE_C_IDENTIFIER "${mod}" id)
  set(sym wk_gpu_blob_${id})
  set(asm "")
  set(deps ${cu})
  set(cuda_ref "NULL, NULL")
  set(hip_ref "NULL, NULL")
  set(hip_packed 0)
  set(cuda_packed 0)
  if(WICK_HAVE_NVCC)
    set(raw ${WICK_GEN_DIR}/${mod}.fatbin)
    set(out ${raw})
    set(pack "")
    if(WICK_GPU_ZSTD)
      set(out ${raw}.zst)
      set(pack COMMAND ${WICK_ZSTD} -q -f -19 -o ${out} ${raw})
      set(cuda_packed 1)
    endif()
    get_filename_component(_n ${out} NAME)
    add_custom_command(OUTPUT ${out}
      COMMAND ${WICK_NVCC} ${_wick_nvcc_flags} ${_wick_kinc} -o ${raw} ${cu}
      ${pack}
      DEPENDS ${cu} ${WICK_KERNEL_HEADERS} ${CMAKE_CURRENT_LIST_FILE}
      COMMENT "nvcc kernels/${mod}.cu -> ${_n} (sm ${WICK_CUDA_ARCHS} + PTX ${_wick_ptx})"
      VERBATIM)
    _wick_incbin(asm ${sym}_cuda ${out})
    list(APPEND deps ${out})
    list(APPEND _wick_blobs ${out})
    string(APPEND _wick_table_decl "extern const unsigned char ${sym}_cuda[], ${sym}_cuda_end[];\n")
    set(cuda_ref "${sym}_cuda, ${sym}_cuda_end")
  endif()
  if(_wick_hip_bundle_targets)
    set(raw ${WICK_GEN_DIR}/${mod}.hsaco)
    set(out ${WICK_GEN_DIR}/${mod}.hsaco.zst)
    if(_wick_hip_by_clang) # one command per target, then one bundle
      _wick_hipclang_module(${mod} ${cu} objs)
      set(objfiles ${objs})
      list(TRANSFORM objfiles REPLACE "^[^=]*=" "")
      add_custom_command(OUTPUT ${out}
        COMMAND ${CMAKE_COMMAND} -DBUNDLER=${WICK_OFFLOAD_BUNDLER} "-DOBJS=${objs}" -DOUT=${raw}
                -P ${CMAKE_CURRENT_LIST_DIR}/hip_bundle.cmake
        COMMAND ${WICK_ZSTD} -q -f -19 -o ${out} ${raw}
        DEPENDS ${objfiles} ${CMAKE_CURRENT_LIST_DIR}/hip_bundle.cmake
        COMMENT "bundle ${mod}.hsaco.zst (${_wick_hip_by_clang})"
        VERBATIM)
    else()
      add_custom_command(OUTPUT ${out}
        COMMAND ${WICK_HIPCC} ${_wick_hip_flags} ${_wick_kinc} -o ${raw} ${cu}
        COMMAND ${WICK_ZSTD} -q -f -19 -o ${out} ${raw}
        DEPENDS ${cu} ${WICK_KERNEL_HEADERS} ${CMAKE_CURRENT_LIST_FILE}
        COMMENT "hipcc kernels/${mod}.cu -> ${mod}.hsaco.zst (${_wick_hip_by_hipcc})"
        VERBATIM)
    endif()
    _wick_incbin(asm ${sym}_hip ${out})
    list(APPEND deps ${out})
    list(APPEND _wick_blobs ${out})
    string(APPEND _wick_table_decl "extern const unsigned char ${sym}_hip[], ${sym}_hip_end[];\n")
    set(hip_ref "${sym}_hip, ${sym}_hip_end")
    set(hip_packed 1)
  endif()
  _wick_incbin(asm ${sym}_src ${cu})
  string(APPEND _wick_table_decl "extern const unsigned char ${sym}_src[], ${sym}_src_end[];\n")
  string(APPEND _wick_table_rows "    {\"${mod}\", ${cuda_ref}, ${hip_ref}, (const char *)${sym}_src, ${cuda_packed}, ${hip_packed}},\n")
  set(c ${WICK_GEN_DIR}/wk_gpu_embed_${id}.c)
  _wick_write_if_changed(${c} "${_wick_gen_head}/* kernels/${mod}.cu: code objects and source. */
__asm__(\"  .pushsection .rodata\\n\"
${asm}    \"  .popsection\\n\");
")
  set_source_files_properties(${c} PROPERTIES GENERATED TRUE OBJECT_DEPENDS "${deps}")
  target_sources(wick_obj PRIVATE ${c})
  math(EXPR _wick_nmod "${_wick_nmod} + 1")
endforeach()

# Kernel headers, embedded for run-time compilation (looked up by file name).
set(asm "")
set(_wick_hdr_rows "")
set(_wick_nhdr 0)
foreach(h ${WICK_KERNEL_HEADERS})
  get_filename_component(hname ${h} NAME)
  string(MAKE_C_IDENTIFIER "${hname}" id)
  _wick_incbin(asm wk_gpu_hdr_${id} ${h})
  string(APPEND _wick_table_decl "extern const unsigned char wk_gpu_hdr_${id}[], wk_gpu_hdr_${id}_end[];\n")
  string(APPEND _wick_hdr_rows "    {\"${hname}\", (const char *)wk_gpu_hdr_${id}},\n")
  math(EXPR _wick_nhdr "${_wick_nhdr} + 1")
endforeach()
set(c ${WICK_GEN_DIR}/wk_gpu_embed_headers.c)
_wick_write_if_changed(${c} "${_wick_gen_head}/* Kernel headers, for run-time compilation. */
__asm__(\"  .pushsection .rodata\\n\"
${asm}    \"  .popsection\\n\");
")
set_source_files_properties(${c} PROPERTIES GENERATED TRUE OBJECT_DEPENDS "${WICK_KERNEL_HEADERS}")
target_sources(wick_obj PRIVATE ${c})

# The table src/gpu/gpu_module.c reads, with what the code objects hold (wk_device_code_source).
set(_wick_table_sass "")
set(_wick_table_ptx 0)
set(_wick_table_hip "")
if(WICK_HAVE_NVCC)
  string(REPLACE ";" "," _wick_table_sass "${WICK_CUDA_ARCHS}")
  set(_wick_table_ptx ${_wick_ptx})
endif()
if(_wick_hip_bundle_targets)
  string(REGEX REPLACE ":[^;]*" "" _wick_table_hip "${_wick_hip_bundle_targets}") # no features
  string(REPLACE ";" "," _wick_table_hip "${_wick_table_hip}")
endif()
if(_wick_nmod EQUAL 0)
  set(_wick_table_rows "    {NULL, NULL, NULL, NULL, NULL, NULL, 0, 0}, /* no kernel modules in this build */\n")
endif()
set(c ${WICK_GEN_DIR}/wk_gpu_embed_table.c)
_wick_write_if_changed(${c} "${_wick_gen_head}/* The embedded GPU modules: one row per kernels/<module>.cu. */
#include \"gpu/gpu_driver.h\"
#include <stddef.h>

${_wick_table_decl}
const wk_gpu_embedded wk_gpu_embedded_modules[] = {
${_wick_table_rows}};
const int wk_gpu_embedded_module_count = ${_wick_nmod};

const wk_gpu_embedded_header wk_gpu_embedded_headers[] = {
${_wick_hdr_rows}};
const int wk_gpu_embedded_header_count = ${_wick_nhdr};

const char wk_gpu_embedded_cuda_sass[] = \"${_wick_table_sass}\";
const int wk_gpu_embedded_cuda_ptx = ${_wick_table_ptx};
const char wk_gpu_embedded_hip_targets[] = \"${_wick_table_hip}\";
")
target_sources(wick_obj PRIVATE ${c})

# The code objects are sources of wick_obj (not compiled by the C compiler): their custom
# commands run inside its build, next to the C files, and each embed file waits for its own.
target_sources(wick_obj PRIVATE ${_wick_blobs})

# ---- tests/test_gpu_runtime.c: where libwick.so is, what was built, which targets to expect.
string(REPLACE ";" "," _wick_cuda_list "${WICK_CUDA_ARCHS}")
string(REPLACE ";" "," _wick_hip_list "${_wick_hip_bundle_targets}")
set(_wick_test_c ${CMAKE_CURRENT_SOURCE_DIR}/tests/test_gpu_runtime.c)
set_property(SOURCE ${_wick_test_c} APPEND PROPERTY COMPILE_DEFINITIONS
  "WICK_TEST_SHARED_LIB=\"$<TARGET_FILE:wick>\""
  "WICK_TEST_NVCC=$<BOOL:${WICK_HAVE_NVCC}>"
  "WICK_TEST_HIPCC=$<BOOL:${_wick_have_hip_objs}>"
  "WICK_TEST_CUDA_ARCHS=\"${_wick_cuda_list}\""
  "WICK_TEST_CUDA_PTX=${_wick_ptx}"
  "WICK_TEST_HIP_TARGETS=\"${_wick_hip_list}\"")
# The test reads libwick.so, which CMakeLists.txt defines after this file: add the dependency
# once the directory is processed.
# In the sanitizer build the run-time compilation of every kernel source (NVRTC twice, hipRTC:
# the vendors' compilers, several minutes of CI, checked by the plain build) is skipped.
function(_wick_gpu_test_deps)
  if(TARGET test_gpu_runtime AND TARGET wick)
    add_dependencies(test_gpu_runtime wick)
  endif()
  # the AMD bundles: every expected target, every kernel of the source in each
  if(_wick_have_hip_objs AND WICK_OFFLOAD_BUNDLER AND WICK_LLVM_READELF)
    find_program(WICK_HOST_CXX NAMES c++ g++ clang++ DOC "host C++ preprocessor (hip_bundle_check)")
    add_test(NAME hip_bundle_check COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tests/hip_bundle_check.sh
             ${CMAKE_CURRENT_SOURCE_DIR} ${WICK_GEN_DIR} ${WICK_OFFLOAD_BUNDLER}
             ${WICK_LLVM_READELF} "${_wick_hip_list}" "${WICK_HOST_CXX}")
  endif()
  if(WICK_SANITIZE)
    set_property(TEST test_gpu_runtime APPEND PROPERTY ENVIRONMENT "WICK_TEST_NO_RTC=1")
    set_property(TEST test_rtc_cache APPEND PROPERTY ENVIRONMENT "WICK_TEST_NO_RTC=1")
  endif()
endfunction()
cmake_language(DEFER CALL _wick_gpu_test_deps)

message(STATUS "wick GPU: nvcc ${WICK_HAVE_NVCC} (${WICK_NVCC}), cuda.h ${WICK_CUDA_INCLUDE_DIR}; "
               "hipcc ${WICK_HAVE_HIPCC} (${WICK_HIPCC}), hip headers ${WICK_HIP_INCLUDE_DIR}; "
               "${_wick_nmod} kernel module(s)")
