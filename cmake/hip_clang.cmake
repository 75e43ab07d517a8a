# cmake/hip_clang.cmake: which compiler builds the AMD code objects, and which targets it can
# build. Included by cmake/gpu.cmake when hipcc was found. Sets
#   _wick_hip_by_clang   targets compiled by clang 19, one command per (module, target), merged
#                        into one offload bundle per module by cmake/hip_bundle.cmake
#   _wick_hip_by_hipcc   targets compiled by hipcc in one command per module (its own bundle)
#   _wick_hip_rtc_only   targets asked for that neither can build: those GPUs compile the
#                        embedded source with hipRTC at first use (kept in the kernel cache)
# WICK_HIP_COMPILER: AUTO (default), clang or hipcc.
#   clang: Debian 12's clang 19 in HIP mode (packages clang-19 lld-19 llvm-19; tools/deps.sh
#     installs them with WICK_DEPS_HIP=1) against the same HIP 5.2 headers and ROCm 5.2 device
#     libraries as Debian's hipcc. Those libraries (ocml, ockl: target-independent bitcode; they
#     implement code object version 5's implicit arguments) lack only, for the targets newer than
#     gfx940/gfx1036, one file each, oclc_isa_version_<N>.bc: a single constant, the ISA version
#     the libraries branch on (major*1000 + minor*100 + stepping). It is made here from one line
#     of LLVM IR, in gen/amdgcn/ beside links to the rest. Code object version 4, as hipcc 5.2
#     makes it: every ROCm from 5.0 on loads it. clang 19 is also 20% faster per target than
#     hipcc 5.2 (clang 15) on these kernels (docs/architecture.md), which is what pays for the
#     RDNA 3/4 and MI300 targets in CI.
#   hipcc: the hipcc found (Debian's 5.2, or a ROCm install's), for the targets whose device
#     library it has (oclc_isa_version_<N>.bc in WICK_HIP_BITCODE_DIR).
#   AUTO: clang when the probe below compiles a kernel for every target, else hipcc.
# LLVM's generic targets (gfx11-generic, gfx12-generic; gfx9-4-generic is LLVM 20) are not used:
# they need code object version 6, which clang 19 itself calls "still in development and not
# ready for production use", and a HIP runtime of ROCm 6.4 or later to load them.
set(WICK_HIP_COMPILER "AUTO" CACHE STRING "AMD code objects: AUTO, clang (clang 19) or hipcc")
find_program(WICK_HIP_CLANG NAMES clang++-19 HINTS /usr/lib/llvm-19/bin
             DOC "clang 19 (HIP mode), for the AMD code objects")
find_program(WICK_HIP_LLVM_AS NAMES llvm-as-19 HINTS /usr/lib/llvm-19/bin)
find_program(WICK_OFFLOAD_BUNDLER NAMES clang-offload-bundler-19 clang-offload-bundler-15
             clang-offload-bundler HINTS /usr/lib/llvm-19/bin /usr/lib/llvm-15/bin
             DOC "clang-offload-bundler, to put the per-target code objects in one bundle")
get_filename_component(_wick_hipcc_dir "${WICK_HIPCC}" DIRECTORY)
find_path(WICK_HIP_BITCODE_DIR ocml.bc HINTS ${_wick_hipcc_dir}/../amdgcn/bitcode
          ${_wick_hipcc_dir}/../lib/x86_64-linux-gnu/amdgcn/bitcode ENV ROCM_PATH /opt/rocm
          /usr/lib/x86_64-linux-gnu/amdgcn/bitcode PATH_SUFFIXES amdgcn/bitcode
          DOC "the ROCm device libraries (ocml.bc, ockl.bc, oclc_*.bc)")

string(TOUPPER "${WICK_HIP_COMPILER}" _wick_hip_compiler)
set(_wick_hip_by_clang "")
set(_wick_hip_by_hipcc "")
set(_wick_hip_rtc_only "")
set(_wick_hipclang_why "")

