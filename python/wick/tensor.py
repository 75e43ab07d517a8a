"""Device and Tensor: a small Pythonic layer over the C API (wick._lib).

A Tensor is (storage, layout, dtype): a wick storage shared by every view made from it, and a
wk_layout saying how this view reads it (dims, strides in elements, offset). Layout helpers
(transpose, narrow, broadcast_to, reshape of contiguous views) make new views without copying;
ops (methods named as in Candle and wick.h) return new contiguous tensors, except the in-place
ones, whose names end in "_" (fill_, scatter_set_, scatter_add_set_, copy_strided_src, copy2d).

NumPy dtypes: u8 uint8, u32 uint32, i16 int16, i32 int32, i64 int64, f16 float16, f32 float32,
f64 float64; bf16 and f8e4m3, which NumPy lacks, cross as their raw bits (uint16 / uint8):
numpy() of a bf16 tensor gives uint16 bits, from_numpy(bits, dtype=BF16) takes them; convert with
to_dtype(F32) for values. bool arrays become u8.
"""
import ctypes
from ctypes import byref, c_int32, c_int64, c_void_p

import numpy as np

from . import _dlpack
from ._enums import Backend, DType, Op, QType
from ._lib import (DLPACK_FLAG_BITMASK_IS_COPIED, DLPACK_FLAG_BITMASK_READ_ONLY, WK_MAX_RANK,
                   ConvParams, DLDevice, DLManagedTensor, DLManagedTensorVersioned, Layout,
                   PoolParams, kDLCPU, kDLCUDA, kDLCUDAHost, kDLROCM, kDLROCMHost, lib)

_NP = {DType.U8: np.uint8, DType.U32: np.uint32, DType.I16: np.int16, DType.I32: np.int32,
       DType.I64: np.int64, DType.F16: np.float16, DType.F32: np.float32, DType.F64: np.float64,
       DType.BF16: np.uint16, DType.F8E4M3: np.uint8}  # the last two: raw bits
_FROM_NP = {np.dtype(np.uint8): DType.U8, np.dtype(np.uint32): DType.U32,
            np.dtype(np.int16): DType.I16, np.dtype(np.int32): DType.I32,
            np.dtype(np.int64): DType.I64, np.dtype(np.float16): DType.F16,
            np.dtype(np.float32): DType.F32, np.dtype(np.float64): DType.F64,
            np.dtype(np.bool_): DType.U8}


def numpy_dtype(dt):
    """The NumPy dtype that holds a wick dtype's elements (raw bits for bf16 and f8e4m3)."""
    return np.dtype(_NP[DType(dt)])


