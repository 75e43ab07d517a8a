//! The out-of-place ops: methods of the (first) input storage, each taking the layouts that say
//! how it reads its operands and returning a new contiguous Storage on the same device. Shapes
//! and rules are wick.h's; every check happens in the C front end, whose status comes back as
//! an Error.
use crate::error::{check, Result};
use crate::layout::Layout;
use crate::storage::Storage;
use crate::types::{BinaryOp, CmpOp, ConvParams, DType, PoolParams, QType, ReduceOp, UnaryOp};
use wick_sys as sys;

type Out = *mut *mut sys::wk_storage;

impl Storage {
    fn make(&self, f: impl FnOnce(Out) -> sys::wk_status) -> Result<Storage> {
        let mut o = std::ptr::null_mut();
        check(f(&mut o))?;
        Ok(Storage::wrap(o, self.device().clone()))
    }
    /// `make` for the ops with two outputs (set together on success, neither on failure).
    fn make2(&self, f: impl FnOnce(Out, Out) -> sys::wk_status) -> Result<(Storage, Storage)> {
        let (mut a, mut b) = (std::ptr::null_mut(), std::ptr::null_mut());
        check(f(&mut a, &mut b))?;
        Ok((Storage::wrap(a, self.device().clone()), Storage::wrap(b, self.device().clone())))
    }

