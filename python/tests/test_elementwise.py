"""Elementwise, reduction, movement and matmul families against NumPy (float64 references)."""
import math

import numpy as np
import pytest

import wick
from wick import DType, Op, Status, WickError
from conftest import close, up

_erf = np.vectorize(math.erf)
UNARY = {
    "exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
    "abs": np.abs, "neg": np.negative, "recip": lambda x: 1 / x, "sqr": np.square,
    "sqrt": np.sqrt,
    "gelu": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
    "gelu_erf": lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))), "erf": _erf,
    "relu": lambda x: np.maximum(x, 0), "silu": lambda x: x / (1 + np.exp(-x)),
    "floor": np.floor, "ceil": np.ceil,
    "round": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),  # half away from zero
    "sign": np.sign, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_f32_strided(dev, rng, name):
    x = rng.uniform(-3, 3, (4, 6)).astype(np.float32)
    if name in ("log", "sqrt"):
        x = np.abs(x) + 0.1
    if name == "round":
        x[0, :] = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5]
    t = up(x, dev).T  # a transposed view: the op reads through strides
    got = getattr(t, name)()
    assert got.shape == (6, 4) and got.is_contiguous()
    close(got.numpy(), UNARY[name](x.astype(np.float64)).T, rtol=2e-6, atol=2e-6)


def test_parametrised_unary(dev, rng):
    x = rng.uniform(-2, 2, 17).astype(np.float32)
    xd = x.astype(np.float64)
    close(up(x, dev).affine(1.5, -0.25).numpy(), xd * 1.5 - 0.25)
    close(up(np.abs(x), dev).powf(1.7).numpy(), np.abs(xd) ** 1.7, rtol=2e-6)
    close(up(x, dev).elu(0.7).numpy(), np.where(xd > 0, xd, 0.7 * (np.exp(xd) - 1)))


@pytest.mark.parametrize("dt", [DType.F32, DType.F64, DType.I32, DType.I64, DType.U32])
def test_binary_broadcast(dev, rng, dt):
    npdt = wick.numpy_dtype(dt)
    a = rng.integers(1, 50, (3, 1)).astype(npdt)
    b = rng.integers(1, 50, (1, 4)).astype(npdt)
    ta, tb = up(a, dev), up(b, dev)
    np.testing.assert_array_equal((ta + tb).numpy(), a + b)
    np.testing.assert_array_equal(ta.mul(tb).numpy(), a * b)
    np.testing.assert_array_equal(ta.maximum(tb).numpy(), np.maximum(a, b))
    np.testing.assert_array_equal(ta.minimum(tb).numpy(), np.minimum(a, b))
    if dt in (DType.F32, DType.F64):
        np.testing.assert_array_equal((ta - tb).numpy(), a - b)
        close((ta / tb).numpy(), a.astype(np.float64) / b, rtol=1e-7)
    for op, f in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                  ("gt", np.greater), ("ge", np.greater_equal)]:
        got = getattr(ta, op)(tb)
        assert got.dtype == DType.U8
        np.testing.assert_array_equal(got.numpy(), f(a, b).astype(np.uint8))


def test_binary_scalars_and_half_types(dev):
    x = np.array([1.0, 2.0, 3.5], np.float32)
    close((up(x, dev) * 2.0 + 1.0).numpy(), x * 2 + 1)
    h = up(x, dev, DType.F16)  # values exact in f16
    assert h.dtype == DType.F16
    np.testing.assert_array_equal((h + h).numpy(), (x + x).astype(np.float16))
    b = up(x, dev, DType.BF16)
    close((b * 2.0).to_dtype(DType.F32).numpy(), x * 2)


def test_where_cond(dev, rng):
    c = np.array([[1], [0], [3]], np.uint8)
    t = rng.standard_normal((3, 4)).astype(np.float32)
    f = rng.standard_normal((1, 4)).astype(np.float32)
    got = up(c, dev).where_cond(up(t, dev), up(f, dev))
    np.testing.assert_array_equal(got.numpy(), np.where(c != 0, t, f))
    ci = up(np.array([0, 5, 0], np.int64), dev)
    got = ci.where_cond(up(np.ones(3, np.float64), dev), up(np.zeros(3, np.float64), dev))
    np.testing.assert_array_equal(got.numpy(), [0, 1, 0])


def test_to_dtype(dev):
    x = np.array([0.1, -1.5, 2.75, 1000.0, -0.0, 65504.0], np.float32)
    t = up(x, dev)
    np.testing.assert_array_equal(t.to_dtype(DType.F16).numpy(), x.astype(np.float16))
    np.testing.assert_array_equal(t.to_dtype(DType.F64).numpy(), x.astype(np.float64))
    # bf16 bits: round to nearest even of the f32 bits (finite values), computed here
    u = x.view(np.uint32).astype(np.uint64)
    want = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    np.testing.assert_array_equal(t.to_dtype(DType.BF16).numpy(), want)
    # float -> int truncates toward zero (docs/semantics.md)
    np.testing.assert_array_equal(t.to_dtype(DType.I32).numpy(), [0, -1, 2, 1000, 0, 65504])
    i = up(np.array([3, -7, 40000], np.int32), dev)
    np.testing.assert_array_equal(i.to_dtype(DType.F32).numpy(), [3, -7, 40000])
    np.testing.assert_array_equal(i.to_dtype(DType.I64).numpy(), [3, -7, 40000])


