"""wick for Python: the C library (libwick.so) through ctypes, no compiled extension.

    import numpy as np, wick
    x = wick.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    y = (x.exp() + 1.0).sum(dims=1)          # a wick Tensor; ops run on x's device
    print(y.numpy())

wick.lib() is the whole C API one to one (every function of wick.h and wick_dlpack.h); Tensor is a
small layer above it (storage + layout + dtype) with the ops as methods, NumPy transfers and the
DLPack protocol (__dlpack__, __dlpack_device__, wick.from_dlpack). Errors raise wick.WickError with
.status (a wick.Status) and .message (wk_last_error()).
"""
from ._enums import Backend, DType, GgufType, Op, Option, QType, Status
from ._lib import (ConvParams, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLTensor,
                   GgufTensorInfo, GgufValue, Layout, PoolParams, SafetensorsTensorInfo, WickError,
                   lib, SIGNATURES)
from .tensor import (Device, Tensor, dequantize, device, devices, from_dlpack, from_numpy,
                     numpy_dtype, qembedding)

__version__ = "0.1.0"


def version():
    """The version string of the loaded libwick."""
    return lib().wk_version_string().decode()


def set_option(opt, value):
    lib().wk_set_option(int(opt), int(value))


def get_option(opt):
    return lib().wk_get_option(int(opt))


__all__ = ["Backend", "DType", "GgufType", "Op", "Option", "QType", "Status", "ConvParams",
           "DLDevice", "DLManagedTensor", "DLManagedTensorVersioned", "DLTensor",
           "GgufTensorInfo", "GgufValue", "Layout", "PoolParams", "SafetensorsTensorInfo", "WickError", "lib",
           "SIGNATURES", "Device", "Tensor", "dequantize", "device", "devices", "from_dlpack",
           "from_numpy", "numpy_dtype", "qembedding", "version", "set_option", "get_option"]
