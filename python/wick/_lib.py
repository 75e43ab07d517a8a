"""The C API of wick, one to one, through ctypes.

Every public function of include/wick.h and include/wick_dlpack.h is declared here with its exact
argument and result types (tests/test_api.py checks the list against the headers). Functions that
return a wk_status raise WickError on failure, carrying the status, its name and wk_last_error().

The library is found, in order: the WICK_LIBRARY environment variable (a path to libwick.so), a
libwick.so next to this file, then the system's search (ctypes.util.find_library("wick")).
"""
import ctypes
import ctypes.util
import os
from ctypes import (POINTER, Structure, c_char_p, c_double, c_float, c_int, c_int8, c_int16,
                    c_int32, c_int64, c_size_t, c_uint, c_uint8, c_uint16, c_uint32, c_uint64,
                    c_void_p)

WK_MAX_RANK = 8
WK_GGUF_MAX_DIMS = 4


class WickError(RuntimeError):
    """A failed wick call: .status (the wk_status value), .name (its wk_status_string) and
    .message (wk_last_error() of the call)."""

    def __init__(self, status, name, message, func=None):
        self.status = status
        self.name = name
        self.message = message
        self.func = func
        super().__init__(f"{func + ': ' if func else ''}{name}: {message}")


# ---------------------------------------------------------------- structs (wick.h)
class Layout(Structure):
    """wk_layout: rank, dims, strides (elements), offset (elements)."""
    _fields_ = [("rank", c_int32), ("dims", c_int64 * WK_MAX_RANK),
                ("strides", c_int64 * WK_MAX_RANK), ("offset", c_int64)]


class ConvParams(Structure):
    _fields_ = [("stride", c_int32 * 2), ("padding", c_int32 * 2), ("dilation", c_int32 * 2),
                ("output_padding", c_int32 * 2), ("groups", c_int32)]


class PoolParams(Structure):
    _fields_ = [("kernel", c_int32 * 2), ("stride", c_int32 * 2)]


ALLOC_FN = ctypes.CFUNCTYPE(c_void_p, c_size_t, c_void_p)
FREE_FN = ctypes.CFUNCTYPE(None, c_void_p, c_void_p)


class Allocator(Structure):
    _fields_ = [("alloc", ALLOC_FN), ("free", FREE_FN), ("user", c_void_p)]


class GgufValue(Structure):
    _fields_ = [("g", c_void_p), ("pos", c_uint64), ("node", c_int64), ("type", c_int32)]


class SafetensorsTensorInfo(Structure):
    _fields_ = [("name", c_char_p), ("dtype_name", c_char_p), ("has_dtype", c_int32),
                ("dtype", c_int), ("rank", c_int32), ("dims", c_int64 * WK_MAX_RANK),
                ("elems", c_int64), ("offset", c_uint64), ("nbytes", c_uint64)]


class GgufTensorInfo(Structure):
    _fields_ = [("name", c_char_p), ("n_dims", c_int32), ("ne", c_int64 * WK_GGUF_MAX_DIMS),
                ("dims", c_int64 * WK_GGUF_MAX_DIMS), ("qtype", c_int), ("elems", c_int64),
                ("offset", c_uint64), ("nbytes", c_uint64)]


# ---------------------------------------------------------------- structs (DLPack 1.1 ABI)
class DLPackVersion(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int32),
                ("dtype", DLDataType), ("shape", POINTER(c_int64)),
                ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class DLManagedTensor(Structure):
    pass


DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p),
                            ("deleter", ctypes.CFUNCTYPE(None, POINTER(DLManagedTensor)))]


class DLManagedTensorVersioned(Structure):
    pass


DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion), ("manager_ctx", c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, POINTER(DLManagedTensorVersioned))),
    ("flags", c_uint64), ("dl_tensor", DLTensor)]

DLPACK_FLAG_BITMASK_READ_ONLY = 1
DLPACK_FLAG_BITMASK_IS_COPIED = 2
kDLCPU, kDLCUDA, kDLCUDAHost, kDLROCM, kDLROCMHost = 1, 2, 3, 10, 11

# ---------------------------------------------------------------- the functions
_p = c_void_p            # opaque handles: wk_storage*, wk_device*, wk_gguf*, wk_safetensors*, ...
_pp = POINTER(c_void_p)  # their out-arguments
_L = POINTER(Layout)
_S = "status"            # result: wk_status, checked