def test_fill_in_place_on_a_view(dev):
    t = up(np.zeros((3, 4), np.float32), dev)
    t.narrow(1, 1, 2).fill_(5.0)
    want = np.zeros((3, 4), np.float32)
    want[:, 1:3] = 5
    np.testing.assert_array_equal(t.numpy(), want)
    b = up(np.zeros(3, np.float32), dev, DType.BF16)
    b.fill_(1.5)
    np.testing.assert_array_equal(b.to_dtype(DType.F32).numpy(), [1.5, 1.5, 1.5])


def test_reductions(dev, rng):
    x = rng.standard_normal((3, 4, 5))
    t = up(x, dev)
    close(t.sum(dims=(0, 2)).numpy(), x.sum(axis=(0, 2)), rtol=1e-12, atol=1e-12)
    close(t.sum(dims=1, keepdim=True).numpy(), x.sum(axis=1, keepdims=True), rtol=1e-12)
    close(t.sum().numpy(), x.sum(), rtol=1e-12)
    np.testing.assert_array_equal(t.max(dims=2).numpy(), x.max(axis=2))
    np.testing.assert_array_equal(t.min(dims=0).numpy(), x.min(axis=0))
    am = t.argmax(dims=1)
    assert am.dtype == DType.U32
    np.testing.assert_array_equal(am.numpy(), x.argmax(axis=1))
    np.testing.assert_array_equal(t.argmin(dims=2).numpy(), x.argmin(axis=2))
    # over two dims: the row-major index within the reduced (1, 2) block
    np.testing.assert_array_equal(t.argmax(dims=(1, 2)).numpy(), x.reshape(3, 20).argmax(axis=1))
    # ties resolve to the first
    np.testing.assert_array_equal(up(np.array([[2, 7, 7, 1]], np.int32), dev).argmax(1).numpy(), [1])
    with pytest.raises(WickError) as e:
        up(np.zeros((0, 3), np.float32), dev).max(dims=0)
    assert e.value.status == Status.SHAPE


def test_copy_strided_and_copy2d(dev):
    src = up(np.arange(6, dtype=np.float32).reshape(2, 3), dev).T  # [[0,3],[1,4],[2,5]]
    dst = up(np.full(8, -1, np.float32), dev)
    src.copy_strided_src(dst, 1)
    np.testing.assert_array_equal(dst.numpy(), [-1, 0, 3, 1, 4, 2, 5, -1])
    a = up(np.arange(12, dtype=np.float32), dev)
    d = up(np.zeros(10, np.float32), dev)
    # 2 rows of 3: src rows at 1 and 5 (stride 4), dst rows at 0 and 5 (stride 5)
    a.copy2d(d, 2, 3, 4, 5, 1, 0)
    np.testing.assert_array_equal(d.numpy(), [1, 2, 3, 0, 0, 5, 6, 7, 0, 0])
    with pytest.raises(WickError) as e:
        a.copy2d(d, 3, 3, 4, 5, 1, 0)  # the third dst row ends past 10
    assert e.value.status == Status.LAYOUT


@pytest.mark.parametrize("dt,tol", [(DType.F32, 1e-5), (DType.F64, 1e-12)])
def test_matmul(dev, rng, dt, tol):
    npdt = wick.numpy_dtype(dt)
    a = rng.standard_normal((2, 5, 7)).astype(npdt)
    b = rng.standard_normal((2, 6, 7)).astype(npdt)
    got = up(a, dev) @ up(b, dev).transpose(1, 2)  # b transposed in its last two dims
    close(got.numpy(), a.astype(np.float64) @ b.astype(np.float64).transpose(0, 2, 1), tol, tol)
    w = rng.standard_normal((7, 3)).astype(npdt)  # broadcast over the batch
    close((up(a, dev) @ up(w, dev)).numpy(), a.astype(np.float64) @ w, tol, tol)


def test_rand(dev):
    dev.set_seed(42)
    u = dev.rand_uniform((10000,), DType.F32, -1.0, 3.0).numpy()
    assert u.min() >= -1 and u.max() < 3 and abs(u.mean() - 1.0) < 0.05
    dev.set_seed(42)
    np.testing.assert_array_equal(dev.rand_uniform((10000,), DType.F32, -1.0, 3.0).numpy(), u)
    n = dev.rand_normal((20000,), DType.F64, 2.0, 0.5).numpy()
    assert abs(n.mean() - 2.0) < 0.02 and abs(n.std() - 0.5) < 0.02