    // ---- elementwise
    pub fn unary(&self, op: UnaryOp, l: &Layout) -> Result<Storage> {
        // SAFETY (every call in this file): live storage handles, layouts and params that
        // outlive the call, and a valid out pointer; wick validates everything else
        self.make(|o| unsafe { sys::wk_unary(o, sys::wk_op(op as u32), self.raw(), &l.0) })
    }
    /// x * mul + add.
    pub fn affine(&self, l: &Layout, mul: f64, add: f64) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_affine(o, self.raw(), &l.0, mul, add) })
    }
    pub fn powf(&self, l: &Layout, e: f64) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_powf(o, self.raw(), &l.0, e) })
    }
    pub fn elu(&self, l: &Layout, alpha: f64) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_elu(o, self.raw(), &l.0, alpha) })
    }
    /// la and lb must have the same dims (broadcast beforehand with Layout::broadcast_as).
    pub fn binary(&self, op: BinaryOp, la: &Layout, rhs: &Storage, lb: &Layout) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_binary(o, sys::wk_op(op as u32), self.raw(), &la.0, rhs.raw(), &lb.0) })
    }
    /// u8 out: 1 where the comparison holds.
    pub fn cmp(&self, op: CmpOp, la: &Layout, rhs: &Storage, lb: &Layout) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_cmp(o, sys::wk_op(op as u32), self.raw(), &la.0, rhs.raw(), &lb.0) })
    }
    /// self is the condition (u8, u32 or i64): cond != 0 ? on_true : on_false.
    pub fn where_cond(&self, lc: &Layout, on_true: &Storage, lt: &Layout, on_false: &Storage,
                      lf: &Layout) -> Result<Storage> {
        self.make(|o| unsafe {
            sys::wk_where_cond(o, self.raw(), &lc.0, on_true.raw(), &lt.0, on_false.raw(), &lf.0)
        })
    }
    pub fn to_dtype(&self, l: &Layout, to: DType) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_to_dtype(o, self.raw(), &l.0, to.raw()) })
    }

    // ---- reductions: keepdim output (reduced dims become 1)
    pub fn reduce(&self, op: ReduceOp, l: &Layout, dims: &[usize]) -> Result<Storage> {
        let d: Vec<i32> = dims.iter().map(|&x| x as i32).collect();
        self.make(|o| unsafe {
            sys::wk_reduce(o, sys::wk_op(op as u32), self.raw(), &l.0, d.as_ptr(), d.len() as i32)
        })
    }

    // ---- linear algebra
    /// (..., m, k) @ (..., k, n), the same batch dims on both.
    pub fn matmul(&self, la: &Layout, rhs: &Storage, lb: &Layout) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_matmul(o, self.raw(), &la.0, rhs.raw(), &lb.0) })
    }

    // ---- convolution, pooling, upsampling
    pub fn conv1d(&self, l: &Layout, w: &Storage, lw: &Layout, p: &ConvParams) -> Result<Storage> {
        let p = p.raw();
        self.make(|o| unsafe { sys::wk_conv1d(o, self.raw(), &l.0, w.raw(), &lw.0, &p) })
    }
    pub fn conv_transpose1d(&self, l: &Layout, w: &Storage, lw: &Layout, p: &ConvParams) -> Result<Storage> {
        let p = p.raw();
        self.make(|o| unsafe { sys::wk_conv_transpose1d(o, self.raw(), &l.0, w.raw(), &lw.0, &p) })
    }
    pub fn conv2d(&self, l: &Layout, w: &Storage, lw: &Layout, p: &ConvParams) -> Result<Storage> {
        let p = p.raw();
        self.make(|o| unsafe { sys::wk_conv2d(o, self.raw(), &l.0, w.raw(), &lw.0, &p) })
    }
    pub fn conv_transpose2d(&self, l: &Layout, w: &Storage, lw: &Layout, p: &ConvParams) -> Result<Storage> {
        let p = p.raw();
        self.make(|o| unsafe { sys::wk_conv_transpose2d(o, self.raw(), &l.0, w.raw(), &lw.0, &p) })
    }
    pub fn avg_pool2d(&self, l: &Layout, p: &PoolParams) -> Result<Storage> {
        let p = sys::wk_pool_params { kernel: p.kernel, stride: p.stride };
        self.make(|o| unsafe { sys::wk_avg_pool2d(o, self.raw(), &l.0, &p) })
    }
    pub fn max_pool2d(&self, l: &Layout, p: &PoolParams) -> Result<Storage> {
        let p = sys::wk_pool_params { kernel: p.kernel, stride: p.stride };
        self.make(|o| unsafe { sys::wk_max_pool2d(o, self.raw(), &l.0, &p) })
    }
    pub fn upsample_nearest1d(&self, l: &Layout, l_out: i64) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_upsample_nearest1d(o, self.raw(), &l.0, l_out) })
    }
    pub fn upsample_nearest2d(&self, l: &Layout, h_out: i64, w_out: i64) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_upsample_nearest2d(o, self.raw(), &l.0, h_out, w_out) })
    }
    /// scale_h / scale_w <= 0: in/out.
    pub fn upsample_bilinear2d(&self, l: &Layout, h_out: i64, w_out: i64, align_corners: bool,
                               scale_h: f64, scale_w: f64) -> Result<Storage> {
        self.make(|o| unsafe {
            sys::wk_upsample_bilinear2d(o, self.raw(), &l.0, h_out, w_out, align_corners as i32,
                                        scale_h, scale_w)
        })
    }

    // ---- indexing (ids u8, u32 or i64; the dtype's maximum means "none")
    pub fn index_select(&self, l: &Layout, ids: &Storage, li: &Layout, dim: usize) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_index_select(o, self.raw(), &l.0, ids.raw(), &li.0, dim as i32) })
    }
    pub fn gather(&self, l: &Layout, ids: &Storage, li: &Layout, dim: usize) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_gather(o, self.raw(), &l.0, ids.raw(), &li.0, dim as i32) })
    }
    /// A copy of self with src's rows added at ids along dim.
    pub fn index_add(&self, l: &Layout, ids: &Storage, li: &Layout, src: &Storage, ls: &Layout,
                     dim: usize) -> Result<Storage> {
        self.make(|o| unsafe {
            sys::wk_index_add(o, self.raw(), &l.0, ids.raw(), &li.0, src.raw(), &ls.0, dim as i32)
        })
    }

    // ---- fused (candle-nn)
    pub fn softmax_last_dim(&self, l: &Layout) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_softmax_last_dim(o, self.raw(), &l.0) })
    }
    pub fn rms_norm(&self, l: &Layout, alpha: &Storage, la: &Layout, eps: f32) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_rms_norm(o, self.raw(), &l.0, alpha.raw(), &la.0, eps) })
    }
    pub fn layer_norm(&self, l: &Layout, alpha: &Storage, la: &Layout, beta: &Storage, lb: &Layout,
                      eps: f32) -> Result<Storage> {
        self.make(|o| unsafe {
            sys::wk_layer_norm(o, self.raw(), &l.0, alpha.raw(), &la.0, beta.raw(), &lb.0, eps)
        })
    }
    /// (self + r, rms_norm(self + r)): the residual add and the norm in one call
    /// (wk_add_rms_norm); both contiguous with l's dims.
    pub fn add_rms_norm(&self, l: &Layout, r: &Storage, lr: &Layout, alpha: &Storage, la: &Layout,
                        eps: f32) -> Result<(Storage, Storage)> {
        self.make2(|s, o| unsafe {
            sys::wk_add_rms_norm(s, o, self.raw(), &l.0, r.raw(), &lr.0, alpha.raw(), &la.0, eps)
        })
    }
    /// (self + r, layer_norm(self + r)) (wk_add_layer_norm).
    #[allow(clippy::too_many_arguments)]
    pub fn add_layer_norm(&self, l: &Layout, r: &Storage, lr: &Layout, alpha: &Storage,
                          la: &Layout, beta: &Storage, lb: &Layout, eps: f32)
                          -> Result<(Storage, Storage)> {
        self.make2(|s, o| unsafe {
            sys::wk_add_layer_norm(s, o, self.raw(), &l.0, r.raw(), &lr.0, alpha.raw(), &la.0,
                                   beta.raw(), &lb.0, eps)
        })
    }
    pub fn rope(&self, l: &Layout, cos: &Storage, lc: &Layout, sin: &Storage, ls: &Layout) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_rope(o, self.raw(), &l.0, cos.raw(), &lc.0, sin.raw(), &ls.0) })
    }
    pub fn rope_i(&self, l: &Layout, cos: &Storage, lc: &Layout, sin: &Storage, ls: &Layout) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_rope_i(o, self.raw(), &l.0, cos.raw(), &lc.0, sin.raw(), &ls.0) })
    }
    pub fn rope_thd(&self, l: &Layout, cos: &Storage, lc: &Layout, sin: &Storage, ls: &Layout) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_rope_thd(o, self.raw(), &l.0, cos.raw(), &lc.0, sin.raw(), &ls.0) })
    }
    /// u32 indices sorting each last-dim row (stable).
    pub fn arg_sort_last_dim(&self, l: &Layout, ascending: bool) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_arg_sort_last_dim(o, self.raw(), &l.0, ascending as i32) })
    }

    // ---- quantized (GGUF blocks in u8 storages)
    /// The f32 CPU tensor (self, l) quantized to qt: a u8 storage of blocks.
    pub fn quantize(&self, qt: QType, l: &Layout) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_quantize(o, qt.raw(), self.raw(), &l.0) })
    }
    /// self holds qt blocks: the first n elements decoded to dt.
    pub fn dequantize(&self, qt: QType, dt: DType, n: i64) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_dequantize(o, dt.raw(), self.raw(), qt.raw(), n) })
    }
    /// (self, l) (..., m, k) @ W^T, W (n, k) quantized to qt in w.
    pub fn qmatmul(&self, l: &Layout, w: &Storage, qt: QType, n: i64, k: i64) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_qmatmul(o, self.raw(), &l.0, w.raw(), qt.raw(), n, k) })
    }
    /// self holds the ids: rows of W (rows, k) quantized to qt in w, decoded to dt.
    pub fn qembedding(&self, dt: DType, l: &Layout, w: &Storage, qt: QType, rows: i64, k: i64) -> Result<Storage> {
        self.make(|o| unsafe { sys::wk_qembedding(o, dt.raw(), self.raw(), &l.0, w.raw(), qt.raw(), rows, k) })
    }
}
