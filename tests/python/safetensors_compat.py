#!/usr/bin/env python3
"""safetensors_compat.py ST_PYTOOL TMPDIR: wick's safetensors reader and writer against the Python
`safetensors` package (the reference implementation), both directions (ctest safetensors_python).

  1. wick writes a file (st_pytool write); the Python package reads it (deserialize) and must see
     the same names, dtypes, shapes, bytes and metadata; the Python package writing the same
     content (serialize) must produce the same file byte for byte.
  2. The Python package writes files (serialize with every dtype it knows, and
     safetensors.numpy.save_file); wick's reader (st_pytool dump) must list the same tensors,
     metadata and bytes.
Exits 77 (ctest: skipped) with a message when the package or numpy is not importable.
"""
import ctypes
import os
import subprocess
import sys

try:
    import numpy as np
    import safetensors
    import safetensors.numpy as stnp
    from safetensors._safetensors_rust import TensorSpec, deserialize, serialize
except ImportError as e:  # pragma: no cover
    print(f"skip: the Python safetensors package (and numpy) are needed: {e} "
          f"(python: {sys.executable}; `pip install safetensors numpy`)")
    sys.exit(77)

# name -> (header dtype, TensorSpec dtype, element bytes)
DT = {
    "U8": ("uint8", 1), "U32": ("uint32", 4), "I16": ("int16", 2), "I32": ("int32", 4),
    "I64": ("int64", 8), "BF16": ("bfloat16", 2), "F16": ("float16", 2), "F32": ("float32", 4),
    "F64": ("float64", 8), "F8_E4M3": ("float8_e4m3fn", 1), "I8": ("int8", 1),
    "BOOL": ("bool", 1), "U16": ("uint16", 2), "U64": ("uint64", 8), "F8_E5M2": ("float8_e5m2", 1),
}
# the content st_pytool writes (same table there): tensor k holds bytes (i*7 + k*13 + 1) & 255
CONTENT = [
    ("w.u8", "U8", [5]), ("w.u32", "U32", [2, 3]), ("w.i16", "I16", [4]),
    ("w.i32", "I32", [1, 2, 2]), ("w.i64", "I64", [3]), ("w.bf16", "BF16", [2, 2]),
    ("w.f16", "F16", [7]), ("w.f32", "F32", [2, 3]), ("w.f64", "F64", [2]),
    ("w.f8", "F8_E4M3", [9]), ("scalar", "F32", []), ("empty", "F16", [0, 3]),
    ("na\u00efve.\u540d", "U8", [2]),
]
META = {"format": "wick \u2713"}

failures = 0


def check(cond, msg):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", msg)
    return cond


def nbytes(dt, shape):
    n = DT[dt][1]
    for d in shape:
        n *= d
    return n


def content_bytes(k, dt, shape):
    return bytes(((i * 7 + k * 13 + 1) & 255) for i in range(nbytes(dt, shape)))


_keep = []


def spec(dt, shape, data):
    buf = ctypes.create_string_buffer(data, max(len(data), 1))
    _keep.append(buf)
    return TensorSpec(dtype=DT[dt][0], shape=list(shape), data_ptr=ctypes.addressof(buf),
                      data_len=len(data))


def python_writes(tensors, metadata):
    """tensors: list of (name, dt, shape, bytes) -> the file's bytes by the Python package."""
    return bytes(serialize({n: spec(dt, s, b) for n, dt, s, b in tensors}, metadata))


def wick_dump(tool, path):
    out = subprocess.run([tool, "dump", path], check=True, capture_output=True, text=True).stdout
    meta, tensors = {}, {}
    for line in out.splitlines():
        f = line.split(" ")
        if f[0] == "M":
            meta[bytes.fromhex(f[1]).decode()] = bytes.fromhex(f[2]).decode() if f[2] != "-" else ""
        elif f[0] == "T":
            shape = [] if f[3] == "-" else [int(x) for x in f[3].split(",")]
            data = b"" if f[5] == "-" else bytes.fromhex(f[5])
            tensors[bytes.fromhex(f[1]).decode()] = (f[2], shape, data)
    return meta, tensors