# name: (result, argument types)
SIGNATURES = {
    # version, status, dtypes, ops
    "wk_version": (c_uint, []),
    "wk_version_string": (c_char_p, []),
    "wk_status_string": (c_char_p, [c_int]),
    "wk_last_error": (c_char_p, []),
    "wk_dtype_name": (c_char_p, [c_int]),
    "wk_dtype_size": (c_size_t, [c_int]),
    "wk_dtype_is_float": (c_int, [c_int]),
    "wk_f32_to_f16": (c_uint16, [c_float]),
    "wk_f16_to_f32": (c_float, [c_uint16]),
    "wk_f32_to_bf16": (c_uint16, [c_float]),
    "wk_bf16_to_f32": (c_float, [c_uint16]),
    "wk_f32_to_f8e4m3": (c_uint8, [c_float]),
    "wk_f8e4m3_to_f32": (c_float, [c_uint8]),
    "wk_op_name": (c_char_p, [c_int]),
    "wk_op_defined": (c_int, [c_int, c_int]),
    # layouts
    "wk_layout_contiguous": (_S, [_L, c_int32, POINTER(c_int64)]),
    "wk_layout_transpose": (_S, [_L, _L, c_int32, c_int32]),
    "wk_layout_narrow": (_S, [_L, _L, c_int32, c_int64, c_int64]),
    "wk_layout_broadcast": (_S, [_L, _L, c_int32, POINTER(c_int64)]),
    "wk_layout_elem_count": (c_int64, [_L]),
    "wk_layout_is_contiguous": (c_int, [_L]),
    # devices, random numbers, the allocation hook
    "wk_backend_device_count": (_S, [POINTER(c_int), POINTER(c_char_p), c_int]),
    "wk_backend_name": (c_char_p, [c_int]),
    "wk_device_open": (_S, [_pp, c_char_p]),
    "wk_device_close": (None, [_p]),
    "wk_device_backend": (c_int, [_p]),
    "wk_device_ordinal": (c_int, [_p]),
    "wk_device_name": (c_char_p, [_p]),
    "wk_device_same": (c_int, [_p, _p]),
    "wk_device_synchronize": (_S, [_p]),
    "wk_device_supports": (c_int, [_p, c_int, c_int]),
    "wk_device_code_source": (c_int, [_p]),
    "wk_device_warmup": (_S, [_p, c_int]),
    "wk_kernel_cache_info": (None, [POINTER(c_char_p), POINTER(c_char_p)]),
    "wk_device_set_seed": (_S, [_p, c_uint64]),
    "wk_rand_uniform": (_S, [_pp, _p, c_int, c_size_t, c_double, c_double]),
    "wk_rand_normal": (_S, [_pp, _p, c_int, c_size_t, c_double, c_double]),
    "wk_set_allocator": (_S, [POINTER(Allocator)]),
    # storage
    "wk_storage_alloc_uninit": (_S, [_pp, _p, c_int, c_size_t]),
    "wk_storage_zeros": (_S, [_pp, _p, c_int, c_size_t]),
    "wk_storage_from_host": (_S, [_pp, _p, c_int, c_void_p, c_size_t]),
    "wk_storage_to_host": (_S, [c_void_p, c_size_t, _p]),
    "wk_storage_clone": (_S, [_pp, _p]),
    "wk_storage_free": (None, [_p]),
    "wk_storage_dtype": (c_int, [_p]),
    "wk_storage_len": (c_size_t, [_p]),
    "wk_storage_device": (_p, [_p]),
    # elementwise
    "wk_unary": (_S, [_pp, c_int, _p, _L]),
    "wk_affine": (_S, [_pp, _p, _L, c_double, c_double]),
    "wk_powf": (_S, [_pp, _p, _L, c_double]),
    "wk_elu": (_S, [_pp, _p, _L, c_double]),
    "wk_binary": (_S, [_pp, c_int, _p, _L, _p, _L]),
    "wk_cmp": (_S, [_pp, c_int, _p, _L, _p, _L]),
    "wk_where_cond": (_S, [_pp, _p, _L, _p, _L, _p, _L]),
    "wk_to_dtype": (_S, [_pp, _p, _L, c_int]),
    "wk_const_set": (_S, [_p, _L, c_void_p]),
    # reductions, movement, matmul, options
    "wk_reduce": (_S, [_pp, c_int, _p, _L, POINTER(c_int32), c_int32]),
    "wk_copy_strided_src": (_S, [_p, c_size_t, _p, _L]),
    "wk_copy2d": (_S, [_p, _p, c_size_t, c_size_t, c_size_t, c_size_t, c_size_t, c_size_t]),
    "wk_matmul": (_S, [_pp, _p, _L, _p, _L]),
    "wk_set_option": (_S, [c_int, c_int]),
    "wk_get_option": (c_int, [c_int]),
    # convolution, pooling, upsampling
    "wk_conv1d": (_S, [_pp, _p, _L, _p, _L, POINTER(ConvParams)]),
    "wk_conv_transpose1d": (_S, [_pp, _p, _L, _p, _L, POINTER(ConvParams)]),
    "wk_conv2d": (_S, [_pp, _p, _L, _p, _L, POINTER(ConvParams)]),
    "wk_conv_transpose2d": (_S, [_pp, _p, _L, _p, _L, POINTER(ConvParams)]),
    "wk_avg_pool2d": (_S, [_pp, _p, _L, POINTER(PoolParams)]),
    "wk_max_pool2d": (_S, [_pp, _p, _L, POINTER(PoolParams)]),
    "wk_upsample_nearest1d": (_S, [_pp, _p, _L, c_int64]),
    "wk_upsample_nearest2d": (_S, [_pp, _p, _L, c_int64, c_int64]),
    "wk_upsample_bilinear2d": (_S, [_pp, _p, _L, c_int64, c_int64, c_int, c_double, c_double]),
    # indexing
    "wk_index_select": (_S, [_pp, _p, _L, _p, _L, c_int32]),
    "wk_gather": (_S, [_pp, _p, _L, _p, _L, c_int32]),
    "wk_scatter_set": (_S, [_p, _L, _p, _L, _p, _L, c_int32]),
    "wk_scatter_add_set": (_S, [_p, _L, _p, _L, _p, _L, c_int32]),
    "wk_index_add": (_S, [_pp, _p, _L, _p, _L, _p, _L, c_int32]),
    # fused
    "wk_softmax_last_dim": (_S, [_pp, _p, _L]),
    "wk_rms_norm": (_S, [_pp, _p, _L, _p, _L, c_float]),
    "wk_layer_norm": (_S, [_pp, _p, _L, _p, _L, _p, _L, c_float]),
    "wk_add_rms_norm": (_S, [_pp, _pp, _p, _L, _p, _L, _p, _L, c_float]),
    "wk_add_layer_norm": (_S, [_pp, _pp, _p, _L, _p, _L, _p, _L, _p, _L, c_float]),
    "wk_rope": (_S, [_pp, _p, _L, _p, _L, _p, _L]),
    "wk_rope_i": (_S, [_pp, _p, _L, _p, _L, _p, _L]),
    "wk_rope_thd": (_S, [_pp, _p, _L, _p, _L, _p, _L]),
    "wk_arg_sort_last_dim": (_S, [_pp, _p, _L, c_int]),
    "wk_decode_attention": (_S, [_pp, _p, _L, _p, _L, _p, _L, c_float, c_int]),
    "wk_decode_attention_lens": (_S, [_pp, _p, _L, _p, _L, _p, _L, _p, _L, c_float, c_int]),
    "wk_rope_kv_append": (_S, [_pp, c_int, _p, _L, _p, _L, _p, _L, _p, _L, _p, _L, _p, _L, _p, _L,
                               _p, _L, c_int64]),
    # graphs (GPU devices)
    "wk_graph_begin": (_S, [_p]),
    "wk_graph_end": (_S, [_p, _pp]),
    "wk_graph_launch": (_S, [_p]),
    "wk_graph_free": (None, [_p]),
    # quantized
    "wk_qtype_name": (c_char_p, [c_int]),
    "wk_qtype_block_elems": (c_int64, [c_int]),
    "wk_qtype_block_bytes": (c_int64, [c_int]),
    "wk_quantize": (_S, [_pp, c_int, _p, _L]),
    "wk_dequantize": (_S, [_pp, c_int, _p, c_int, c_int64]),
    "wk_qmatmul": (_S, [_pp, _p, _L, _p, c_int, c_int64, c_int64]),
    "wk_qembedding": (_S, [_pp, c_int, _p, _L, _p, c_int, c_int64, c_int64]),
    "wk_act_bytes": (c_int64, [c_int64, c_int64]),
    "wk_quantize_act": (_S, [_pp, _p, _L]),
    "wk_add_rms_norm_act": (_S, [_pp, _pp, _pp, _p, _L, _p, _L, _p, _L, c_float]),
    "wk_binary_act": (_S, [_pp, c_int, _p, _L, _p, _L]),
    "wk_qmatmul_act": (_S, [_pp, c_int, _p, c_int64, _p, c_int, c_int64, c_int64]),
    "wk_device_supports_quant": (c_int, [_p, c_int, c_int, c_int]),
    # GGUF: reader
    "wk_gguf_type_name": (c_char_p, [c_int]),
    "wk_gguf_type_size": (c_size_t, [c_int]),
    "wk_gguf_open": (_S, [_pp, c_char_p]),
    "wk_gguf_close": (None, [_p]),
    "wk_gguf_version": (c_uint32, [_p]),
    "wk_gguf_alignment": (c_uint32, [_p]),
    "wk_gguf_data_offset": (c_uint64, [_p]),
    "wk_gguf_file_size": (c_uint64, [_p]),
    "wk_gguf_kv_count": (c_int64, [_p]),
    "wk_gguf_key": (c_char_p, [_p, c_int64]),
    "wk_gguf_find_key": (c_int64, [_p, c_char_p]),
    "wk_gguf_kv_value": (_S, [POINTER(GgufValue), _p, c_int64]),
    "wk_gguf_value_type": (c_int, [GgufValue]),
    "wk_gguf_get_u8": (_S, [POINTER(c_uint8), GgufValue]),
    "wk_gguf_get_i8": (_S, [POINTER(c_int8), GgufValue]),
    "wk_gguf_get_u16": (_S, [POINTER(c_uint16), GgufValue]),
    "wk_gguf_get_i16": (_S, [POINTER(c_int16), GgufValue]),
    "wk_gguf_get_u32": (_S, [POINTER(c_uint32), GgufValue]),
    "wk_gguf_get_i32": (_S, [POINTER(c_int32), GgufValue]),
    "wk_gguf_get_u64": (_S, [POINTER(c_uint64), GgufValue]),
    "wk_gguf_get_i64": (_S, [POINTER(c_int64), GgufValue]),
    "wk_gguf_get_f32": (_S, [POINTER(c_float), GgufValue]),
    "wk_gguf_get_f64": (_S, [POINTER(c_double), GgufValue]),
    "wk_gguf_get_bool": (_S, [POINTER(c_int), GgufValue]),
    "wk_gguf_get_string": (_S, [POINTER(c_void_p), POINTER(c_uint64), GgufValue]),
    "wk_gguf_array_info": (_S, [POINTER(c_int), POINTER(c_uint64), GgufValue]),
    "wk_gguf_array_elem": (_S, [POINTER(GgufValue), GgufValue, c_uint64]),
    "wk_gguf_array_data": (_S, [POINTER(c_void_p), GgufValue]),
    "wk_gguf_tensor_count": (c_int64, [_p]),
    "wk_gguf_tensor_info_get": (_S, [POINTER(GgufTensorInfo), _p, c_int64]),
    "wk_gguf_find_tensor": (c_int64, [_p, c_char_p]),
    "wk_gguf_tensor_data": (c_void_p, [_p, c_int64]),
    "wk_gguf_load_tensor": (_S, [_pp, _p, c_int64, _p]),
    # GGUF: writer
    "wk_gguf_writer_new": (_S, [_pp]),
    "wk_gguf_writer_free": (None, [_p]),
    "wk_gguf_writer_add": (_S, [_p, c_char_p, c_int, c_void_p]),
    "wk_gguf_writer_add_string": (_S, [_p, c_char_p, c_char_p, c_uint64]),
    "wk_gguf_writer_add_array": (_S, [_p, c_char_p, c_int, c_void_p, c_uint64]),
    "wk_gguf_writer_begin_array": (_S, [_p, c_char_p, c_int]),
    "wk_gguf_writer_end_array": (_S, [_p]),
    "wk_gguf_writer_add_tensor": (_S, [_p, c_char_p, c_int, c_int32, POINTER(c_int64),
                                       c_void_p, c_uint64]),
    "wk_gguf_writer_write": (_S, [_p, c_char_p, c_uint32]),
    # safetensors: reader
    "wk_safetensors_open": (_S, [_pp, c_char_p]),
    "wk_safetensors_close": (None, [_p]),
    "wk_safetensors_file_size": (c_uint64, [_p]),
    "wk_safetensors_data_offset": (c_uint64, [_p]),
    "wk_safetensors_tensor_count": (c_int64, [_p]),
    "wk_safetensors_tensor_info_get": (_S, [POINTER(SafetensorsTensorInfo), _p, c_int64]),
    "wk_safetensors_find_tensor": (c_int64, [_p, c_char_p]),
    "wk_safetensors_tensor_data": (c_void_p, [_p, c_int64]),
    "wk_safetensors_load_tensor": (_S, [_pp, _p, c_int64, _p, c_int]),
    "wk_safetensors_metadata_count": (c_int64, [_p]),
    "wk_safetensors_metadata_get": (_S, [POINTER(c_char_p), POINTER(c_char_p), _p, c_int64]),
    "wk_safetensors_metadata_find": (c_char_p, [_p, c_char_p]),
    # safetensors: writer
    "wk_safetensors_writer_new": (_S, [_pp]),
    "wk_safetensors_writer_free": (None, [_p]),
    "wk_safetensors_writer_add_metadata": (_S, [_p, c_char_p, c_char_p]),
    "wk_safetensors_writer_add_tensor": (_S, [_p, c_char_p, c_int, c_int32, POINTER(c_int64),
                                              c_void_p, c_uint64]),
    "wk_safetensors_writer_write": (_S, [_p, c_char_p]),
    # interop (wick_dlpack.h)
    "wk_storage_retain": (None, [_p]),
    "wk_storage_data": (c_void_p, [_p]),
    "wk_storage_is_readonly": (c_int, [_p]),
    "wk_device_stream": (_S, [_pp, _p]),
    "wk_dlpack_device": (_S, [POINTER(DLDevice), _p]),
    "wk_dlpack_dtype": (_S, [POINTER(DLDataType), c_int]),
    "wk_dlpack_to_dtype": (_S, [POINTER(c_int), DLDataType]),
    "wk_dlpack_export": (_S, [POINTER(POINTER(DLManagedTensorVersioned)), _p, _L]),
    "wk_dlpack_export_legacy": (_S, [POINTER(POINTER(DLManagedTensor)), _p, _L]),
    "wk_dlpack_import": (_S, [_pp, _L, _p, c_void_p]),
    "wk_dlpack_import_legacy": (_S, [_pp, _L, _p, c_void_p]),
}