# ISA version file name part and value of a target ("gfx90a" -> 90a, 9010); empty if not gfxNNN.
function(_wick_isa_version t name_out value_out)
  string(REGEX REPLACE ":.*" "" t "${t}") # target features (gfx90a:xnack+) do not matter here
  if(t MATCHES "^gfx([0-9]+)([0-9a-f])([0-9a-f])$")
    math(EXPR v "${CMAKE_MATCH_1} * 1000 + 0x${CMAKE_MATCH_2} * 100 + 0x${CMAKE_MATCH_3}")
    set(${name_out} "${CMAKE_MATCH_1}${CMAKE_MATCH_2}${CMAKE_MATCH_3}" PARENT_SCOPE)
    set(${value_out} ${v} PARENT_SCOPE)
  else()
    set(${name_out} "" PARENT_SCOPE)
    set(${value_out} "" PARENT_SCOPE)
  endif()
endfunction()

if(NOT _wick_hip_compiler STREQUAL "HIPCC")
  if(NOT WICK_HIP_CLANG OR NOT WICK_HIP_LLVM_AS)
    set(_wick_hipclang_why "clang++-19 / llvm-as-19 not found (Debian: clang-19 lld-19 llvm-19; "
                           "WICK_DEPS_HIP=1 sh tools/deps.sh installs them)")
  elseif(NOT WICK_OFFLOAD_BUNDLER)
    set(_wick_hipclang_why "clang-offload-bundler not found (Debian: clang-tools-15)")
  elseif(NOT WICK_HIP_BITCODE_DIR)
    set(_wick_hipclang_why "the ROCm device libraries (ocml.bc) not found (Debian: rocm-device-libs)")
  endif()