# ---------------------------------------------------------------- devices
class Device:
    """An open wick device ("cpu", "cuda:N", "rocm:N", "auto"). Use wick.device(spec): it keeps
    one handle per spec. The handle is closed when the last tensor on it and this object go."""

    def __init__(self, spec="cpu"):
        h = c_void_p()
        lib().wk_device_open(byref(h), spec.encode())
        self._h = h
        self.spec = spec

    def __del__(self):
        if getattr(self, "_h", None) and lib is not None:
            lib().wk_device_close(self._h)
            self._h = None

    @property
    def handle(self):
        return self._h

    @property
    def name(self):
        return lib().wk_device_name(self._h).decode()

    @property
    def backend(self):
        return Backend(lib().wk_device_backend(self._h))

    @property
    def ordinal(self):
        return lib().wk_device_ordinal(self._h)

    def __repr__(self):
        return f"Device({self.spec!r}: {self.name})"

    def __eq__(self, other):
        return isinstance(other, Device) and bool(lib().wk_device_same(self._h, other._h))

    def __hash__(self):
        return hash((int(self.backend), self.ordinal))

    def synchronize(self):
        lib().wk_device_synchronize(self._h)

    def supports(self, op, dtype):
        return bool(lib().wk_device_supports(self._h, int(op), int(dtype)))

    def supports_quant(self, op, qtype, dtype):
        return bool(lib().wk_device_supports_quant(self._h, int(op), int(qtype), int(dtype)))

    @property
    def stream(self):
        """The native stream wick queues this device's work on, as an int (None on the CPU)."""
        s = c_void_p()
        lib().wk_device_stream(byref(s), self._h)
        return s.value

    def dlpack_device(self):
        d = DLDevice()
        lib().wk_dlpack_device(byref(d), self._h)
        return (d.device_type, d.device_id)

    def set_seed(self, seed):
        lib().wk_device_set_seed(self._h, seed)

    def _rand(self, fn, shape, dtype, a, b):
        shape = tuple(int(d) for d in shape)
        out = c_void_p()
        fn(byref(out), self._h, int(dtype), int(np.prod(shape, dtype=np.int64)), a, b)
        return Tensor(_Storage(out, self), _contiguous(shape))

    def rand_uniform(self, shape, dtype=DType.F32, lo=0.0, up=1.0):
        return self._rand(lib().wk_rand_uniform, shape, dtype, lo, up)

    def rand_normal(self, shape, dtype=DType.F32, mean=0.0, std=1.0):
        return self._rand(lib().wk_rand_normal, shape, dtype, mean, std)

    def zeros(self, shape, dtype=DType.F32):
        shape = tuple(int(d) for d in shape)
        out = c_void_p()
        lib().wk_storage_zeros(byref(out), self._h, int(dtype), int(np.prod(shape, dtype=np.int64)))
        return Tensor(_Storage(out, self), _contiguous(shape))

    def empty(self, shape, dtype=DType.F32):
        shape = tuple(int(d) for d in shape)
        out = c_void_p()
        lib().wk_storage_alloc_uninit(byref(out), self._h, int(dtype),
                                      int(np.prod(shape, dtype=np.int64)))
        return Tensor(_Storage(out, self), _contiguous(shape))


_devices = {}


def device(spec="cpu"):
    """The shared Device for a spec (a Device passes through)."""
    if isinstance(spec, Device):
        return spec
    if spec == "cuda":
        spec = "cuda:0"
    if spec not in _devices:
        _devices[spec] = Device(spec)
    return _devices[spec]


_device = device


def devices():
    """Specs of every device present: "cpu", then "cuda:N" and "rocm:N". The simt devices (GPU
    kernels run on the CPU, for tests) are not listed; wick.device("simt:0") opens one."""
    out = []
    for kind in Backend:
        if kind == Backend.SIMT:
            continue
        n = ctypes.c_int()
        lib().wk_backend_device_count(byref(n), None, int(kind))
        name = lib().wk_backend_name(int(kind)).decode()
        out += ["cpu"] if kind == Backend.CPU else [f"{name}:{i}" for i in range(n.value)]
    return out


# ---------------------------------------------------------------- storages and layouts
class _Storage:
    """One reference on a wk_storage, dropped when collected; keeps its Device open."""
    __slots__ = ("h", "device", "__weakref__")

    def __init__(self, h, dev):
        self.h = h
        self.device = dev

    def __del__(self):
        if self.h and lib is not None:  # lib is None only late in interpreter shutdown
            lib().wk_storage_free(self.h)
            self.h = None

    @property
    def dtype(self):
        return DType(lib().wk_storage_dtype(self.h))

    def __len__(self):
        return lib().wk_storage_len(self.h)


def _contiguous(shape):
    l = Layout()
    dims = (c_int64 * max(len(shape), 1))(*shape)
    lib().wk_layout_contiguous(byref(l), len(shape), dims)
    return l


def _copy_layout(l):
    c = Layout()
    ctypes.pointer(c)[0] = l
    return c


def _broadcast_layout(l, shape):
    out = Layout()
    dims = (c_int64 * max(len(shape), 1))(*shape)
    lib().wk_layout_broadcast(byref(out), byref(l), len(shape), dims)
    return out


def _pair(v):
    return (int(v), int(v)) if isinstance(v, (int, np.integer)) else (int(v[0]), int(v[1]))


def _new(fn, dev, *args):
    """Calls an op writing a new storage first (wk_storage **out) and wraps it."""
    out = c_void_p()
    fn(byref(out), *args)
    return _Storage(out, dev)


