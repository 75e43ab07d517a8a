"""wick beside PyTorch through DLPack: zero-copy in both directions (the same address), and every
op family run by wick on tensors PyTorch made, compared with PyTorch's own op on the same device.
On the CPU when torch is importable; on cuda:0 when torch sees a GPU and wick opens cuda:0
(tools/device/interop.sh runs this on the H200). Skipped with a reason otherwise."""
import numpy as np
import pytest

import wick
from wick import DType

torch = pytest.importorskip("torch", reason="PyTorch is not installed for this Python")
F = torch.nn.functional

DEVICES = ["cpu"]
if torch.cuda.is_available() and "cuda:0" in wick.devices():
    DEVICES.append("cuda:0")
else:
    print("skip: cuda:0 cases (torch.cuda.is_available() and wick's cuda:0 both needed)")


@pytest.fixture(params=DEVICES)
def td(request):
    return request.param


def to_wick(t):
    return wick.from_dlpack(t)


def to_torch(w):
    return torch.from_dlpack(w)


def same(got_w, want_t, rtol=1e-5, atol=1e-6):
    got = to_torch(got_w)
    assert got.device == want_t.device
    torch.testing.assert_close(got, want_t, rtol=rtol, atol=atol)


def test_round_trip_no_copy(td):
    a = torch.arange(24, dtype=torch.float32, device=td).reshape(4, 6)
    view = a[1:, ::2]
    w = to_wick(view)
    assert w.data_ptr() == view.data_ptr()  # torch -> wick: the same address
    assert w.shape == (3, 3) and w.strides == (6, 2)
    b = to_torch(w)
    assert b.data_ptr() == view.data_ptr()  # and back: still the same
    b.fill_(5.0)  # one buffer for all three
    assert (a[1:, ::2] == 5).all()
    w2 = wick.device(td).zeros((2, 3), DType.F32)
    t2 = to_torch(w2)
    assert t2.data_ptr() == w2.data_ptr()
    t2 += 2.0  # torch's stream; wick reads on its own: no DLPack hand-off here, so sync by hand
    if td != "cpu":
        torch.cuda.synchronize()
    np.testing.assert_array_equal(w2.numpy(), np.full((2, 3), 2.0, np.float32))


def test_dtypes_cross(td):
    for tdt, wdt in [(torch.uint8, DType.U8), (torch.int16, DType.I16), (torch.int32, DType.I32),
                     (torch.int64, DType.I64), (torch.float16, DType.F16),
                     (torch.bfloat16, DType.BF16), (torch.float32, DType.F32),
                     (torch.float64, DType.F64)]:
        t = torch.zeros(3, dtype=tdt, device=td)
        assert to_wick(t).dtype == wdt
    try:
        assert to_wick(torch.zeros(3, dtype=torch.bool, device=td)).dtype == DType.U8
    except RuntimeError as e:  # torch < 2 exports no bool
        print(f"skip: bool through DLPack: {e}")
    x = torch.tensor([1.0, -2.5, 300.0], device=td)
    same(to_wick(x).to_dtype(DType.BF16), x.to(torch.bfloat16), 0, 0)
    if hasattr(torch, "float8_e4m3fn"):
        try:
            w8 = to_wick(x.to(torch.float8_e4m3fn))
        except (RuntimeError, BufferError, TypeError) as e:  # an older torch's exporter
            pytest.skip(f"torch cannot export float8_e4m3fn through DLPack: {e}")
        assert w8.dtype == DType.F8E4M3
        same(w8.to_dtype(DType.F32), x.to(torch.float8_e4m3fn).float(), 0, 0)


def test_elementwise_and_reduce(td):
    g = torch.Generator(device="cpu").manual_seed(0)
    x = torch.randn(4, 5, generator=g).to(td)
    y = torch.randn(1, 5, generator=g).to(td)
    wx, wy = to_wick(x), to_wick(y)
    same(wx.exp(), x.exp())
    same(wx.gelu_erf(), F.gelu(x))
    same(wx.gelu(), F.gelu(x, approximate="tanh"))
    same(wx.silu(), F.silu(x))
    same(wx.sigmoid(), torch.sigmoid(x))
    same(wx + wy, x + y)
    same(wx.maximum(wy), torch.maximum(x, y))
    same(wx.lt(wy), (x < y).to(torch.uint8), 0, 0)
    same(to_wick((x > 0).to(torch.uint8)).where_cond(wx, wy), torch.where(x > 0, x, y))
    same(wx.sum(dims=1), x.sum(1))
    same(wx.max(dims=0), x.max(0).values)
    np.testing.assert_array_equal(wx.argmax(dims=1).numpy(), x.argmax(1).cpu().numpy())


