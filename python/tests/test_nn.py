"""Convolution, pooling, upsampling, indexing, fused (candle-nn) and quantized families against
NumPy references written here, naive and in float64."""
import numpy as np
import pytest

import wick
from wick import DType, QType, Status, WickError
from conftest import close, up


# ---------------------------------------------------------------- references
def conv2d_ref(x, w, stride, pad, dil, groups):
    n, cin, h, wd = x.shape
    cout, cpg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, cout, oh, ow))
    opg = cout // groups
    for co in range(cout):
        g = co // opg
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, g * cpg:(g + 1) * cpg,
                           i * stride[0]:i * stride[0] + dil[0] * (kh - 1) + 1:dil[0],
                           j * stride[1]:j * stride[1] + dil[1] * (kw - 1) + 1:dil[1]]
                out[:, co, i, j] = (patch * w[co]).sum(axis=(1, 2, 3))
    return out


def conv_transpose2d_ref(x, w, stride, pad, outpad, dil, groups):
    n, cin, h, wd = x.shape
    _, opg, kh, kw = w.shape
    ipg = cin // groups
    oh = (h - 1) * stride[0] - 2 * pad[0] + dil[0] * (kh - 1) + outpad[0] + 1
    ow = (wd - 1) * stride[1] - 2 * pad[1] + dil[1] * (kw - 1) + outpad[1] + 1
    full = np.zeros((n, opg * groups, oh + 2 * pad[0] + kh * dil[0], ow + 2 * pad[1] + kw * dil[1]))
    for ci in range(cin):
        g = ci // ipg
        for i in range(h):
            for j in range(wd):
                for a in range(kh):
                    for b in range(kw):
                        full[:, g * opg:(g + 1) * opg, i * stride[0] + a * dil[0],
                             j * stride[1] + b * dil[1]] += x[:, ci, i, j, None] * w[ci, :, a, b]
    return full[:, :, pad[0]:pad[0] + oh, pad[1]:pad[1] + ow]


def bilinear_ref(x, oh, ow, align):
    n, c, h, w = x.shape

    def coords(o, i):
        out = []
        for k in range(o):
            if align:
                s = k * (i - 1) / (o - 1) if o > 1 else 0.0
            else:
                s = max((k + 0.5) * i / o - 0.5, 0.0)
            i0 = min(int(np.floor(s)), i - 1)
            out.append((i0, min(i0 + 1, i - 1), s - i0))
        return out
    y = np.zeros((n, c, oh, ow))
    for a, (h0, h1, lh) in enumerate(coords(oh, h)):
        for b, (w0, w1, lw) in enumerate(coords(ow, w)):
            y[:, :, a, b] = ((1 - lh) * ((1 - lw) * x[:, :, h0, w0] + lw * x[:, :, h0, w1]) +
                             lh * ((1 - lw) * x[:, :, h1, w0] + lw * x[:, :, h1, w1]))
    return y