# ---------------------------------------------------------------- tensors
class Tensor:
    """A view (layout) of a wick storage. Construct with from_numpy, from_dlpack, or a Device's
    zeros/empty/rand_*."""

    def __init__(self, storage, layout):
        self._s = storage
        self._l = layout

    # ---- facts
    @property
    def dtype(self):
        return self._s.dtype

    @property
    def device(self):
        return self._s.device

    @property
    def layout(self):
        return _copy_layout(self._l)

    @property
    def shape(self):
        return tuple(self._l.dims[k] for k in range(self._l.rank))

    @property
    def strides(self):
        return tuple(self._l.strides[k] for k in range(self._l.rank))

    @property
    def offset(self):
        return self._l.offset

    @property
    def ndim(self):
        return self._l.rank

    def numel(self):
        return lib().wk_layout_elem_count(byref(self._l))

    def is_contiguous(self):
        return bool(lib().wk_layout_is_contiguous(byref(self._l)))

    @property
    def storage_handle(self):
        return self._s.h

    def data_ptr(self):
        """Address of the first element of this view (host or device memory)."""
        base = lib().wk_storage_data(self._s.h) or 0
        return base + self._l.offset * numpy_dtype(self.dtype).itemsize

    def is_readonly(self):
        return bool(lib().wk_storage_is_readonly(self._s.h))

    def __repr__(self):
        return (f"Tensor(shape={self.shape}, dtype={self.dtype.name.lower()}, "
                f"device={self.device.spec!r})")

    # ---- host transfers
    @classmethod
    def from_numpy(cls, arr, device="cpu", dtype=None):
        """A copy of arr on device. dtype=None keeps arr's dtype; BF16 from uint16 and F8E4M3
        from uint8 take raw bits; any other dtype converts the values with wick's to_dtype."""
        dev = _device(device)
        arr = np.asarray(arr)
        if arr.dtype == np.bool_:
            arr = arr.astype(np.uint8)
        raw = dtype is not None and numpy_dtype(dtype) == arr.dtype
        if not raw and arr.dtype not in _FROM_NP:
            arr = arr.astype(np.float64 if arr.dtype.kind == "f" else np.int64)
        arr = np.ascontiguousarray(arr)
        dt = DType(dtype) if raw else _FROM_NP[arr.dtype]
        out = c_void_p()
        lib().wk_storage_from_host(byref(out), dev.handle, int(dt), arr.ctypes.data_as(c_void_p),
                                   arr.size)
        t = cls(_Storage(out, dev), _contiguous(arr.shape))
        return t if dtype is None or DType(dtype) == dt else t.to_dtype(dtype)

    def numpy(self):
        """A host copy as a NumPy array (raw bits for bf16 / f8e4m3)."""
        c = self.contiguous()
        out = np.empty(c.shape, dtype=numpy_dtype(self.dtype))
        if c._l.offset == 0 and len(c._s) == out.size:
            lib().wk_storage_to_host(out.ctypes.data_as(c_void_p), out.size, c._s.h)
        else:
            c = c.clone()
            lib().wk_storage_to_host(out.ctypes.data_as(c_void_p), out.size, c._s.h)
        return out

    def tolist(self):
        return self.numpy().tolist()

    def to_device(self, dev):
        """A copy on another device (through the host)."""
        return Tensor.from_numpy(self.numpy(), device=dev, dtype=self.dtype)

    # ---- layout helpers (views, no copy)
    def transpose(self, d0, d1):
        l = Layout()
        lib().wk_layout_transpose(byref(l), byref(self._l), d0 % self.ndim, d1 % self.ndim)
        return Tensor(self._s, l)

    @property
    def T(self):
        return self.transpose(-2, -1)

    def narrow(self, dim, start, length):
        l = Layout()
        lib().wk_layout_narrow(byref(l), byref(self._l), dim % self.ndim, start, length)
        return Tensor(self._s, l)

    def broadcast_to(self, shape):
        return Tensor(self._s, _broadcast_layout(self._l, tuple(int(d) for d in shape)))

    def reshape(self, *shape):
        """A view with new dims of a contiguous tensor (a copy first when not contiguous)."""
        shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
        shape = tuple(int(d) for d in shape)
        if -1 in shape:
            known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
            shape = tuple(self.numel() // known if d == -1 else d for d in shape)
        if int(np.prod(shape, dtype=np.int64)) != self.numel():
            raise ValueError(f"reshape: {self.shape} has {self.numel()} elements, not {shape}")
        c = self.contiguous()
        l = _contiguous(shape)
        l.offset = c._l.offset
        return Tensor(c._s, l)

    def contiguous(self):
        """Itself when row-major contiguous, else a contiguous copy."""
        return self if self.is_contiguous() else self.copy()

    def copy(self):
        """A contiguous copy of this view (copy_strided_src into a new storage)."""
        out = self.device.empty(self.shape, self.dtype)
        self.copy_strided_src(out, 0)
        return out

    def clone(self):
        """A copy of the whole storage with the same layout (wk_storage_clone)."""
        return Tensor(_new(lib().wk_storage_clone, self.device, self._s.h), self.layout)

    # ---- elementwise
    def _unary(self, op):
        return Tensor(_new(lib().wk_unary, self.device, int(op), self._s.h, byref(self._l)),
                      _contiguous(self.shape))

    def affine(self, mul, add):
        return Tensor(_new(lib().wk_affine, self.device, self._s.h, byref(self._l), mul, add),
                      _contiguous(self.shape))

    def powf(self, e):
        return Tensor(_new(lib().wk_powf, self.device, self._s.h, byref(self._l), e),
                      _contiguous(self.shape))

    def elu(self, alpha):
        return Tensor(_new(lib().wk_elu, self.device, self._s.h, byref(self._l), alpha),
                      _contiguous(self.shape))

    def _operand(self, other):
        if isinstance(other, Tensor):
            return other
        if self.dtype in (DType.BF16, DType.F8E4M3):
            return Tensor.from_numpy(np.array(other, np.float32), self.device).to_dtype(self.dtype)
        return Tensor.from_numpy(np.array(other, numpy_dtype(self.dtype)), self.device)

    def _pair_op(self, fn, op, other):
        b = self._operand(other)
        shape = np.broadcast_shapes(self.shape, b.shape)
        la, lb = _broadcast_layout(self._l, shape), _broadcast_layout(b._l, shape)
        return Tensor(_new(fn, self.device, int(op), self._s.h, byref(la), b._s.h, byref(lb)),
                      _contiguous(shape))

    def binary(self, op, other):
        """op in ADD..GEGLU_ERF; NumPy broadcasting; a Python number becomes a scalar of self's dtype."""
        return self._pair_op(lib().wk_binary, op, other)

    def cmp(self, op, other):
        """op in EQ..GE; a u8 tensor of 0/1."""
        return self._pair_op(lib().wk_cmp, op, other)

    def add(self, o): return self.binary(Op.ADD, o)
    def sub(self, o): return self.binary(Op.SUB, o)
    def mul(self, o): return self.binary(Op.MUL, o)
    def div(self, o): return self.binary(Op.DIV, o)
    def maximum(self, o): return self.binary(Op.MAXIMUM, o)
    def minimum(self, o): return self.binary(Op.MINIMUM, o)
    def swiglu(self, up): return self.binary(Op.SWIGLU, up)        # silu(self) * up
    def geglu(self, up): return self.binary(Op.GEGLU, up)          # gelu(self) * up
    def geglu_erf(self, up): return self.binary(Op.GEGLU_ERF, up)  # gelu_erf(self) * up
    def eq(self, o): return self.cmp(Op.EQ, o)
    def ne(self, o): return self.cmp(Op.NE, o)
    def lt(self, o): return self.cmp(Op.LT, o)
    def le(self, o): return self.cmp(Op.LE, o)
    def gt(self, o): return self.cmp(Op.GT, o)
    def ge(self, o): return self.cmp(Op.GE, o)
    __add__, __sub__, __mul__, __truediv__ = add, sub, mul, div

    def __neg__(self):
        return self.neg()

    def __matmul__(self, o):
        return self.matmul(o)

    def where_cond(self, on_true, on_false):
        """self (u8/u32/i64) != 0 ? on_true : on_false, broadcast together."""
        t, f = on_true, self._operand(on_false) if not isinstance(on_false, Tensor) else on_false
        shape = np.broadcast_shapes(self.shape, t.shape, f.shape)
        lc, lt, lf = (_broadcast_layout(x._l, shape) for x in (self, t, f))
        return Tensor(_new(lib().wk_where_cond, self.device, self._s.h, byref(lc), t._s.h,
                           byref(lt), f._s.h, byref(lf)), _contiguous(shape))

    def to_dtype(self, dtype):
        return Tensor(_new(lib().wk_to_dtype, self.device, self._s.h, byref(self._l), int(dtype)),
                      _contiguous(self.shape))

    def fill_(self, value):
        """In place (const_set): every element of this view becomes value (a number; for bf16,
        f16 and f8e4m3 rounded by wick's conversion)."""
        dt = self.dtype
        if dt == DType.BF16:
            raw = np.array(lib().wk_f32_to_bf16(float(value)), np.uint16)
        elif dt == DType.F8E4M3:
            raw = np.array(lib().wk_f32_to_f8e4m3(float(value)), np.uint8)
        else:
            raw = np.array(value, numpy_dtype(dt))
        lib().wk_const_set(self._s.h, byref(self._l), raw.ctypes.data_as(c_void_p))
        return self

    # ---- reductions
    def _reduce(self, op, dims, keepdim):
        dims = tuple(range(self.ndim)) if dims is None else (
            (dims,) if isinstance(dims, int) else tuple(dims))
        dims = tuple(sorted(d % self.ndim for d in dims)) if self.ndim else ()
        arr = (c_int32 * max(len(dims), 1))(*dims)
        kept = tuple(1 if k in dims else d for k, d in enumerate(self.shape))
        t = Tensor(_new(lib().wk_reduce, self.device, int(op), self._s.h, byref(self._l), arr,
                        len(dims)), _contiguous(kept))
        return t if keepdim else t.reshape(tuple(d for k, d in enumerate(self.shape)
                                                 if k not in dims))

    def sum(self, dims=None, keepdim=False): return self._reduce(Op.SUM, dims, keepdim)
    def min(self, dims=None, keepdim=False): return self._reduce(Op.MIN, dims, keepdim)
    def max(self, dims=None, keepdim=False): return self._reduce(Op.MAX, dims, keepdim)
    def argmin(self, dims=None, keepdim=False): return self._reduce(Op.ARGMIN, dims, keepdim)
    def argmax(self, dims=None, keepdim=False): return self._reduce(Op.ARGMAX, dims, keepdim)

    # ---- movement (in place on dst)
    def copy_strided_src(self, dst, dst_offset=0):
        """dst's storage [dst_offset, ...) <- this view's elements in row-major order."""
        lib().wk_copy_strided_src(dst._s.h, dst_offset, self._s.h, byref(self._l))
        return dst

    def copy2d(self, dst, d1, d2, src_stride1, dst_stride1, src_offset, dst_offset):
        """Candle's copy2d between the two storages (element units)."""
        lib().wk_copy2d(dst._s.h, self._s.h, d1, d2, src_stride1, dst_stride1, src_offset,
                        dst_offset)
        return dst

    # ---- linear algebra
    def matmul(self, other):
        """(..., m, k) @ (..., k, n); batch dims broadcast."""
        a, b = self, other
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        la = _broadcast_layout(a._l, batch + a.shape[-2:])
        lb = _broadcast_layout(b._l, batch + b.shape[-2:])
        shape = batch + (a.shape[-2], b.shape[-1])
        return Tensor(_new(lib().wk_matmul, self.device, a._s.h, byref(la), b._s.h, byref(lb)),
                      _contiguous(shape))

    # ---- convolution, pooling, upsampling
    def _conv(self, fn, w, stride, padding, dilation, output_padding, groups, two_d):
        p = ConvParams()
        for name, v in (("stride", stride), ("padding", padding), ("dilation", dilation),
                        ("output_padding", output_padding)):
            getattr(p, name)[:] = _pair(v) if two_d else (int(v), 0)
        p.groups = groups
        out = c_void_p()
        fn(byref(out), self._s.h, byref(self._l), w._s.h, byref(w._l), byref(p))
        s = _Storage(out, self.device)
        return Tensor(s, _contiguous(self._out_shape(fn, w, p, two_d, len(s))))

    def _out_shape(self, fn, w, p, two_d, n):
        sp = self.shape[2:]
        k = w.shape[2:]
        transposed = fn in (lib().wk_conv_transpose1d, lib().wk_conv_transpose2d)
        dims = []
        for i in range(2 if two_d else 1):
            if transposed:
                dims.append((sp[i] - 1) * p.stride[i] - 2 * p.padding[i] +
                            p.dilation[i] * (k[i] - 1) + p.output_padding[i] + 1)
            else:
                dims.append((sp[i] + 2 * p.padding[i] - p.dilation[i] * (k[i] - 1) - 1)
                            // p.stride[i] + 1)
        cout = w.shape[1] * p.groups if transposed else w.shape[0]
        return (self.shape[0], cout) + tuple(dims)

    def conv1d(self, w, stride=1, padding=0, dilation=1, groups=1):
        return self._conv(lib().wk_conv1d, w, stride, padding, dilation, 0, groups, False)

    def conv_transpose1d(self, w, stride=1, padding=0, output_padding=0, dilation=1, groups=1):
        return self._conv(lib().wk_conv_transpose1d, w, stride, padding, dilation,
                          output_padding, groups, False)

    def conv2d(self, w, stride=1, padding=0, dilation=1, groups=1):
        return self._conv(lib().wk_conv2d, w, stride, padding, dilation, 0, groups, True)

    def conv_transpose2d(self, w, stride=1, padding=0, output_padding=0, dilation=1, groups=1):
        return self._conv(lib().wk_conv_transpose2d, w, stride, padding, dilation,
                          output_padding, groups, True)

    def _pool(self, fn, kernel, stride):
        p = PoolParams()
        p.kernel[:] = _pair(kernel)
        p.stride[:] = _pair(kernel if stride is None else stride)
        n, c, h, w = self.shape
        shape = (n, c, (h - p.kernel[0]) // p.stride[0] + 1, (w - p.kernel[1]) // p.stride[1] + 1)
        return Tensor(_new(fn, self.device, self._s.h, byref(self._l), byref(p)),
                      _contiguous(shape))

    def avg_pool2d(self, kernel, stride=None):
        return self._pool(lib().wk_avg_pool2d, kernel, stride)

    def max_pool2d(self, kernel, stride=None):
        return self._pool(lib().wk_max_pool2d, kernel, stride)

    def upsample_nearest1d(self, l_out):
        return Tensor(_new(lib().wk_upsample_nearest1d, self.device, self._s.h, byref(self._l),
                           l_out), _contiguous(self.shape[:2] + (l_out,)))

    def upsample_nearest2d(self, h_out, w_out):
        return Tensor(_new(lib().wk_upsample_nearest2d, self.device, self._s.h, byref(self._l),
                           h_out, w_out), _contiguous(self.shape[:2] + (h_out, w_out)))

    def upsample_bilinear2d(self, h_out, w_out, align_corners=False, scale_h=0.0, scale_w=0.0):
        return Tensor(_new(lib().wk_upsample_bilinear2d, self.device, self._s.h, byref(self._l),
                           h_out, w_out, int(bool(align_corners)), scale_h, scale_w),
                      _contiguous(self.shape[:2] + (h_out, w_out)))

    # ---- indexing
    def index_select(self, ids, dim):
        dim %= self.ndim
        shape = self.shape[:dim] + (ids.numel(),) + self.shape[dim + 1:]
        return Tensor(_new(lib().wk_index_select, self.device, self._s.h, byref(self._l),
                           ids._s.h, byref(ids._l), dim), _contiguous(shape))

    def gather(self, ids, dim):
        return Tensor(_new(lib().wk_gather, self.device, self._s.h, byref(self._l), ids._s.h,
                           byref(ids._l), dim % self.ndim), _contiguous(ids.shape))

    def scatter_set_(self, ids, src, dim):
        lib().wk_scatter_set(self._s.h, byref(self._l), ids._s.h, byref(ids._l), src._s.h,
                             byref(src._l), dim % self.ndim)
        return self

    def scatter_add_set_(self, ids, src, dim):
        lib().wk_scatter_add_set(self._s.h, byref(self._l), ids._s.h, byref(ids._l), src._s.h,
                                 byref(src._l), dim % self.ndim)
        return self

    def index_add(self, ids, src, dim):
        return Tensor(_new(lib().wk_index_add, self.device, self._s.h, byref(self._l), ids._s.h,
                           byref(ids._l), src._s.h, byref(src._l), dim % self.ndim),
                      _contiguous(self.shape))

    # ---- fused ops
    def softmax_last_dim(self):
        return Tensor(_new(lib().wk_softmax_last_dim, self.device, self._s.h, byref(self._l)),
                      _contiguous(self.shape))

    def rms_norm(self, alpha, eps):
        return Tensor(_new(lib().wk_rms_norm, self.device, self._s.h, byref(self._l), alpha._s.h,
                           byref(alpha._l), eps), _contiguous(self.shape))

    def layer_norm(self, alpha, beta, eps):
        return Tensor(_new(lib().wk_layer_norm, self.device, self._s.h, byref(self._l),
                           alpha._s.h, byref(alpha._l), beta._s.h, byref(beta._l), eps),
                      _contiguous(self.shape))

    def _add_norm(self, fn, r, *params):
        """(self + r, norm(self + r)): two new tensors (wk_add_rms_norm / wk_add_layer_norm)."""
        shape = self.shape
        if tuple(r.shape) != tuple(shape):
            raise ValueError(f"add_norm: r has shape {r.shape}, self {shape}")
        s, o = c_void_p(), c_void_p()
        fn(byref(s), byref(o), self._s.h, byref(self._l), r._s.h, byref(r._l), *params)
        return (Tensor(_Storage(s, self.device), _contiguous(shape)),
                Tensor(_Storage(o, self.device), _contiguous(shape)))

    def add_rms_norm(self, r, alpha, eps):
        return self._add_norm(lib().wk_add_rms_norm, r, alpha._s.h, byref(alpha._l), eps)

    def add_layer_norm(self, r, alpha, beta, eps):
        return self._add_norm(lib().wk_add_layer_norm, r, alpha._s.h, byref(alpha._l), beta._s.h,
                              byref(beta._l), eps)

    def _rope(self, fn, cos, sin):
        return Tensor(_new(fn, self.device, self._s.h, byref(self._l), cos._s.h, byref(cos._l),
                           sin._s.h, byref(sin._l)), _contiguous(self.shape))

    def rope(self, cos, sin): return self._rope(lib().wk_rope, cos, sin)
    def rope_i(self, cos, sin): return self._rope(lib().wk_rope_i, cos, sin)
    def rope_thd(self, cos, sin): return self._rope(lib().wk_rope_thd, cos, sin)

    def arg_sort_last_dim(self, ascending=True):
        return Tensor(_new(lib().wk_arg_sort_last_dim, self.device, self._s.h, byref(self._l),
                           int(bool(ascending))), _contiguous(self.shape))

    # ---- quantized
    def quantize(self, qtype):
        """The blocks of this f32 CPU tensor quantized to qtype, as a u8 tensor of bytes."""
        s = _new(lib().wk_quantize, self.device, int(qtype), self._s.h, byref(self._l))
        return Tensor(s, _contiguous((len(s),)))

    def qmatmul(self, w, qtype, n, k):
        """self (..., m, k) @ W^T with W (n, k) quantized to qtype in the u8 tensor w."""
        return Tensor(_new(lib().wk_qmatmul, self.device, self._s.h, byref(self._l), w._s.h,
                           int(qtype), n, k), _contiguous(self.shape[:-1] + (n,)))

    # ---- DLPack (the Python array API's protocol)
    def __dlpack_device__(self):
        return self.device.dlpack_device()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule viewing this tensor (versioned when the consumer asks for >= 1.0).
        stream: the consumer's stream (CUDA/ROCm); unless it is -1, wick's queued work on this
        device is finished first (a device synchronize), so the consumer may read at once.
        dl_device: another device than this one is served with a copy only to the CPU, and
        only if copy is not False. copy=True always exports a fresh copy (IS_COPIED)."""
        src, copied = self, False
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            if copy is False or tuple(dl_device)[0] != kDLCPU:
                raise BufferError(f"wick: cannot export a {self.device.spec} tensor to DLPack "
                                  f"device {tuple(dl_device)} without a copy to the CPU")
            src, copied = Tensor.from_numpy(self.numpy(), "cpu", dtype=self.dtype), True
        elif copy:
            src, copied = self.copy(), True
        if src.device.backend != Backend.CPU and stream != -1:
            src.device.synchronize()
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        if versioned:
            p = ctypes.POINTER(DLManagedTensorVersioned)()
            lib().wk_dlpack_export(byref(p), src._s.h, byref(src._l))
            if copied:
                p.contents.flags |= DLPACK_FLAG_BITMASK_IS_COPIED
        else:
            p = ctypes.POINTER(DLManagedTensor)()
            lib().wk_dlpack_export_legacy(byref(p), src._s.h, byref(src._l))
        return _dlpack.make_capsule(p, versioned)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)


def _unary_method(op):
    def f(self):
        return self._unary(op)
    f.__name__ = op.name.lower()
    f.__doc__ = f"{op.name.lower()} of every element (wk_unary), a new contiguous tensor."
    return f


for _op in Op:
    if _op <= Op.SIGMOID:
        setattr(Tensor, _op.name.lower(), _unary_method(_op))


# ---------------------------------------------------------------- module-level constructors
def from_numpy(arr, device="cpu", dtype=None):
    return Tensor.from_numpy(arr, device, dtype)


_DL_SPECS = {kDLCPU: "cpu", kDLCUDAHost: "cpu", kDLROCMHost: "cpu", kDLCUDA: "cuda",
             kDLROCM: "rocm"}


def from_dlpack(obj, device=None):
    """A Tensor viewing obj's memory (no copy): obj has __dlpack__ (a NumPy array, a PyTorch
    tensor, ...) or is an unconsumed DLPack capsule. The device is obj's (opened as needed); on
    CUDA/ROCm the producer is asked to order its work before wick's stream."""
    if hasattr(obj, "__dlpack__"):
        dtype_, dev_id = obj.__dlpack_device__()
        if device is None:
            base = _DL_SPECS.get(int(dtype_))
            if base is None:
                raise BufferError(f"wick: DLPack device type {int(dtype_)} is not one wick runs on")
            device = base if base == "cpu" else f"{base}:{int(dev_id)}"
        dev = _device(device)
        stream = dev.stream if dev.backend != Backend.CPU else None
        try:
            cap = obj.__dlpack__(stream=stream, max_version=(1, 1))
        except TypeError:  # a producer older than the 2023 protocol
            cap = obj.__dlpack__(stream=stream)
    else:
        cap = obj
        dev = _device(device or "cpu")
    ptr, versioned = _dlpack.open_capsule(cap)
    out, l = c_void_p(), Layout()
    fn = lib().wk_dlpack_import if versioned else lib().wk_dlpack_import_legacy
    fn(byref(out), byref(l), dev.handle, ptr)  # raises on failure: the capsule keeps the tensor
    _dlpack.mark_consumed(cap, versioned)
    return Tensor(_Storage(out, dev), l)


def dequantize(q, qtype, n, dtype=DType.F32):
    """n elements of dtype decoded from the blocks in the u8 tensor q."""
    return Tensor(_new(lib().wk_dequantize, q.device, int(dtype), q._s.h, int(qtype), n),
                  _contiguous((n,)))


def qembedding(ids, w, qtype, rows, k, dtype=DType.F32):
    """Rows ids of W (rows, k) quantized to qtype in the u8 tensor w, decoded: (ids dims..., k)."""
    return Tensor(_new(lib().wk_qembedding, ids.device, int(dtype), ids._s.h, byref(ids._l),
                       w._s.h, int(qtype), rows, k), _contiguous(ids.shape + (k,)))


__all__ = ["Device", "Tensor", "device", "devices", "from_numpy", "from_dlpack", "dequantize",
           "qembedding", "numpy_dtype", "WK_MAX_RANK", "QType", "DLPACK_FLAG_BITMASK_READ_ONLY"]
