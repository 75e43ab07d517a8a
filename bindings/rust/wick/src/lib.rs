//! wick: Candle's tensor backend in C11 (CPU, CUDA, ROCm), from Rust.
//!
//! ```no_run
//! use wick::{Device, Layout, UnaryOp, ReduceOp};
//! let dev = Device::open("auto")?;                      // first CUDA GPU, else ROCm, else CPU
//! let x = dev.from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
//! let l = Layout::contiguous(&[2, 3])?;
//! let y = x.unary(UnaryOp::Exp, &l.transpose(0, 1)?)?;  // reads x through a transposed view
//! let s = y.reduce(ReduceOp::Sum, &Layout::contiguous(&[3, 2])?, &[1])?;
//! println!("{:?}", s.to_vec::<f32>()?);
//! # Ok::<(), wick::Error>(())
//! ```
//!
//! The model is Candle's backend: a [`Storage`] is a typed buffer on one [`Device`]; a
//! [`Layout`] (dims, strides, offset) says how an op reads it; every op returns a new contiguous
//! storage, except the in-place ones (`&mut self`: const_set, copy_strided_src, copy2d,
//! scatter_set, scatter_add_set). Every fallible call returns `Result<_, Error>`, the error
//! carrying wick's status and message. docs/candle.md maps Candle's backend traits onto these.
//!
//! Thread safety: `Device` and `Storage` are `Send + Sync`. wick's shared device state (the GPU
//! caching allocator, the module cache, the random counter) is synchronized in C and all work of
//! a GPU device is ordered on its one stream; error messages are per thread. A storage is written
//! only through `&mut self`, so safe code cannot race on one. A GPU reports some errors (an
//! out-of-range id) at the next synchronizing call (`to_vec`, `Device::synchronize`). DLPack
//! sharing (`export_dlpack`, `import_dlpack`) hands out raw memory and is outside these rules.
mod device;
mod error;
mod layout;
mod ops;
mod storage;
mod types;

pub use device::Device;
pub use error::{Error, Result, Status};
pub use layout::{Layout, MAX_RANK};
pub use storage::Storage;
pub use types::{Backend, BinaryOp, CmpOp, ConvParams, DType, Element, OpId, PoolParams, QType,
                ReduceOp, UnaryOp};
pub use wick_sys as sys;

/// The version of the libwick actually loaded ("0.1.0").
pub fn version() -> String {
    // SAFETY: a static string
    unsafe { std::ffi::CStr::from_ptr(sys::wk_version_string()) }.to_string_lossy().into_owned()
}

/// Scalar conversions, the exact ones every backend uses.
pub fn f32_to_bf16(x: f32) -> u16 {
    // SAFETY: pure functions
    unsafe { sys::wk_f32_to_bf16(x) }
}
pub fn bf16_to_f32(h: u16) -> f32 {
    unsafe { sys::wk_bf16_to_f32(h) }
}
pub fn f32_to_f16(x: f32) -> u16 {
    unsafe { sys::wk_f32_to_f16(x) }
}
pub fn f16_to_f32(h: u16) -> f32 {
    unsafe { sys::wk_f16_to_f32(h) }
}
