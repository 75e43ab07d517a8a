#!/usr/bin/env python3
"""mfma_layout_check.py: the wave64 fragment layout that kernels/gpu.h gives CDNA's 16 x 16 x 16
matrix instructions (wk_mfma_16x16x16 and its twin wk_mfma_twin, which the simt device runs with
64-lane warps) against AMD's own description of those instructions: the register layouts printed
by AMD's Matrix Instruction Calculator (github.com/ROCm/amd_matrix_instruction_calculator, not
part of wick: pass the path of its matrix_calculator.py; it needs the `tabulate` package).

gpu.h's layout, lane l of the wave (c = l % 16, q = l / 16), four 16-bit values in a 64-bit word
with the lowest index in the low bits (register v0 bits 15:0, v0 31:16, v1 15:0, v1 31:16):
    a = A[c][4q .. 4q+3]    b = B[4q .. 4q+3][c]    d[v] = D[4q+v][c] (register v)
For every architecture and instruction wick issues (gfx908: f16; gfx90a: f16, bf16_1k; gfx94x:
f16, bf16) and every entry of A, B and D, the script asks the calculator for the register and
lane (`--register-layout --csv`) and compares; exit status 0 when all agree.

    python3 tools/mfma_layout_check.py --calculator PATH/matrix_calculator.py
"""
import argparse
import csv
import io
import re
import subprocess
import sys

# (architecture, instruction): what kernels/gpu.h's wk_mfma_16x16x16 compiles to on each target
CASES = [
    ("cdna1", "v_mfma_f32_16x16x16f16"),       # gfx908 (f16 only: WK_MFMA_NATIVE_BF16 0)
    ("cdna2", "v_mfma_f32_16x16x16f16"),       # gfx90a
    ("cdna2", "v_mfma_f32_16x16x16bf16_1k"),
    ("cdna3", "v_mfma_f32_16x16x16_f16"),      # gfx940-942 (the same instructions, renamed)
    ("cdna3", "v_mfma_f32_16x16x16_bf16"),
]

CELL = re.compile(r"^v(\d+)\{(\d+)\}(?:\.\[(\d+):(\d+)\])?$")


def wick_place(matrix, i, j):
    """(register, lane, low bit) of entry [i][j] of A (M x K), B (K x N) or D (M x N) in gpu.h's
    layout. The 16-bit inputs: item t = k % 4 of lane's 64-bit word is register t / 2, bits
    16 (t % 2); D: one f32 register per v."""
    if matrix == "A":      # A[m][k]: lane m + 16 (k / 4), item k % 4
        m, k = i, j
        return (k % 4) // 2, m + 16 * (k // 4), 16 * (k % 2)
    if matrix == "B":      # B[k][n]: lane n + 16 (k / 4), item k % 4
        k, n = i, j
        return (k % 4) // 2, n + 16 * (k // 4), 16 * (k % 2)
    m, n = i, j            # D[m][n]: lane n + 16 (m / 4), register m % 4
    return m % 4, n + 16 * (m // 4), 0


def calculator_layout(calc, arch, instr, matrix):
    """{(i, j): (register, lane, low bit)} from the calculator's --register-layout --csv."""
    cmd = [sys.executable, calc, "-a", arch, "-i", instr, "-" + matrix, "-R", "-c"]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()[-400:]}")
    rows = [ln for ln in r.stdout.splitlines() if ln and ln[0].isdigit()]
    blocks = [ln for ln in r.stdout.splitlines() if ln.startswith("Block ")]
    if blocks != ["Block 0"]:
        raise RuntimeError(f"{arch} {instr} {matrix}: expected one block, got {blocks}")
    out = {}
    for rec in csv.reader(io.StringIO("\n".join(rows))):
        i = int(rec[0])
        for j, cell in enumerate(rec[1:]):
            mt = CELL.match(cell.strip())
            if not mt:
                raise RuntimeError(f"{arch} {instr} {matrix}[{i}][{j}]: unexpected cell {cell!r}")
            reg, lane = int(mt.group(1)), int(mt.group(2))
            low = int(mt.group(4)) if mt.group(4) is not None else 0
            out[(i, j)] = (reg, lane, low)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calculator", required=True, help="path of AMD's matrix_calculator.py")
    a = ap.parse_args()
    bad = 0
    for arch, instr in CASES:
        for matrix in "ABD":
            got = calculator_layout(a.calculator, arch, instr, matrix)
            if len(got) != 256:
                print(f"{arch} {instr} {matrix}: {len(got)} entries, expected 256")
                bad += 1
                continue
            diff = [(ij, got[ij], wick_place(matrix, *ij)) for ij in sorted(got)
                    if got[ij] != wick_place(matrix, *ij)]
            print(f"{arch:6} {instr:28} {matrix}: 256 entries, "
                  f"{'agree' if not diff else f'{len(diff)} DIFFER'}")
            for ij, g, w in diff[:4]:
                print(f"    [{ij[0]}][{ij[1]}]: AMD v{g[0]} lane {g[1]} bit {g[2]}, "
                      f"gpu.h v{w[0]} lane {w[1]} bit {w[2]}")
            bad += bool(diff)
    print("mfma layout:", "all agree" if not bad else f"{bad} of {len(CASES) * 3} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