def _find_library():
    env = os.environ.get("WICK_LIBRARY")
    if env:
        return env
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libwick.so")
    if os.path.exists(here):
        return here
    found = ctypes.util.find_library("wick")
    if found:
        return found
    raise OSError("libwick.so not found: set WICK_LIBRARY to its path, or install wick "
                  "(cmake --install) where the dynamic loader finds it")


class _Lib:
    """The loaded library: one attribute per C function (lib.wk_unary(...)). Status-returning
    functions raise WickError instead of returning a non-zero status."""

    def __init__(self, path):
        self.path = path
        self.dll = ctypes.CDLL(path)
        for name, (res, args) in SIGNATURES.items():
            fn = getattr(self.dll, name)
            fn.argtypes = args
            if res == _S:
                fn.restype = c_int
                fn.errcheck = self._check
            else:
                fn.restype = res
            setattr(self, name, fn)

    def _check(self, status, fn, args):
        if status != 0:
            msg = self.dll.wk_last_error().decode("utf-8", "replace")
            name = self.dll.wk_status_string(status).decode("utf-8", "replace")
            raise WickError(status, name, msg, fn.__name__)
        return status


_lib = None


def lib():
    """The loaded libwick (loaded on first use)."""
    global _lib
    if _lib is None:
        _lib = _Lib(_find_library())
    return _lib
