"""The binding itself: every C function bound, enums equal to the header's values, errors carry
the status and wk_last_error(), scalar conversions, layouts, storages and the GGUF calls."""
import ctypes
import os
import re

import numpy as np
import pytest

import wick
from wick import DType, Status, WickError

INCLUDE = os.path.join(os.path.dirname(__file__), "..", "..", "include")


def header_text():
    if not os.path.isdir(INCLUDE):
        pytest.skip("the headers are not beside this checkout")
    return "".join(open(os.path.join(INCLUDE, h)).read() for h in ("wick.h", "wick_dlpack.h"))


def test_every_function_is_bound():
    names = set(re.findall(r"WK_API\s+[^;(]*?\b(wk_\w+)\s*\(", header_text()))
    assert len(names) > 130
    assert names == set(wick.SIGNATURES), (names ^ set(wick.SIGNATURES))
    for n in names:
        assert callable(getattr(wick.lib(), n))


@pytest.mark.parametrize("enum,prefix", [(wick.Status, "WK_"), (wick.DType, "WK_DTYPE_"),
                                         (wick.Op, "WK_OP_"), (wick.QType, "WK_QTYPE_"),
                                         (wick.Backend, "WK_BACKEND_"),
                                         (wick.GgufType, "WK_GGUF_TYPE_"),
                                         (wick.Option, "WK_OPTION_")])
def test_enums_match_the_header(enum, prefix):
    text = header_text()
    for m in enum:
        name = prefix + ("ERR_" + m.name if enum is wick.Status and m.name != "OK" else m.name)
        found = re.search(rf"\b{name}\s*=\s*(\d+)", text)
        assert found and int(found.group(1)) == m.value, name


def test_version_and_names():
    assert wick.version() == "0.1.0"
    assert wick.lib().wk_version() == 100
    assert wick.lib().wk_dtype_name(DType.BF16) == b"bf16"
    assert wick.lib().wk_dtype_size(DType.F8E4M3) == 1
    assert wick.lib().wk_op_name(wick.Op.GELU_ERF) == b"gelu_erf"
    assert wick.lib().wk_qtype_block_elems(wick.QType.Q4_K) == 256
    assert wick.lib().wk_qtype_block_bytes(wick.QType.Q8_0) == 34  # f16 scale + 32 int8


def test_error_carries_status_and_message():
    a = wick.from_numpy(np.ones((2, 3), np.float32))
    b = wick.from_numpy(np.ones((4, 5), np.float32))
    with pytest.raises(WickError) as e:
        a.matmul(b)
    assert e.value.status == Status.SHAPE
    assert "WK_ERR_SHAPE" in e.value.name
    assert "matmul" in e.value.message and e.value.message in str(e.value)
    with pytest.raises(WickError) as e:
        wick.Device("tpu:3")
    assert e.value.status == Status.INVALID_ARGUMENT
    with pytest.raises(WickError) as e:  # exp of an integer tensor is not defined
        wick.from_numpy(np.arange(3, dtype=np.int32)).exp()
    assert e.value.status == Status.DTYPE


def test_scalar_conversions():
    L = wick.lib()
    # f16: numpy's float16 is IEEE binary16 with round-to-nearest-even
    for x in [0.1, -2.5, 65504.0, 1e-7, 3.14159]:
        assert L.wk_f32_to_f16(x) == np.float16(np.float32(x)).view(np.uint16)
    # bf16: the top 16 bits of the f32, rounded to nearest even (written out for 1 + 2^-8 ties)
    assert L.wk_f32_to_bf16(1.0) == 0x3F80
    assert L.wk_f32_to_bf16(1.0 + 2 ** -8) == 0x3F80          # tie, even stays
    assert L.wk_f32_to_bf16(1.0 + 3 * 2 ** -8) == 0x3F82      # tie, rounds up to even
    assert L.wk_bf16_to_f32(0xC040) == -3.0
    # f8 e4m3fn: 448 is the max, 1.0 is 0x38, saturating
    assert L.wk_f32_to_f8e4m3(1.0) == 0x38
    assert L.wk_f32_to_f8e4m3(1000.0) == 0x7E
    assert L.wk_f8e4m3_to_f32(0x7E) == 448.0


