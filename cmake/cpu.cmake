# cmake/cpu.cmake: the CPU backend's vector math (src/cpu/cpu_vmath*.c) through SLEEF, found by
# cmake/deps.cmake. On x86-64 the AVX-512F and AVX2 kernels are compiled with their ISA flags (only
# those files; the library stays baseline x86-64) and cpu_vmath.c / cpu_conv.c pick at run time.
target_include_directories(wick_obj PRIVATE ${WICK_SLEEF_INCLUDE_DIR})
foreach(t wick wick_static)
  target_link_libraries(${t} PRIVATE ${WICK_SLEEF_LIBRARY})
endforeach()
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
  set_source_files_properties(src/cpu/cpu_vmath_avx512.c PROPERTIES COMPILE_OPTIONS "-mavx512f")
  set_source_files_properties(src/cpu/cpu_vmath_avx2.c PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma")
  set_source_files_properties(src/cpu/cpu_vmath.c PROPERTIES COMPILE_DEFINITIONS "WK_VMATH_X86=1")
  # The f32 conv micro-kernel likewise: cpu_conv.c calls it when the CPU has AVX-512F.
  set_source_files_properties(src/cpu/cpu_conv_avx512.c src/cpu/cpu_conv_avx512_direct.c
                              PROPERTIES COMPILE_OPTIONS "-mavx512f;-O3")
  set_source_files_properties(src/cpu/cpu_attn_avx512.c PROPERTIES COMPILE_OPTIONS
                              "-mavx512f;-mavx512bw;-mavx512vl;-O3")
  set_source_files_properties(src/cpu/cpu_conv.c PROPERTIES COMPILE_DEFINITIONS "WK_CONV_X86=1")
  include(CheckCCompilerFlag)
  # the quantized dot products of decode (src/cpu/cpu_qdot.c picks one at run time)
  set_source_files_properties(src/cpu/cpu_qdot_avx2.c src/cpu/cpu_fdot_avx2.c PROPERTIES
                              COMPILE_OPTIONS "-mavx2;-mf16c;-mfma;-O3")
  set_source_files_properties(src/cpu/cpu_fdot_avx512.c PROPERTIES COMPILE_OPTIONS
                              "-mavx512f;-mavx512bw;-mavx512vl;-O3")
  # the product of many rows with F16/BF16 weights on AVX-512F FMAs (CPUs without AMX-BF16)
  set_source_files_properties(src/cpu/cpu_fgemm_avx512.c PROPERTIES COMPILE_OPTIONS
                              "-mavx512f;-mavx512bw;-mavx512vl;-mf16c;-O3")
  check_c_compiler_flag(-mavx512vnni WICK_CC_AVX512VNNI)
  if(WICK_CC_AVX512VNNI)
    set_source_files_properties(src/cpu/cpu_qdot_avx512.c src/cpu/cpu_qgemm_vnni.c PROPERTIES
                                COMPILE_OPTIONS "-mavx512f;-mavx512bw;-mavx512vl;-mavx512vnni;-mf16c;-O3")
  endif()
  # the quantized product of many rows on the AMX tile units (cpu_qdot.c calls it only on a CPU
  # with AMX-INT8 whose kernel granted the tile data)
  check_c_compiler_flag(-mamx-int8 WICK_CC_AMXINT8)
  if(WICK_CC_AMXINT8)
    set_source_files_properties(src/cpu/cpu_qgemm_amx.c PROPERTIES COMPILE_OPTIONS
                                "-mamx-tile;-mamx-int8;-mavx512f;-mavx512bw;-mavx512vl;-mf16c;-O3")
  endif()
  # the bf16 gemm (vdpbf16ps); cpu_matmul.c calls it only on a CPU that has AVX512-BF16
  check_c_compiler_flag(-mavx512bf16 WICK_CC_AVX512BF16)
  if(WICK_CC_AVX512BF16)
    set_source_files_properties(src/cpu/cpu_matmul_bf16.c PROPERTIES COMPILE_OPTIONS
                                "-mavx512f;-mavx512bw;-mavx512vl;-mavx512bf16;-O3")
  endif()
  # the product of many rows with F16/BF16 weights on the AMX-BF16 tiles
  check_c_compiler_flag(-mamx-bf16 WICK_CC_AMXBF16)
  if(WICK_CC_AMXBF16 AND WICK_CC_AVX512BF16)
    set_source_files_properties(src/cpu/cpu_fgemm_amx.c PROPERTIES COMPILE_OPTIONS
                                "-mamx-tile;-mamx-bf16;-mavx512f;-mavx512bw;-mavx512vl;-mavx512bf16;-mf16c;-O3")
  endif()
endif()
# The row-op block kernels and the elementwise row loops are plain C loops meant to vectorise:
# -O3 (GCC's -O2 cost model leaves loops that need an alias check or a remainder scalar).
# Appended after the build type's -O2, so it wins. Elementwise IEEE operations give the same bits
# vectorised or not.
set_source_files_properties(src/cpu/cpu_rows.c src/cpu/cpu_binary.c src/cpu/cpu_unary.c
                            src/cpu/cpu_where.c PROPERTIES COMPILE_OPTIONS "-O3")
