#!/usr/bin/env python3
"""tools/fit/gelu_erf.py: fits the two polynomials of the CPU backend's f32 gelu_erf
(src/cpu/cpu_vmath_simd.h, docs/semantics.md) and prints their coefficients as C hex floats.

The kernel writes Phi(-a) = 1/2 e^(-a^2/2) E(a) for a = |x| in [0, 15], where
    E(a) = erfc(a / sqrt 2) e^(a^2 / 2) = t P(t - 9/16),   t = 1 / (1 + a/2)  (t in [2/17, 1]),
and P is a polynomial of degree 11, in t - 9/16 rather than t: the power basis in t has
coefficients up to 3.9 of alternating sign, whose f32 Horner sums lose 3 ulp near t = 1. E is smooth and slowly varying (1 at a = 0, ~sqrt(2/pi)/a for
large a), so P is fitted for *relative* error by iteratively reweighted least squares on a
Chebyshev basis (Lawson's algorithm: converges towards the minimax fit), with E evaluated by
mpmath at 40 digits. The power-basis coefficients are rounded to f32; the script reports the fit's
relative error before and after that rounding, and that of the kernel's f32 evaluation (t, the
shift, Horner with FMAs, the product t P) simulated on 300,000 values of a. It is a development
tool, not a build step: needs numpy and mpmath (pip), runs in a few seconds.

The second polynomial is the kernel's own exp: e^(-a^2/2) = 2^n e^r with r in [-ln2/2, ln2/2]
(widened by the -l/2 term, |l| <= 2^-24 a^2), e^r = 1 + r Q(r), Q of degree 5 fitted the same
way for the relative error of e^r (the kernel scales its coefficients by (-1/2)^k to take -2r).
Run: python3 tools/fit/gelu_erf.py
"""
import re

import mpmath as mp
import numpy as np

A_MAX, C, DEG, N, S0 = 15.0, 0.5, 11, 6000, 0.5625
mp.mp.dps = 40


def e_exact(a):
    a = mp.mpf(a)
    return mp.erfc(a / mp.sqrt(2)) * mp.exp(a * a / 2)


def main():
    tmin = 1 / (1 + C * A_MAX)
    ts = np.cos(np.linspace(0, np.pi, N)) * (1 - tmin) / 2 + (1 + tmin) / 2
    y = np.array([float(e_exact((1 / t - 1) / C)) for t in ts]) / ts  # P(t) wanted
    u = (2 * ts - (1 + tmin)) / (1 - tmin)
    V = np.polynomial.chebyshev.chebvander(u, DEG)
    w = np.ones(N)
    for _ in range(60):
        W = w / y
        coef = np.linalg.lstsq(V * W[:, None], y * W, rcond=None)[0]
        err = (V @ coef - y) / y
        w = w * np.abs(err) + 1e-300
        w /= w.max()
    p = np.polynomial.Chebyshev(coef, domain=[tmin - S0, 1 - S0])
    p = p.convert(kind=np.polynomial.Polynomial).coef
    p32 = p.astype(np.float32)
    for name, c in (("f64", p), ("f32", p32.astype(np.float64))):
        rel = np.abs(np.polyval(c[::-1], ts - S0) - y) / y
        print(f"/* max relative error of t P(t - {S0}) with {name} coefficients: {rel.max():.3g} */")
    f = np.float32
    a = np.concatenate([np.linspace(0, A_MAX, 300001), np.geomspace(1e-6, 0.1, 2000)]).astype(f)
    t = f(1) / (f(0.5) * a + f(1))
    s = t - f(S0)
    acc = np.full_like(t, p32[-1])
    for k in range(DEG - 1, -1, -1):  # an FMA: the f64 product of two f32 is exact
        acc = (acc.astype(np.float64) * s + np.float64(p32[k])).astype(f)
    ev = (acc * t)[::31]
    ref = np.array([float(e_exact(float(v))) for v in a[::31]])
    rel = np.abs(ev - ref) / ref
    print(f"/* f32 evaluation of E: max relative error {rel.max():.3g} = {rel.max() / 2**-23:.2f} x 2^-23 */")
    print(f"/* P(s), s = t - {S0}, t = 1/(1 + a/2), a in [0, {A_MAX:g}]; degree {DEG}, lowest first */")
    hexf = [re.sub(r"\.?0+p", "p", float(c).hex()) + "f" for c in p32]
    print(",\n".join(f"    {h} /* {float(c):.9g} */" for h, c in zip(hexf, p32)))


def exp_fit(deg=5, n=4000):
    """Q of degree deg with e^r = 1 + r Q(r) on [-R, R], relative error of e^r."""
    R = 0.3466 + 2e-5
    rs = np.cos(np.linspace(0, np.pi, n)) * R
    y = np.array([float(mp.expm1(mp.mpf(r)) / mp.mpf(r)) if r != 0 else 1.0 for r in rs])
    ey = np.exp(rs)
    V = np.polynomial.chebyshev.chebvander(rs / R, deg)
    w = np.ones(n)
    for _ in range(60):
        W = w * np.abs(rs) / ey + 1e-30
        coef = np.linalg.lstsq(V * W[:, None], y * W, rcond=None)[0]
        err = (V @ coef - y) * rs / ey
        w = w * np.abs(err) + 1e-300
        w /= w.max()
    q = np.polynomial.Chebyshev(coef, domain=[-R, R]).convert(kind=np.polynomial.Polynomial).coef
    q32 = q.astype(np.float32)
    f = np.float32
    r = np.linspace(-R, R, 200001).astype(f)
    acc = np.full_like(r, q32[-1])
    for k in range(deg - 1, -1, -1):
        acc = (acc.astype(np.float64) * r + np.float64(q32[k])).astype(f)
    ev = (acc.astype(np.float64) * r + 1.0).astype(f)[::7]
    ref = np.array([float(mp.exp(mp.mpf(float(v)))) for v in r[::7]])
    rel = np.abs(ev - ref) / ref
    print(f"/* e^r = 1 + r Q(r), r in [-{R:.5f}, {R:.5f}]: fit {np.abs(err).max():.3g}, "
          f"f32 evaluation {rel.max():.3g} = {rel.max() / 2**-23:.2f} x 2^-23; Q lowest first */")
    hexf = [re.sub(r"\.?0+p", "p", float(c).hex()) + "f" for c in q32]
    print(",\n".join(f"    {h} /* {float(c):.9g} */" for h, c in zip(hexf, q32)))


if __name__ == "__main__":
    main()
    exp_fit()