def test_layout_helpers():
    base = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = wick.from_numpy(base)
    assert t.shape == (2, 3, 4) and t.strides == (12, 4, 1) and t.is_contiguous()
    v = t.transpose(0, 2)
    assert v.shape == (4, 3, 2) and v.strides == (1, 4, 12) and not v.is_contiguous()
    np.testing.assert_array_equal(v.numpy(), base.transpose(2, 1, 0))
    n = t.narrow(2, 1, 2)
    assert n.offset == 1 and n.shape == (2, 3, 2)
    np.testing.assert_array_equal(n.numpy(), base[:, :, 1:3])
    b = wick.from_numpy(np.arange(3, dtype=np.float32)).broadcast_to((2, 3))
    assert b.strides == (0, 1)
    np.testing.assert_array_equal(b.numpy(), np.broadcast_to(np.arange(3), (2, 3)))
    np.testing.assert_array_equal(v.reshape(-1).numpy(), base.transpose(2, 1, 0).ravel())
    with pytest.raises(WickError) as e:
        t.narrow(0, 1, 5)
    assert e.value.status == Status.INDEX_OUT_OF_RANGE
    l = wick.Layout()
    wick.lib().wk_layout_contiguous(ctypes.byref(l), 2, (ctypes.c_int64 * 2)(5, 7))
    assert wick.lib().wk_layout_elem_count(ctypes.byref(l)) == 35


@pytest.mark.parametrize("dt", list(DType))
def test_storage_round_trip_every_dtype(dev, dt):
    raw = np.arange(10).astype(wick.numpy_dtype(dt))  # raw bits for bf16 / f8
    t = wick.from_numpy(raw, dev, dtype=dt)
    assert t.dtype == dt and t.device == dev
    np.testing.assert_array_equal(t.numpy(), raw)
    c = t.clone()
    np.testing.assert_array_equal(c.numpy(), raw)


def test_devices_and_options():
    assert wick.devices()[0] == "cpu"
    cpu = wick.device("cpu")
    assert cpu.backend == wick.Backend.CPU and cpu.stream is None
    assert cpu.dlpack_device() == (1, 0)
    assert cpu.supports(wick.Op.MATMUL, DType.F32)
    assert not cpu.supports(wick.Op.EXP, DType.I32)
    assert cpu.supports_quant(wick.Op.QMATMUL, wick.QType.Q4_0, DType.F32)
    old = wick.get_option(wick.Option.DETERMINISTIC)
    wick.set_option(wick.Option.DETERMINISTIC, 1)
    assert wick.get_option(wick.Option.DETERMINISTIC) == 1
    wick.set_option(wick.Option.DETERMINISTIC, old)


def test_gguf_write_and_read(tmp_path):
    L = wick.lib()
    w = ctypes.c_void_p()
    L.wk_gguf_writer_new(ctypes.byref(w))
    try:
        v = ctypes.c_uint32(7)
        L.wk_gguf_writer_add(w, b"answer", wick.GgufType.U32, ctypes.byref(v))
        L.wk_gguf_writer_add_string(w, b"name", b"wick", 4)
        data = np.arange(64, dtype=np.float32)
        dims = (ctypes.c_int64 * 2)(2, 32)
        L.wk_gguf_writer_add_tensor(w, b"t", wick.QType.F32, 2, dims,
                                    data.ctypes.data_as(ctypes.c_void_p), data.nbytes)
        path = str(tmp_path / "x.gguf").encode()
        L.wk_gguf_writer_write(w, path, 3)
    finally:
        L.wk_gguf_writer_free(w)
    g = ctypes.c_void_p()
    L.wk_gguf_open(ctypes.byref(g), path)
    try:
        assert L.wk_gguf_version(g) == 3 and L.wk_gguf_kv_count(g) == 2
        val = wick.GgufValue()
        L.wk_gguf_kv_value(ctypes.byref(val), g, L.wk_gguf_find_key(g, b"answer"))
        out = ctypes.c_uint32()
        L.wk_gguf_get_u32(ctypes.byref(out), val)
        assert out.value == 7
        with pytest.raises(WickError) as e:  # no conversions: a u32 is not an i64
            L.wk_gguf_get_i64(ctypes.byref(ctypes.c_int64()), val)
        assert e.value.status == Status.DTYPE
        info = wick.GgufTensorInfo()
        L.wk_gguf_tensor_info_get(ctypes.byref(info), g, 0)
        assert info.name == b"t" and tuple(info.dims[:2]) == (2, 32) and info.nbytes == 256
        s = ctypes.c_void_p()
        L.wk_gguf_load_tensor(ctypes.byref(s), g, 0, wick.device("cpu").handle)
        got = np.empty(64, np.float32)
        L.wk_storage_to_host(got.ctypes.data_as(ctypes.c_void_p), 64, s)
        L.wk_storage_free(s)
        np.testing.assert_array_equal(got, data)
    finally:
        L.wk_gguf_close(g)
    with pytest.raises(WickError) as e:
        L.wk_gguf_open(ctypes.byref(g), str(tmp_path / "missing.gguf").encode())
    assert e.value.status == Status.IO


