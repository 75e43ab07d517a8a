//! Dtypes, op ids and block types: Rust enums with wick.h's explicit values, plus the `Element`
//! trait tying host element types to dtypes.
use wick_sys as sys;

/// wick.h `wk_dtype`. bf16, f16 and f8e4m3 are stored as raw bits (u16, u16, u8) on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum DType {
    U8 = 0,
    U32 = 1,
    I16 = 2,
    I32 = 3,
    I64 = 4,
    BF16 = 5,
    F16 = 6,
    F32 = 7,
    F64 = 8,
    F8E4M3 = 9,
}

impl DType {
    pub const ALL: [DType; 10] = [DType::U8, DType::U32, DType::I16, DType::I32, DType::I64,
                                  DType::BF16, DType::F16, DType::F32, DType::F64, DType::F8E4M3];
    pub(crate) fn raw(self) -> sys::wk_dtype {
        sys::wk_dtype(self as u32)
    }
    pub(crate) fn from_raw(d: sys::wk_dtype) -> Option<DType> {
        DType::ALL.get(d.0 as usize).copied()
    }
    /// Bytes per element.
    pub fn size(self) -> usize {
        // SAFETY: any value is accepted
        unsafe { sys::wk_dtype_size(self.raw()) }
    }
    pub fn is_float(self) -> bool {
        // SAFETY: any value is accepted
        unsafe { sys::wk_dtype_is_float(self.raw()) != 0 }
    }
    /// "f32", "bf16", ...
    pub fn name(self) -> &'static str {
        // SAFETY: a static string
        unsafe { std::ffi::CStr::from_ptr(sys::wk_dtype_name(self.raw())) }.to_str().unwrap_or("?")
    }
}

/// A host type whose values are elements of a wick dtype (its natural one: `DTYPE`), or raw bits
/// of another dtype of the same size (u16 for bf16/f16, u8 for f8e4m3).
pub trait Element: Copy + Default + 'static {
    const DTYPE: DType;
}
impl Element for u8 { const DTYPE: DType = DType::U8; }
impl Element for u32 { const DTYPE: DType = DType::U32; }
impl Element for i16 { const DTYPE: DType = DType::I16; }
impl Element for i32 { const DTYPE: DType = DType::I32; }
impl Element for i64 { const DTYPE: DType = DType::I64; }
impl Element for f32 { const DTYPE: DType = DType::F32; }
impl Element for f64 { const DTYPE: DType = DType::F64; }
impl Element for u16 { const DTYPE: DType = DType::F16; } // raw bits: f16 or bf16

/// Unary ops (wk_unary).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum UnaryOp {
    Exp = 0, Log = 1, Sin = 2, Cos = 3, Tanh = 4, Abs = 5, Neg = 6, Recip = 7, Sqr = 8,
    Sqrt = 9, Gelu = 10, GeluErf = 11, Erf = 12, Relu = 13, Silu = 14, Floor = 15, Ceil = 16,
    Round = 17, Sign = 18, Sigmoid = 19,
}

/// Binary ops (wk_binary), same dtype in and out. The gated ones (float dtypes) are
/// act(a) * b: `Swiglu` silu, `Geglu` gelu (tanh), `GegluErf` gelu_erf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum BinaryOp {
    Add = 30, Sub = 31, Mul = 32, Div = 33, Maximum = 34, Minimum = 35, Swiglu = 36, Geglu = 37,
    GegluErf = 38,
}

/// Comparisons (wk_cmp), u8 out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum CmpOp { Eq = 40, Ne = 41, Lt = 42, Le = 43, Gt = 44, Ge = 45 }

/// Reductions (wk_reduce): argmin/argmax give u32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum ReduceOp { Sum = 60, Min = 61, Max = 62, ArgMin = 63, ArgMax = 64 }

/// GGML block types with their GGUF ids (wk_qtype).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum QType {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9, Q2K = 10,
    Q3K = 11, Q4K = 12, Q5K = 13, Q6K = 14, Q8K = 15, BF16 = 30,
}

impl QType {
    pub(crate) fn raw(self) -> sys::wk_qtype {
        sys::wk_qtype(self as u32)
    }
    /// Elements per block (32, 256, or 1 for F32/F16/BF16).
    pub fn block_elems(self) -> i64 {
        // SAFETY: any value is accepted
        unsafe { sys::wk_qtype_block_elems(self.raw()) }
    }
    /// Bytes per block.
    pub fn block_bytes(self) -> i64 {
        // SAFETY: any value is accepted
        unsafe { sys::wk_qtype_block_bytes(self.raw()) }
    }
}

/// Any op id, for `Device::supports` (wick.h `wk_op`, e.g. `OpId::WK_OP_MATMUL`).
pub use sys::wk_op as OpId;

/// Backends (wk_backend_kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend { Cpu, Cuda, Rocm }

impl Backend {
    pub(crate) fn raw(self) -> sys::wk_backend_kind {
        sys::wk_backend_kind(match self { Backend::Cpu => 0, Backend::Cuda => 1, Backend::Rocm => 2 })
    }
}

/// Convolution parameters (wk_conv_params); the 1-D ops use element 0. Default: stride 1,
/// padding 0, dilation 1, output_padding 0, groups 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvParams {
    pub stride: [i32; 2],
    pub padding: [i32; 2],
    pub dilation: [i32; 2],
    pub output_padding: [i32; 2],
    pub groups: i32,
}

impl Default for ConvParams {
    fn default() -> Self {
        ConvParams { stride: [1, 1], padding: [0, 0], dilation: [1, 1], output_padding: [0, 0], groups: 1 }
    }
}

impl ConvParams {
    pub(crate) fn raw(&self) -> sys::wk_conv_params {
        sys::wk_conv_params {
            stride: self.stride,
            padding: self.padding,
            dilation: self.dilation,
            output_padding: self.output_padding,
            groups: self.groups,
        }
    }
}

/// Pooling window and stride (H, W), no padding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolParams {
    pub kernel: [i32; 2],
    pub stride: [i32; 2],
}