endif()
if(NOT _wick_hip_compiler STREQUAL "HIPCC" AND NOT _wick_hipclang_why)
  # gen/amdgcn: the device libraries, and the ISA constant of each target they lack
  set(_wick_bc ${WICK_GEN_DIR}/amdgcn)
  file(MAKE_DIRECTORY ${_wick_bc})
  file(GLOB _wick_bc_files ${WICK_HIP_BITCODE_DIR}/*.bc)
  foreach(f ${_wick_bc_files})
    get_filename_component(n ${f} NAME)
    file(CREATE_LINK ${f} ${_wick_bc}/${n} SYMBOLIC)
  endforeach()
  execute_process(COMMAND ${WICK_HIP_CLANG} -x c --target=amdgcn-amd-amdhsa -nogpulib -S
                          -emit-llvm -o - -
                  INPUT_FILE /dev/null OUTPUT_VARIABLE _ir ERROR_QUIET)
  string(REGEX MATCH "target datalayout = \"[^\"]*\"" _wick_dl "${_ir}")
  if(NOT _wick_dl)
    set(_wick_hipclang_why "${WICK_HIP_CLANG} did not compile an empty file for amdgcn")
  endif()
  foreach(t ${_wick_hip_all_targets})
    if(_wick_hipclang_why)
      break()
    endif()
    _wick_isa_version(${t} _isa_n _isa_v)
    if(NOT _isa_n)
      set(_wick_hipclang_why "cannot derive the ISA version of ${t} (not gfx<major><minor><stepping>)")
      break()
    endif()
    if(NOT EXISTS ${_wick_bc}/oclc_isa_version_${_isa_n}.bc)
      file(WRITE ${_wick_bc}/oclc_isa_version_${_isa_n}.ll "; ${t}: made by cmake/hip_clang.cmake
${_wick_dl}
target triple = \"amdgcn-amd-amdhsa\"
@__oclc_ISA_version = linkonce_odr protected local_unnamed_addr addrspace(4) constant i32 ${_isa_v}, align 4
")
      execute_process(COMMAND ${WICK_HIP_LLVM_AS} ${_wick_bc}/oclc_isa_version_${_isa_n}.ll
                              -o ${_wick_bc}/oclc_isa_version_${_isa_n}.bc RESULT_VARIABLE _rc)
      if(NOT _rc EQUAL 0)
        set(_wick_hipclang_why "llvm-as-19 failed on oclc_isa_version_${_isa_n}.ll")
        break()
      endif()
    endif()
  endforeach()
  set(_wick_hipclang_flags -x hip -std=c++17 --rocm-path=/usr --rocm-device-lib-path=${_wick_bc}
      -mcode-object-version=4 -mllvm -amdgpu-early-inline-all=true
      -mllvm -amdgpu-function-calls=false --cuda-device-only --no-gpu-bundle-output -O3
      -ffp-contract=off) # the options hipcc 5.2 passes, and wick's
  if(WICK_HIP_INCLUDE_DIR AND NOT WICK_HIP_INCLUDE_DIR STREQUAL "/usr/include")
    list(APPEND _wick_hipclang_flags -isystem ${WICK_HIP_INCLUDE_DIR})
  endif()
  if(NOT _wick_hipclang_why) # the probe: math and a block size, for every target, as the build
    set(_p ${WICK_GEN_DIR}/hip_clang_probe)
    file(WRITE ${_p}.cu "#include <hip/hip_runtime.h>
extern \"C\" __global__ void probe(float *x) { x[threadIdx.x] = expf(x[blockDim.x]); }
")
    foreach(t ${_wick_hip_all_targets})
      execute_process(COMMAND ${WICK_HIP_CLANG} ${_wick_hipclang_flags} --offload-arch=${t}
                              -o ${_p}.co ${_p}.cu
                      RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
      if(NOT _rc EQUAL 0)
        string(REGEX REPLACE "\n.*" "" _out "${_out}")
        set(_wick_hipclang_why "the probe compile for ${t} failed: ${_out}")
        break()
      endif()
    endforeach()
  endif()
endif()

if(NOT _wick_hip_compiler STREQUAL "HIPCC" AND NOT _wick_hipclang_why)
  set(_wick_hip_by_clang ${_wick_hip_all_targets})
  message(STATUS "wick GPU: AMD code objects by clang 19 (${WICK_HIP_CLANG}): "
                 "${_wick_hip_by_clang}")
elseif(_wick_hip_compiler STREQUAL "CLANG")
  message(FATAL_ERROR "WICK_HIP_COMPILER=clang: ${_wick_hipclang_why}")
else()
  foreach(t ${_wick_hip_all_targets})
    _wick_isa_version(${t} _isa_n _isa_v)
    if(NOT WICK_HIP_BITCODE_DIR OR NOT _isa_n OR
       EXISTS ${WICK_HIP_BITCODE_DIR}/oclc_isa_version_${_isa_n}.bc)
      list(APPEND _wick_hip_by_hipcc ${t})
    else()
      list(APPEND _wick_hip_rtc_only ${t})
    endif()
  endforeach()
  if(_wick_hipclang_why)
    set(_wick_hipclang_why " (clang 19: ${_wick_hipclang_why})")
  endif()
  message(STATUS "wick GPU: AMD code objects by hipcc (${WICK_HIPCC}): ${_wick_hip_by_hipcc}"
                 "${_wick_hipclang_why}")
  if(_wick_hip_rtc_only)
    message(STATUS "wick GPU: no ahead-of-time code for ${_wick_hip_rtc_only}: this hipcc has no "
                   "device library for them; those GPUs compile the embedded source with hipRTC "
                   "at first use (kept in the kernel cache)")
  endif()
endif()

# _wick_hipclang_module(mod cu OUT): one command per clang target compiling kernels/<mod>.cu to
# gen/hip/<mod>.<target>.co; OUT gets the list of "<target>=<file>".
function(_wick_hipclang_module mod cu out)
  set(objs "")
  file(MAKE_DIRECTORY ${WICK_GEN_DIR}/hip)
  foreach(t ${_wick_hip_by_clang})
    string(MAKE_C_IDENTIFIER "${t}" tid)
    set(o ${WICK_GEN_DIR}/hip/${mod}.${tid}.co)
    add_custom_command(OUTPUT ${o}
      COMMAND ${WICK_HIP_CLANG} ${_wick_hipclang_flags} --offload-arch=${t} ${_wick_kinc}
              -o ${o} ${cu}
      DEPENDS ${cu} ${WICK_KERNEL_HEADERS} ${CMAKE_CURRENT_FUNCTION_LIST_FILE}
      COMMENT "clang-19 kernels/${mod}.cu -> hip/${mod}.${tid}.co"
      VERBATIM)
    list(APPEND objs "${t}=${o}")
  endforeach()
  set(${out} ${objs} PARENT_SCOPE)
endfunction()