def test_safetensors_read_what_the_package_writes(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
    b = np.array([[1, -2], [3, 40000]], dtype=np.int64)
    path = str(tmp_path / "x.safetensors")
    st.save_file({"a": a, "b": b}, path, metadata={"format": "np"})
    L = wick.lib()
    f = ctypes.c_void_p()
    L.wk_safetensors_open(ctypes.byref(f), path.encode())
    try:
        assert L.wk_safetensors_tensor_count(f) == 2
        assert L.wk_safetensors_metadata_find(f, b"format") == b"np"
        i = L.wk_safetensors_find_tensor(f, b"a")
        info = wick.SafetensorsTensorInfo()
        L.wk_safetensors_tensor_info_get(ctypes.byref(info), f, i)
        assert (info.name, info.dtype_name, info.rank) == (b"a", b"F32", 3)
        assert tuple(info.dims[:3]) == (2, 3, 4) and info.nbytes == 96
        s = ctypes.c_void_p()  # loaded as f64: converted by wk_to_dtype on the device
        L.wk_safetensors_load_tensor(ctypes.byref(s), f, i, wick.device("cpu").handle, DType.F64)
        got = np.empty(24, np.float64)
        L.wk_storage_to_host(got.ctypes.data_as(ctypes.c_void_p), 24, s)
        L.wk_storage_free(s)
        np.testing.assert_array_equal(got, a.reshape(-1).astype(np.float64))
        assert L.wk_safetensors_find_tensor(f, b"missing") == -1
    finally:
        L.wk_safetensors_close(f)


def test_safetensors_write_what_the_package_reads(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    L = wick.lib()
    w = ctypes.c_void_p()
    L.wk_safetensors_writer_new(ctypes.byref(w))
    data = (np.arange(6, dtype=np.float32) - 2.5).reshape(3, 2)
    path = str(tmp_path / "w.safetensors")
    try:
        L.wk_safetensors_writer_add_metadata(w, b"k", b"v")
        dims = (ctypes.c_int64 * 2)(3, 2)
        L.wk_safetensors_writer_add_tensor(w, b"t", DType.F32, 2, dims,
                                           data.ctypes.data_as(ctypes.c_void_p), data.nbytes)
        with pytest.raises(WickError) as e:  # names are unique
            L.wk_safetensors_writer_add_tensor(w, b"t", DType.F32, 2, dims,
                                               data.ctypes.data_as(ctypes.c_void_p), data.nbytes)
        assert e.value.status == Status.INVALID_ARGUMENT
        L.wk_safetensors_writer_write(w, path.encode())
    finally:
        L.wk_safetensors_writer_free(w)
    back = st.load_file(path)
    assert list(back) == ["t"]
    np.testing.assert_array_equal(back["t"], data)
    with open(path, "rb") as fh:
        assert fh.read() == st.save({"t": data}, metadata={"k": "v"})


def test_decode_attention_matches_numpy(rng):
    B, Hq, Hkv, Lq, Lk, D = 1, 4, 2, 2, 9, 8
    q = rng.standard_normal((B, Hq, Lq, D)).astype(np.float32)
    k = rng.standard_normal((B, Hkv, Lk, D)).astype(np.float32)
    v = rng.standard_normal((B, Hkv, Lk, D)).astype(np.float32)
    scale = 1 / np.sqrt(D)
    L = wick.lib()
    tq, tk, tv = (wick.from_numpy(a) for a in (q, k, v))
    out = ctypes.c_void_p()
    L.wk_decode_attention(ctypes.byref(out), tq.storage_handle, ctypes.byref(tq.layout),
                          tk.storage_handle, ctypes.byref(tk.layout), tv.storage_handle,
                          ctypes.byref(tv.layout), scale, 1)
    got = np.empty(B * Hq * Lq * D, np.float32)
    L.wk_storage_to_host(got.ctypes.data_as(ctypes.c_void_p), got.size, out)
    L.wk_storage_free(out)
    want = np.empty((B, Hq, Lq, D))
    for h in range(Hq):  # grouped-query: head h reads kv head h // (Hq // Hkv); causal
        kh, vh = k[0, h // (Hq // Hkv)].astype(np.float64), v[0, h // (Hq // Hkv)]
        for i in range(Lq):
            n = Lk - Lq + i + 1
            s = kh[:n] @ q[0, h, i].astype(np.float64) * scale
            p = np.exp(s - s.max())
            want[0, h, i] = (p / p.sum()) @ vh[:n]
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-6)


def test_graph_capture_is_for_gpus():
    with pytest.raises(WickError) as e:
        wick.lib().wk_graph_begin(wick.device("cpu").handle)
    assert e.value.status == Status.NOT_SUPPORTED