# ---------------------------------------------------------------- convolution
@pytest.mark.parametrize("stride,pad,dil,groups", [(1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 2)])
def test_conv2d(dev, rng, stride, pad, dil, groups):
    x = rng.standard_normal((2, 4, 7, 6)).astype(np.float32)
    w = rng.standard_normal((6, 4 // groups, 3, 2)).astype(np.float32)
    got = up(x, dev).conv2d(up(w, dev), stride, pad, dil, groups)
    close(got.numpy(), conv2d_ref(x, w, (stride,) * 2, (pad,) * 2, (dil,) * 2, groups), 1e-4, 1e-4)


def test_conv1d(dev, rng):
    x = rng.standard_normal((2, 3, 9)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3)).astype(np.float32)
    got = up(x, dev).conv1d(up(w, dev), stride=2, padding=1)
    want = conv2d_ref(x[:, :, None, :], w[:, :, None, :], (1, 2), (0, 1), (1, 1), 1)[:, :, 0, :]
    close(got.numpy(), want, 1e-4, 1e-4)


@pytest.mark.parametrize("stride,pad,outpad,dil,groups", [(1, 0, 0, 1, 1), (2, 1, 1, 1, 1),
                                                          (2, 0, 0, 2, 2)])
def test_conv_transpose2d(dev, rng, stride, pad, outpad, dil, groups):
    x = rng.standard_normal((1, 4, 4, 5)).astype(np.float32)
    w = rng.standard_normal((4, 3, 2, 3)).astype(np.float32)
    got = up(x, dev).conv_transpose2d(up(w, dev), stride, pad, outpad, dil, groups)
    want = conv_transpose2d_ref(x, w, (stride,) * 2, (pad,) * 2, (outpad,) * 2, (dil,) * 2, groups)
    assert got.shape == want.shape
    close(got.numpy(), want, 1e-4, 1e-4)


def test_conv_transpose1d(dev, rng):
    x = rng.standard_normal((2, 3, 6)).astype(np.float32)
    w = rng.standard_normal((3, 2, 4)).astype(np.float32)
    got = up(x, dev).conv_transpose1d(up(w, dev), stride=3, padding=1)
    want = conv_transpose2d_ref(x[:, :, None, :], w[:, :, None, :], (1, 3), (0, 1), (0, 0),
                                (1, 1), 1)[:, :, 0, :]
    close(got.numpy(), want, 1e-4, 1e-4)


def test_conv_errors(dev):
    x = up(np.zeros((1, 3, 5, 5), np.float32), dev)
    with pytest.raises(WickError) as e:
        x.conv2d(up(np.zeros((2, 4, 3, 3), np.float32), dev))  # 4 input channels for 3
    assert e.value.status == Status.SHAPE


# ---------------------------------------------------------------- pooling, upsampling
def test_pools(dev, rng):
    x = rng.standard_normal((2, 3, 6, 7))
    t = up(x, dev)
    win = np.lib.stride_tricks.sliding_window_view(x, (3, 2), axis=(2, 3))[:, :, ::2, ::2]
    close(t.avg_pool2d((3, 2), 2).numpy(), win.mean(axis=(-1, -2)), 1e-12, 1e-12)
    np.testing.assert_array_equal(t.max_pool2d((3, 2), 2).numpy(), win.max(axis=(-1, -2)))
    win2 = np.lib.stride_tricks.sliding_window_view(x, (2, 2), axis=(2, 3))[:, :, ::2, ::2]
    np.testing.assert_array_equal(t.max_pool2d(2).numpy(), win2.max(axis=(-1, -2)))


def test_upsample(dev, rng):
    x = rng.standard_normal((1, 2, 3, 4))
    t = up(x, dev)
    hi, wi = (np.arange(7) * 3) // 7, (np.arange(9) * 4) // 9  # floor(i * in / out)
    np.testing.assert_array_equal(t.upsample_nearest2d(7, 9).numpy(), x[:, :, hi][:, :, :, wi])
    x1 = rng.standard_normal((2, 3, 5))
    np.testing.assert_array_equal(up(x1, dev).upsample_nearest1d(8).numpy(),
                                  x1[:, :, (np.arange(8) * 5) // 8])
    for align in (False, True):
        close(t.upsample_bilinear2d(5, 7, align).numpy(), bilinear_ref(x, 5, 7, align),
              1e-12, 1e-12)


# ---------------------------------------------------------------- indexing
@pytest.mark.parametrize("idt", [DType.U8, DType.U32, DType.I64])
def test_index_select_and_gather(dev, rng, idt):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    ids = np.array([3, 0, 3, 1], wick.numpy_dtype(idt))
    np.testing.assert_array_equal(up(x, dev).index_select(up(ids, dev), 0).numpy(), x[ids])
    np.testing.assert_array_equal(up(x, dev).index_select(up(ids, dev), 1).numpy(), x[:, ids])
    g = rng.integers(0, 5, (4, 3)).astype(wick.numpy_dtype(idt))
    np.testing.assert_array_equal(up(x, dev).gather(up(g, dev), 1).numpy(),
                                  np.take_along_axis(x, g.astype(np.int64), 1))
    # the dtype's maximum is "none": a zero row
    none = np.array([1, np.iinfo(wick.numpy_dtype(idt)).max], wick.numpy_dtype(idt))
    got = up(x, dev).index_select(up(none, dev), 0).numpy()
    np.testing.assert_array_equal(got, np.stack([x[1], np.zeros(5, np.float32)]))


def test_index_out_of_range(dev):
    x = up(np.zeros((4, 5), np.float32), dev)
    with pytest.raises(WickError) as e:
        x.index_select(up(np.array([0, 9], np.int64), dev), 0).numpy()  # a GPU reports at sync
    assert e.value.status == Status.INDEX_OUT_OF_RANGE
    dev.synchronize()


def test_scatter_and_index_add(dev, rng):
    dst = rng.standard_normal((3, 4))
    ids = np.array([[2, 0, 1, 3], [0, 3, 2, 1]], np.int64)  # distinct per row
    src = rng.standard_normal((2, 4))
    want_rows = dst.copy()
    np.put_along_axis(want_rows[:2], ids, src, axis=1)
    t = up(dst, dev)
    t.narrow(0, 0, 2).scatter_set_(up(ids, dev), up(src, dev), 1)  # rows 0-1 only
    np.testing.assert_array_equal(t.numpy(), want_rows)
    dup = np.array([[1, 1, 0, 1]], np.uint32)  # duplicates add up
    s1 = rng.standard_normal((1, 4))
    want = dst.copy()
    for j in range(4):
        want[0, dup[0, j]] += s1[0, j]
    t = up(dst, dev)
    t.scatter_add_set_(up(dup, dev), up(s1, dev), 1)
    close(t.numpy(), want, 1e-12, 1e-12)
    rows = np.array([2, 0, 2], np.uint32)
    s2 = rng.standard_normal((3, 4))
    want = dst.copy()
    np.add.at(want, rows, s2)
    close(up(dst, dev).index_add(up(rows, dev), up(s2, dev), 0).numpy(), want, 1e-12, 1e-12)


# ---------------------------------------------------------------- fused
def test_softmax_and_norms(dev, rng):
    x = rng.standard_normal((3, 5, 16)).astype(np.float32)
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(-1, keepdims=True))
    close(up(x, dev).softmax_last_dim().numpy(), e / e.sum(-1, keepdims=True), 1e-5, 1e-7)
    a = rng.standard_normal(16).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    rms = xd / np.sqrt((xd ** 2).mean(-1, keepdims=True) + 1e-5) * a
    close(up(x, dev).rms_norm(up(a, dev), 1e-5).numpy(), rms, 1e-5, 1e-5)
    mu, var = xd.mean(-1, keepdims=True), xd.var(-1, keepdims=True)
    ln = (xd - mu) / np.sqrt(var + 1e-5) * a + b
    close(up(x, dev).layer_norm(up(a, dev), up(b, dev), 1e-5).numpy(), ln, 1e-5, 1e-5)


def test_add_norms(dev, rng):
    # the residual add and the norm in one op: numpy's add (f32, one rounding) and norms in f64
    x = rng.standard_normal((3, 5, 16)).astype(np.float32)
    r = rng.standard_normal((3, 5, 16)).astype(np.float32)
    a = rng.standard_normal(16).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    s32 = x + r
    sd = s32.astype(np.float64)
    s, o = up(x, dev).add_rms_norm(up(r, dev), up(a, dev), 1e-5)
    assert np.array_equal(s.numpy(), s32)
    close(o.numpy(), sd / np.sqrt((sd ** 2).mean(-1, keepdims=True) + 1e-5) * a, 1e-5, 1e-5)
    s, o = up(x, dev).add_layer_norm(up(r, dev), up(a, dev), up(b, dev), 1e-5)
    mu, var = sd.mean(-1, keepdims=True), sd.var(-1, keepdims=True)
    assert np.array_equal(s.numpy(), s32)
    close(o.numpy(), (sd - mu) / np.sqrt(var + 1e-5) * a + b, 1e-5, 1e-5)


def test_rope_variants(dev, rng):
    B, H, T, D = 2, 3, 4, 8
    x = rng.standard_normal((B, H, T, D))
    cos, sin = rng.standard_normal((T, D // 2)), rng.standard_normal((T, D // 2))
    h = D // 2
    c, s = cos[None, None], sin[None, None]
    want = np.concatenate([x[..., :h] * c - x[..., h:] * s, x[..., :h] * s + x[..., h:] * c], -1)
    close(up(x, dev).rope(up(cos, dev), up(sin, dev)).numpy(), want, 1e-12, 1e-12)
    xe, xo = x[..., 0::2], x[..., 1::2]
    want_i = np.stack([xe * c - xo * s, xe * s + xo * c], -1).reshape(x.shape)
    close(up(x, dev).rope_i(up(cos, dev), up(sin, dev)).numpy(), want_i, 1e-12, 1e-12)
    xt = x.transpose(0, 2, 1, 3).copy()  # (B, T, H, D)
    close(up(xt, dev).rope_thd(up(cos, dev), up(sin, dev)).numpy(), want.transpose(0, 2, 1, 3),
          1e-12, 1e-12)


def test_arg_sort(dev, rng):
    x = rng.integers(0, 5, (3, 37)).astype(np.float32)  # many ties: stability shows
    t = up(x, dev)
    asc = t.arg_sort_last_dim(True)
    assert asc.dtype == DType.U32
    np.testing.assert_array_equal(asc.numpy(), np.argsort(x, -1, kind="stable"))
    np.testing.assert_array_equal(t.arg_sort_last_dim(False).numpy(),
                                  np.argsort(-x, -1, kind="stable"))


# ---------------------------------------------------------------- quantized (GGUF Q8_0)
def q8_0_ref(x):
    """Q8_0 per block of 32: d = amax / 127 stored as f16, q = round(x * (1 / f16(d))) (half away
    from zero) as int8 (wick divides by the stored scale; ggml's reference by the unrounded one,
    which moves a near-tie by one step now and then). Returns (the f16 scales' bits, the
    dequantized values)."""
    b = x.reshape(-1, 32).astype(np.float32)
    d = np.abs(b).max(1) / np.float32(127)
    ds = d.astype(np.float16).astype(np.float32)
    inv = np.where(ds != 0, np.float32(1) / np.where(ds != 0, ds, 1), 0).astype(np.float32)
    v = b * inv[:, None]
    q = np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))
    dh = d.astype(np.float16)
    return dh.view(np.uint16), (dh.astype(np.float64)[:, None] * q).reshape(x.shape)


def test_quantize_dequantize_q8_0(dev, rng):
    x = rng.standard_normal((4, 64)).astype(np.float32)
    q = wick.from_numpy(x).quantize(QType.Q8_0)  # quantize runs on the CPU
    assert q.dtype == DType.U8 and q.numel() == 8 * 34
    raw = q.numpy().reshape(8, 34)
    dbits, want = q8_0_ref(x)
    np.testing.assert_array_equal(raw[:, :2].copy().view(np.uint16)[:, 0], dbits)
    qd = wick.from_numpy(q.numpy(), dev)  # the block bytes on the device
    got = wick.dequantize(qd, QType.Q8_0, 256, DType.F32).numpy().reshape(4, 64)
    close(got, want, 1e-7, 1e-7)


def test_qmatmul_and_qembedding(dev, rng):
    n, k = 6, 64
    w = rng.standard_normal((n, k)).astype(np.float32)
    q = wick.from_numpy(wick.from_numpy(w).quantize(QType.Q8_0).numpy(), dev)
    wdq = q8_0_ref(w)[1]
    x = rng.standard_normal((3, k)).astype(np.float32)
    got = up(x, dev).qmatmul(q, QType.Q8_0, n, k).numpy()
    want = x.astype(np.float64) @ wdq.T
    # activations may be quantized to int8 too (docs/semantics.md: PT_QDOT, nmse <= 3e-4)
    assert ((got - want) ** 2).sum() / (want ** 2).sum() < 3e-4
    ids = np.array([[5, 0], [2, 2]], np.int64)
    emb = wick.qembedding(up(ids, dev), q, QType.Q8_0, n, k, DType.F32)
    assert emb.shape == (2, 2, k)
    close(emb.numpy(), wdq[ids], 1e-7, 1e-7)
    with pytest.raises(WickError) as e:
        wick.from_numpy(np.zeros(33, np.float32)).quantize(QType.Q8_0)
    assert e.value.status == Status.SHAPE
