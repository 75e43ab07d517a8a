"""DLPack through the Python protocol with NumPy (CPU): zero-copy both ways (same address),
versioned and legacy capsules, the read-only flag, deleters run exactly once, bad inputs."""
import gc
import sys

import numpy as np
import pytest

import wick
from wick import DType, Status, WickError
from wick import _dlpack

NUMPY2 = int(np.__version__.split(".")[0]) >= 2


def test_wick_to_numpy_shares_memory():
    t = wick.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
    v = t.transpose(0, 1).narrow(1, 1, 2)  # (4, 2) view, strides (1, 4), offset 1
    a = np.from_dlpack(v)
    assert a.ctypes.data == v.data_ptr()
    assert a.strides == (4, 16)
    np.testing.assert_array_equal(a, np.arange(12, dtype=np.float32).reshape(3, 4).T[:, 1:3])
    t.fill_(7.0)  # wick writes, numpy sees it: one buffer
    assert (a == 7).all()
    del t, v
    gc.collect()
    assert (a == 7).all()  # the capsule's reference keeps the storage alive


def test_export_outlives_its_device():
    dev = wick.Device("cpu")  # a handle of its own, not the shared one
    a = np.from_dlpack(wick.from_numpy(np.arange(5, dtype=np.int32), dev))
    del dev
    gc.collect()  # the wick tensor and device objects are gone; numpy's export keeps both open
    np.testing.assert_array_equal(a, np.arange(5))
    del a
    gc.collect()


def test_numpy_to_wick_shares_memory():
    a = np.arange(10, dtype=np.float64)
    before = sys.getrefcount(a)
    t = wick.from_dlpack(a)
    assert t.data_ptr() == a.ctypes.data and t.dtype == DType.F64
    assert sys.getrefcount(a) == before + 1  # numpy's manager holds the array
    t.narrow(0, 2, 3).fill_(-1.0)
    np.testing.assert_array_equal(a[:5], [0, 1, -1, -1, -1])
    s = t.sum().numpy()
    assert s == a.sum()
    del t
    gc.collect()
    assert sys.getrefcount(a) == before  # the deleter ran, once


def test_numpy_views_and_dtypes():
    base = np.arange(24, dtype=np.int32).reshape(4, 6)
    v = base[1:, ::2]  # offset and a non-unit stride
    t = wick.from_dlpack(v)
    assert t.shape == (3, 3) and t.strides == (6, 2)
    np.testing.assert_array_equal(t.numpy(), v)
    for npdt, dt in [(np.uint8, DType.U8), (np.uint32, DType.U32), (np.int16, DType.I16),
                     (np.int64, DType.I64), (np.float16, DType.F16), (np.float32, DType.F32)]:
        assert wick.from_dlpack(np.zeros(3, npdt)).dtype == dt
    if NUMPY2:  # NumPy < 2 does not export bool
        assert wick.from_dlpack(np.zeros(3, np.bool_)).dtype == DType.U8
    with pytest.raises(WickError) as e:
        wick.from_dlpack(np.zeros(3, np.complex64))
    assert e.value.status == Status.DTYPE
    with pytest.raises(WickError) as e:
        wick.from_dlpack(np.zeros(3, np.int8))
    assert e.value.status == Status.DTYPE
    with pytest.raises(WickError) as e:  # negative strides: wick layouts have none
        wick.from_dlpack(np.arange(4.0)[::-1])
    assert e.value.status == Status.LAYOUT


@pytest.mark.skipif(not NUMPY2, reason="NumPy < 2 exports no read-only arrays (no DLPack 1.x)")
def test_read_only_flag():
    a = np.arange(4, dtype=np.float32)
    a.flags.writeable = False
    t = wick.from_dlpack(a)  # numpy marks it DLPACK_FLAG_BITMASK_READ_ONLY
    assert t.is_readonly()
    np.testing.assert_array_equal((t * 2.0).numpy(), a * 2)  # reading is fine
    with pytest.raises(WickError) as e:
        t.fill_(0.0)
    assert e.value.status == Status.INVALID_ARGUMENT and "read-only" in e.value.message
    cap = t.__dlpack__(max_version=(1, 0))  # re-export keeps the flag
    p, versioned = _dlpack.open_capsule(cap)
    m = wick.DLManagedTensorVersioned.from_address(p)
    assert versioned and m.flags & 1
    with pytest.raises(WickError) as e:  # the legacy struct cannot say read-only
        t.__dlpack__()
    assert e.value.status == Status.NOT_SUPPORTED


def test_capsules():
    t = wick.from_numpy(np.arange(6, dtype=np.float32))
    cap = t.__dlpack__(max_version=(1, 1))
    p, versioned = _dlpack.open_capsule(cap)
    m = wick.DLManagedTensorVersioned.from_address(p)
    assert versioned and m.version.major == 1 and m.dl_tensor.data == t.data_ptr()
    assert m.dl_tensor.dtype.code == 2 and m.dl_tensor.dtype.bits == 32
    u = wick.from_dlpack(cap)  # a capsule is consumed once
    assert u.data_ptr() == t.data_ptr()
    with pytest.raises(ValueError):
        wick.from_dlpack(cap)
    legacy = t.__dlpack__()
    assert not _dlpack.open_capsule(legacy)[1]
    del legacy  # never consumed: its destructor calls the deleter
    gc.collect()
    copied = t.__dlpack__(max_version=(1, 1), copy=True)
    pc, _ = _dlpack.open_capsule(copied)
    mc = wick.DLManagedTensorVersioned.from_address(pc)
    assert mc.flags & 2 and mc.dl_tensor.data != t.data_ptr()
    assert t.__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(2, 0))


def test_bf16_and_f8_cross_as_raw_types():
    t = wick.from_numpy(np.array([1.0, -2.0], np.float32)).to_dtype(DType.BF16)
    cap = t.__dlpack__(max_version=(1, 1))
    m = wick.DLManagedTensorVersioned.from_address(_dlpack.open_capsule(cap)[0])
    assert (m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits) == (4, 16)  # kDLBfloat
    back = wick.from_dlpack(cap)
    assert back.dtype == DType.BF16
    np.testing.assert_array_equal(back.numpy(), [0x3F80, 0xC000])
    f8 = wick.from_numpy(np.array([1.0], np.float32)).to_dtype(DType.F8E4M3)
    m = wick.DLManagedTensorVersioned.from_address(
        _dlpack.open_capsule(f8.__dlpack__(max_version=(1, 1)))[0])
    assert (m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits) == (10, 8)  # kDLFloat8_e4m3fn