def test_matmul_conv_pool_upsample(td):
    g = torch.Generator(device="cpu").manual_seed(1)
    a = torch.randn(3, 8, 16, generator=g, dtype=torch.float64).to(td)
    b = torch.randn(3, 16, 5, generator=g, dtype=torch.float64).to(td)
    same(to_wick(a) @ to_wick(b), a @ b, 1e-10, 1e-10)
    same(to_wick(a) @ to_wick(b.transpose(1, 2).contiguous()).transpose(1, 2),
         a @ b, 1e-10, 1e-10)
    x = torch.randn(2, 4, 9, 8, generator=g, dtype=torch.float64).to(td)
    w = torch.randn(6, 2, 3, 3, generator=g, dtype=torch.float64).to(td)
    same(to_wick(x).conv2d(to_wick(w), stride=2, padding=1, groups=2),
         F.conv2d(x, w, stride=2, padding=1, groups=2), 1e-10, 1e-10)
    wt = torch.randn(4, 3, 3, 2, generator=g, dtype=torch.float64).to(td)
    same(to_wick(x).conv_transpose2d(to_wick(wt), stride=2, padding=1, output_padding=1),
         F.conv_transpose2d(x, wt, stride=2, padding=1, output_padding=1), 1e-10, 1e-10)
    x1 = torch.randn(2, 4, 11, generator=g, dtype=torch.float64).to(td)
    w1 = torch.randn(3, 4, 3, generator=g, dtype=torch.float64).to(td)
    same(to_wick(x1).conv1d(to_wick(w1), dilation=2), F.conv1d(x1, w1, dilation=2), 1e-10, 1e-10)
    same(to_wick(x).avg_pool2d(2), F.avg_pool2d(x, 2), 1e-12, 1e-12)
    same(to_wick(x).max_pool2d((3, 2), (2, 1)), F.max_pool2d(x, (3, 2), (2, 1)), 0, 0)
    same(to_wick(x).upsample_nearest2d(18, 16), F.interpolate(x, size=(18, 16)), 0, 0)
    for ac in (False, True):
        same(to_wick(x).upsample_bilinear2d(13, 5, ac),
             F.interpolate(x, size=(13, 5), mode="bilinear", align_corners=ac), 1e-10, 1e-10)


def test_indexing(td):
    g = torch.Generator(device="cpu").manual_seed(2)
    x = torch.randn(5, 6, generator=g).to(td)
    ids = torch.tensor([4, 0, 4, 2], device=td)
    same(to_wick(x).index_select(to_wick(ids), 0), x.index_select(0, ids), 0, 0)
    gi = torch.randint(0, 6, (5, 3), generator=g).to(td)
    same(to_wick(x).gather(to_wick(gi), 1), x.gather(1, gi), 0, 0)
    src = torch.randn(4, 6, generator=g).to(td)
    same(to_wick(x).index_add(to_wick(ids), to_wick(src), 0), x.index_add(0, ids, src))
    dst = x.clone()
    si = torch.randint(0, 6, (5, 6), generator=g).to(td)
    s2 = torch.randn(5, 6, generator=g).to(td)
    to_wick(dst).scatter_add_set_(to_wick(si), to_wick(s2), 1)  # in place, into torch's memory
    wick.device(td).synchronize()
    torch.testing.assert_close(dst, x.scatter_add(1, si, s2))


def test_fused(td):
    g = torch.Generator(device="cpu").manual_seed(3)
    x = torch.randn(2, 3, 4, 16, generator=g).to(td)
    a = torch.randn(16, generator=g).to(td)
    b = torch.randn(16, generator=g).to(td)
    same(to_wick(x).softmax_last_dim(), torch.softmax(x, -1))
    same(to_wick(x).layer_norm(to_wick(a), to_wick(b), 1e-5), F.layer_norm(x, (16,), a, b, 1e-5),
         1e-4, 1e-5)
    rms = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * a
    same(to_wick(x).rms_norm(to_wick(a), 1e-5), rms, 1e-4, 1e-5)
    cos = torch.randn(4, 8, generator=g).to(td)
    sin = torch.randn(4, 8, generator=g).to(td)
    x1, x2 = x[..., :8], x[..., 8:]
    want = torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)
    same(to_wick(x).rope(to_wick(cos), to_wick(sin)), want)
    v = torch.randint(0, 4, (3, 50), generator=g).float().to(td)
    np.testing.assert_array_equal(to_wick(v).arg_sort_last_dim(True).numpy(),
                                  torch.sort(v, dim=-1, stable=True).indices.cpu().numpy())
