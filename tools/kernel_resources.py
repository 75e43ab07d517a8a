#!/usr/bin/env python3
"""kernel_resources.py: registers, spills, shared memory and occupancy of wick's GPU kernels as
the compilers report them, without a GPU (issue 39: the compute-bound kernels' resources).

    python3 tools/kernel_resources.py [--build build] [--modules flash,matmul_f16,...]
                                      [--match REGEX] [--nvidia sm_90] [--amd gfx90a,gfx942,gfx1100]

NVIDIA: `nvcc -cubin -arch=<sm> -Xptxas -v` (the flags of cmake/gpu.cmake): registers per thread,
static shared memory, spill stores / loads and stack per kernel; blocks per multiprocessor from
them for blocks of 256 threads (kernels/gpu.h WK_BLOCK) on sm_80 / sm_90 (65536 registers,
allocated per warp in units of 256; 2048 threads; 32 blocks; 164 / 228 KiB of shared memory with
1 KiB reserved per block). Shared memory a kernel takes at launch (dynamic: the GEMM's pipe tiles,
qmv's chunks and mma) is not in that figure, so their column says "static".
AMD: clang 19's `-Rpass-analysis=kernel-resource-usage` remarks (the flags of cmake/hip_clang.cmake
for the targets clang compiles): VGPRs, AGPRs, SGPRs, spills, scratch, LDS and the compiler's
occupancy in waves per SIMD. The device libraries come from the build's gen/amdgcn (made by a
configure with the AMD toolchain: `make`).
Prints one table per target (markdown)."""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK = 256  # kernels/gpu.h WK_BLOCK
SMEM_KIB = {"sm_80": 164, "sm_86": 100, "sm_89": 100, "sm_90": 228}


def run(cmd):
    p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stdout[-3000:]))
    return p.stdout


def nvidia(mod, sm, nvcc):
    out = run([nvcc, "-cubin", "-std=c++17", "-O3", "-fmad=false", "-arch=" + sm, "-Ikernels",
               "-Isrc/core", "-Xptxas", "-v", "-o", os.devnull, "kernels/%s.cu" % mod])
    rows, name = {}, None
    for line in out.splitlines():
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            name = m.group(1)
            rows.setdefault(name, {})
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads",
                      line)
        if m and name:
            rows[name].update(stack=int(m.group(1)), st=int(m.group(2)), ld=int(m.group(3)))
            continue
        m = re.search(r"Used (\d+) registers.*?(?:(\d+) bytes smem)?$", line)
        if m and name:
            smem = re.search(r"(\d+) bytes smem", line)
            rows[name].update(regs=int(m.group(1)), smem=int(smem.group(1)) if smem else 0)
    return rows


def sm_blocks(regs, smem, sm):
    per_warp = -(-regs * 32 // 256) * 256  # registers per warp, in units of 256
    by_regs = 65536 // (per_warp * (BLOCK // 32)) if regs else 32
    by_smem = (SMEM_KIB.get(sm, 100) * 1024) // (smem + 1024)
    return min(2048 // BLOCK, 32, by_regs, by_smem)


def amd(mod, target, clang, devlib):
    out = run([clang, "-x", "hip", "-std=c++17", "--rocm-path=/usr", "--rocm-device-lib-path=" + devlib,
               "-mcode-object-version=4", "-mllvm", "-amdgpu-early-inline-all=true", "-mllvm",
               "-amdgpu-function-calls=false", "--cuda-device-only", "--no-gpu-bundle-output", "-O3",
               "-ffp-contract=off", "--offload-arch=" + target, "-Ikernels", "-Isrc/core",
               "-Rpass-analysis=kernel-resource-usage", "-o", os.devnull, "kernels/%s.cu" % mod])
    rows, name = {}, None
    for line in out.splitlines():
        m = re.search(r"remark: Function Name: (\S+)", line)
        if m:
            name = m.group(1)
            rows[name] = {}
            continue
        m = re.search(r"remark:\s+([A-Za-z ]+?)(?: \[[^\]]*\])?: (\S+) \[-Rpass", line)
        if m and name:
            rows[name][m.group(1).strip()] = m.group(2)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--modules", default="flash,matmul_f16,matmul_bf16,conv,attn_f16,qmv")
    ap.add_argument("--match", default="", help="only kernels whose name matches (re.search)")
    ap.add_argument("--nvidia", default="sm_90")
    ap.add_argument("--amd", default="gfx90a,gfx942,gfx1100")
    ap.add_argument("--nvcc", default="/usr/local/cuda/bin/nvcc")
    ap.add_argument("--clang", default="clang++-19")
    a = ap.parse_args()
    mods = [m for m in a.modules.split(",") if m]
    pat = re.compile(a.match) if a.match else None
    want = lambda k: not pat or pat.search(k)
    for sm in [s for s in a.nvidia.split(",") if s]:
        print("\n| %s kernel | registers | static smem B | spill st / ld B | stack B | blocks of %d / SM |"
              % (sm, BLOCK))
        print("|---|---|---|---|---|---|")
        for mod in mods:
            for k, r in sorted(nvidia(mod, sm, a.nvcc).items()):
                if want(k) and "regs" in r:
                    print("| %s | %d | %d | %d / %d | %d | %d |" % (
                        k, r["regs"], r["smem"], r.get("st", 0), r.get("ld", 0), r.get("stack", 0),
                        sm_blocks(r["regs"], r["smem"], sm)))
    devlib = os.path.join(os.path.abspath(a.build), "gen", "amdgcn")
    targets = [t for t in a.amd.split(",") if t]
    if targets and not os.path.isdir(devlib):
        sys.exit("%s: no device libraries (configure the build with the AMD toolchain first)" % devlib)
    for t in targets:
        print("\n| %s kernel | VGPRs | AGPRs | SGPRs | spills (V / S) | scratch B/lane | LDS B | waves / SIMD |"
              % t)
        print("|---|---|---|---|---|---|---|---|")
        for mod in mods:
            for k, r in sorted(amd(mod, t, a.clang, devlib).items()):
                if want(k):
                    print("| %s | %s | %s | %s | %s / %s | %s | %s | %s |" % (
                        k, r.get("VGPRs", "?"), r.get("AGPRs", "?"), r.get("SGPRs", "?"),
                        r.get("VGPRs Spill", "?"), r.get("SGPRs Spill", "?"),
                        r.get("ScratchSize", "?"), r.get("LDS Size", "?"), r.get("Occupancy", "?")))


if __name__ == "__main__":
    main()