def main():
    tool, tmp = sys.argv[1], sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    print(f"python {sys.version.split()[0]}, safetensors {safetensors.__version__}, "
          f"numpy {np.__version__}")
    # 1. wick writes, Python reads; Python writes the same, bytes equal
    wpath = os.path.join(tmp, "wick_written.safetensors")
    subprocess.run([tool, "write", wpath], check=True)
    with open(wpath, "rb") as f:
        wick_file = f.read()
    header_len = int.from_bytes(wick_file[:8], "little")
    # deserialize returns [(name, {"dtype": <header name>, "shape", "data"})]
    got = {n: v for n, v in deserialize(wick_file)}
    want = [(n, dt, s, content_bytes(k, dt, s)) for k, (n, dt, s) in enumerate(CONTENT)]
    check(len(got) == len(want), f"Python reads {len(got)} tensors from wick's file, want {len(want)}")
    for n, dt, s, b in want:
        v = got.get(n)
        if check(v is not None, f"tensor {n!r} missing in Python's view of wick's file"):
            check(v["dtype"] == dt, f"{n}: dtype {v['dtype']} want {dt}")
            check(list(v["shape"]) == s, f"{n}: shape {v['shape']} want {s}")
            check(bytes(v["data"]) == b, f"{n}: bytes differ")
    with safetensors.safe_open(wpath, framework="numpy") as f:
        check(f.metadata() == META, f"metadata {f.metadata()} want {META}")
        a = f.get_tensor("w.f32")
        check(a.dtype == np.float32 and a.shape == (2, 3) and a.tobytes() == want[7][3],
              "safe_open(numpy) of w.f32")
    py_file = python_writes(want, META)
    check(py_file == wick_file, f"wick's file ({len(wick_file)} bytes, header {header_len}) differs "
          f"from the Python package's ({len(py_file)} bytes) for the same content")
    check((8 + header_len) % 8 == 0, "data section not 8-aligned")
    # 2. Python writes, wick reads: every dtype the package has beside wick's
    extra = want + [("x.i8", "I8", [3], bytes([1, 255, 3])), ("x.bool", "BOOL", [2], bytes([0, 1])),
                    ("x.u16", "U16", [2], bytes([1, 2, 3, 4])),
                    ("x.u64", "U64", [1], bytes(range(8))), ("x.e5m2", "F8_E5M2", [2], bytes([60, 188]))]
    meta2 = {"a": "1", "b\u00e9": "\u540d\n\"q\""}
    ppath = os.path.join(tmp, "python_written.safetensors")
    with open(ppath, "wb") as f:
        f.write(python_writes(extra, meta2))
    meta, tensors = wick_dump(tool, ppath)
    check(meta == meta2, f"wick reads metadata {meta}, want {meta2}")
    check(len(tensors) == len(extra), f"wick reads {len(tensors)} tensors, want {len(extra)}")
    for n, dt, s, b in extra:
        v = tensors.get(n)
        if check(v is not None, f"wick misses tensor {n!r}"):
            check(v == (dt, s, b), f"{n}: wick reads {v[0]} {v[1]} ({len(v[2])} bytes), want {dt} {s}")
    # numpy's own writer, a larger file
    rng = np.random.default_rng(7)
    arrays = {f"layer.{i}.weight": rng.standard_normal((17, 33)).astype(np.float32) for i in range(12)}
    arrays["ids"] = np.arange(1000, dtype=np.int64)
    npath = os.path.join(tmp, "numpy_written.safetensors")
    stnp.save_file(arrays, npath, metadata={"format": "np"})
    meta, tensors = wick_dump(tool, npath)
    check(meta == {"format": "np"}, "numpy file metadata")
    for n, a in arrays.items():
        v = tensors.get(n)
        if check(v is not None, f"numpy file: wick misses {n}"):
            check(v[1] == list(a.shape) and v[2] == a.tobytes(), f"numpy file: {n} differs")
    print(f"{'ok' if failures == 0 else 'FAILED'}: {failures} failures "
          f"({len(want)} tensors wick -> Python, {len(extra) + len(arrays)} Python -> wick)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
