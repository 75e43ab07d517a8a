//! Every op family of the safe API on the CPU, against values computed by hand (or a formula
//! written here in f64), plus the error path: statuses and messages.
use wick::*;

fn cpu() -> Device {
    Device::cpu().expect("the CPU device opens")
}

fn c(dims: &[i64]) -> Layout {
    Layout::contiguous(dims).unwrap()
}

fn assert_close(got: &[f32], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((*g as f64 - w).abs() <= tol * (1.0 + w.abs()), "element {i}: {g} vs {w}");
    }
}

#[test]
fn storage_and_layouts() {
    let d = cpu();
    assert_eq!(d.backend(), Backend::Cpu);
    assert!(d.name().starts_with("cpu"));
    assert_eq!(version(), "0.1.0");
    let s = d.from_slice(&[1i64, 2, 3]).unwrap();
    assert_eq!((s.dtype(), s.len()), (DType::I64, 3));
    assert_eq!(s.try_clone().unwrap().to_vec::<i64>().unwrap(), vec![1, 2, 3]);
    assert_eq!(d.zeros(DType::F16, 4).unwrap().to_vec::<u16>().unwrap(), vec![0; 4]);
    let l = c(&[2, 3, 4]);
    assert_eq!((l.dims(), l.strides()), (&[2i64, 3, 4][..], &[12i64, 4, 1][..]));
    let t = l.transpose(0, 2).unwrap();
    assert_eq!((t.dims(), t.strides(), t.is_contiguous()), (&[4i64, 3, 2][..], &[1i64, 4, 12][..], false));
    let n = l.narrow(1, 1, 2).unwrap();
    assert_eq!((n.offset(), n.elem_count()), (4, 16));
    let b = c(&[3]).broadcast_as(&[2, 3]).unwrap();
    assert_eq!(b.strides(), &[0, 1]);
    // bf16 raw bits: 1.0 is 0x3F80, -2.0 is 0xC000
    let h = d.from_raw(DType::BF16, &[f32_to_bf16(1.0), f32_to_bf16(-2.0)]).unwrap();
    assert_eq!(h.to_vec::<u16>().unwrap(), vec![0x3F80, 0xC000]);
    assert_eq!(bf16_to_f32(0xC000), -2.0);
    assert_eq!(f16_to_f32(f32_to_f16(0.5)), 0.5);
}

#[test]
fn elementwise() {
    let d = cpu();
    let x = d.from_slice(&[-1.0f32, 0.0, 0.5, 2.0]).unwrap();
    let l = c(&[4]);
    let v = [-1.0f64, 0.0, 0.5, 2.0];
    let cases: [(UnaryOp, fn(f64) -> f64); 8] = [
        (UnaryOp::Exp, f64::exp), (UnaryOp::Neg, |a| -a), (UnaryOp::Sqr, |a| a * a),
        (UnaryOp::Relu, |a| a.max(0.0)), (UnaryOp::Tanh, f64::tanh), (UnaryOp::Abs, f64::abs),
        (UnaryOp::Sigmoid, |a| 1.0 / (1.0 + (-a).exp())), (UnaryOp::Silu, |a| a / (1.0 + (-a).exp())),
    ];
    for (op, f) in cases {
        let got = x.unary(op, &l).unwrap().to_vec::<f32>().unwrap();
        assert_close(&got, &v.map(f), 1e-6);
    }
    // round: half away from zero
    let r = d.from_slice(&[-2.5f32, -0.5, 0.5, 1.5]).unwrap();
    assert_eq!(r.unary(UnaryOp::Round, &l).unwrap().to_vec::<f32>().unwrap(), vec![-3.0, -1.0, 1.0, 2.0]);
    assert_eq!(x.affine(&l, 2.0, 1.0).unwrap().to_vec::<f32>().unwrap(), vec![-1.0, 1.0, 2.0, 5.0]);
    assert_close(&x.elu(&l, 0.5).unwrap().to_vec::<f32>().unwrap(),
                 &[0.5 * ((-1f64).exp() - 1.0), 0.0, 0.5, 2.0], 1e-6);
    let p = d.from_slice(&[4.0f32, 9.0]).unwrap();
    assert_eq!(p.powf(&c(&[2]), 0.5).unwrap().to_vec::<f32>().unwrap(), vec![2.0, 3.0]);
    // binary with a broadcast row: [[1,2,3],[4,5,6]] + [10,20,30]
    let a = d.from_slice(&[1i32, 2, 3, 4, 5, 6]).unwrap();
    let b = d.from_slice(&[10i32, 20, 30]).unwrap();
    let lb = c(&[3]).broadcast_as(&[2, 3]).unwrap();
    let sum = a.binary(BinaryOp::Add, &c(&[2, 3]), &b, &lb).unwrap();
    assert_eq!(sum.to_vec::<i32>().unwrap(), vec![11, 22, 33, 14, 25, 36]);
    let mx = a.binary(BinaryOp::Maximum, &c(&[2, 3]), &b.affine(&c(&[3]), 0.2, 0.0).unwrap(), &lb).unwrap();
    assert_eq!(mx.to_vec::<i32>().unwrap(), vec![2, 4, 6, 4, 5, 6]);
    // swiglu: silu(gate) * up, the two halves of one [gate | up] row as column views
    let gu = d.from_slice(&[-1.0f32, 0.0, 2.0, 3.0, 4.0, 0.5]).unwrap();
    let (lg, lu) = (c(&[1, 6]).narrow(1, 0, 3).unwrap(), c(&[1, 6]).narrow(1, 3, 3).unwrap());
    let silu = |v: f64| v / (1.0 + (-v).exp());
    assert_close(&gu.binary(BinaryOp::Swiglu, &lg, &gu, &lu).unwrap().to_vec::<f32>().unwrap(),
                 &[silu(-1.0) * 3.0, 0.0, silu(2.0) * 0.5], 1e-6);
    let gt = a.cmp(CmpOp::Gt, &c(&[2, 3]), &d.from_slice(&[3i32]).unwrap(), &c(&[1]).broadcast_as(&[2, 3]).unwrap()).unwrap();
    assert_eq!((gt.dtype(), gt.to_vec::<u8>().unwrap()), (DType::U8, vec![0, 0, 0, 1, 1, 1]));
    let w = gt.where_cond(&c(&[2, 3]), &a, &c(&[2, 3]), &b, &lb).unwrap();
    assert_eq!(w.to_vec::<i32>().unwrap(), vec![10, 20, 30, 4, 5, 6]);
    // to_dtype: f32 -> i32 truncates toward zero; -> f16 rounds to nearest even
    let f = d.from_slice(&[2.7f32, -2.7, 1.0 + 1.0 / 4096.0]).unwrap();
    assert_eq!(f.to_dtype(&c(&[3]), DType::I32).unwrap().to_vec::<i32>().unwrap(), vec![2, -2, 1]);
    assert_eq!(f.narrow_f16(), vec![0x4166, 0xC166, 0x3C00]);
}

trait NarrowF16 {
    fn narrow_f16(&self) -> Vec<u16>;
}
impl NarrowF16 for Storage {
    fn narrow_f16(&self) -> Vec<u16> {
        self.to_dtype(&c(&[self.len() as i64]), DType::F16).unwrap().to_vec::<u16>().unwrap()
    }
}

#[test]
fn reduce_and_movement() {
    let d = cpu();
    // [[3, 1, 2], [0, 5, 5]]
    let x = d.from_slice(&[3.0f64, 1.0, 2.0, 0.0, 5.0, 5.0]).unwrap();
    let l = c(&[2, 3]);
    assert_eq!(x.reduce(ReduceOp::Sum, &l, &[1]).unwrap().to_vec::<f64>().unwrap(), vec![6.0, 10.0]);
    assert_eq!(x.reduce(ReduceOp::Max, &l, &[0]).unwrap().to_vec::<f64>().unwrap(), vec![3.0, 5.0, 5.0]);
    assert_eq!(x.reduce(ReduceOp::Sum, &l, &[0, 1]).unwrap().to_vec::<f64>().unwrap(), vec![16.0]);
    assert_eq!(x.reduce(ReduceOp::ArgMax, &l, &[1]).unwrap().to_vec::<u32>().unwrap(), vec![0, 1]);
    assert_eq!(x.reduce(ReduceOp::ArgMin, &l, &[1]).unwrap().to_vec::<u32>().unwrap(), vec![1, 0]);
    // copy_strided_src of the transpose [[3,0],[1,5],[2,5]] at offset 1
    let mut dst = d.zeros(DType::F64, 8).unwrap();
    dst.copy_strided_src(1, &x, &l.transpose(0, 1).unwrap()).unwrap();
    assert_eq!(dst.to_vec::<f64>().unwrap(), vec![0.0, 3.0, 0.0, 1.0, 5.0, 2.0, 5.0, 0.0]);
    let mut d2 = d.zeros(DType::F64, 6).unwrap();
    d2.copy2d(&x, 2, 2, 3, 3, 1, 0).unwrap(); // columns 1..2 of each row to columns 0..1
    assert_eq!(d2.to_vec::<f64>().unwrap(), vec![1.0, 2.0, 0.0, 5.0, 5.0, 0.0]);
    d2.const_set(&c(&[2, 3]).narrow(1, 2, 1).unwrap(), 9.0).unwrap();
    assert_eq!(d2.to_vec::<f64>().unwrap(), vec![1.0, 2.0, 9.0, 5.0, 5.0, 9.0]);
    d.set_seed(7).unwrap();
    let u = d.rand_uniform(DType::F32, 1000, 2.0, 3.0).unwrap().to_vec::<f32>().unwrap();
    assert!(u.iter().all(|&v| (2.0..3.0).contains(&v)));
    d.set_seed(7).unwrap();
    assert_eq!(d.rand_uniform(DType::F32, 1000, 2.0, 3.0).unwrap().to_vec::<f32>().unwrap(), u);
    let nrm = d.rand_normal(DType::F64, 4000, 1.0, 2.0).unwrap().to_vec::<f64>().unwrap();
    let mean = nrm.iter().sum::<f64>() / 4000.0;
    assert!((mean - 1.0).abs() < 0.15, "normal mean {mean}");
}

#[test]
fn matmul_conv_pool_upsample() {
    let d = cpu();
    // [[1,2],[3,4]] @ [[5,6],[7,8]] = [[19,22],[43,50]]
    let a = d.from_slice(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let b = d.from_slice(&[5.0f32, 6.0, 7.0, 8.0]).unwrap();
    let l = c(&[2, 2]);
    assert_eq!(a.matmul(&l, &b, &l).unwrap().to_vec::<f32>().unwrap(), vec![19.0, 22.0, 43.0, 50.0]);
    // b transposed: [[5,7],[6,8]] -> [[17,23],[39,53]]
    assert_eq!(a.matmul(&l, &b, &l.transpose(0, 1).unwrap()).unwrap().to_vec::<f32>().unwrap(),
               vec![17.0, 23.0, 39.0, 53.0]);
    // conv1d: x [1,2,3,4,5] (1,1,5), w [1,0,-1] -> [1-3, 2-4, 3-5] = [-2,-2,-2]
    let x = d.from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0]).unwrap();
    let w = d.from_slice(&[1.0f32, 0.0, -1.0]).unwrap();
    let p = ConvParams::default();
    assert_eq!(x.conv1d(&c(&[1, 1, 5]), &w, &c(&[1, 1, 3]), &p).unwrap().to_vec::<f32>().unwrap(),
               vec![-2.0, -2.0, -2.0]);
    // conv_transpose1d stride 2: x [1,2], w [1,1,1] -> [1,1,1+2,2,2]
    let xt = d.from_slice(&[1.0f32, 2.0]).unwrap();
    let pt = ConvParams { stride: [2, 1], ..Default::default() };
    assert_eq!(xt.conv_transpose1d(&c(&[1, 1, 2]), &d.from_slice(&[1.0f32; 3]).unwrap(), &c(&[1, 1, 3]), &pt)
               .unwrap().to_vec::<f32>().unwrap(), vec![1.0, 1.0, 3.0, 2.0, 2.0]);
    // conv2d 3x3 input, 2x2 ones kernel -> window sums; padding 0
    let img = d.from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]).unwrap();
    let ones = d.from_slice(&[1.0f32; 4]).unwrap();
    assert_eq!(img.conv2d(&c(&[1, 1, 3, 3]), &ones, &c(&[1, 1, 2, 2]), &p).unwrap().to_vec::<f32>().unwrap(),
               vec![12.0, 16.0, 24.0, 28.0]);
    // conv_transpose2d of a 1x1 input 2 by ones 2x2 -> 2x2 of 2
    let one = d.from_slice(&[2.0f32]).unwrap();
    assert_eq!(one.conv_transpose2d(&c(&[1, 1, 1, 1]), &ones, &c(&[1, 1, 2, 2]), &p).unwrap()
               .to_vec::<f32>().unwrap(), vec![2.0; 4]);
    let pp = PoolParams { kernel: [2, 2], stride: [1, 1] };
    let li = c(&[1, 1, 3, 3]);
    assert_eq!(img.avg_pool2d(&li, &pp).unwrap().to_vec::<f32>().unwrap(), vec![3.0, 4.0, 6.0, 7.0]);
    assert_eq!(img.max_pool2d(&li, &pp).unwrap().to_vec::<f32>().unwrap(), vec![5.0, 6.0, 8.0, 9.0]);
    // nearest: source floor(i * 2 / 4) = [0,0,1,1]
    let two = d.from_slice(&[1.0f32, 2.0]).unwrap();
    assert_eq!(two.upsample_nearest1d(&c(&[1, 1, 2]), 4).unwrap().to_vec::<f32>().unwrap(),
               vec![1.0, 1.0, 2.0, 2.0]);
    assert_eq!(two.upsample_nearest2d(&c(&[1, 1, 1, 2]), 2, 4).unwrap().to_vec::<f32>().unwrap(),
               vec![1.0, 1.0, 2.0, 2.0, 1.0, 1.0, 2.0, 2.0]);
    // bilinear 1x2 -> 1x3 with align_corners: [1, 1.5, 2]
    assert_eq!(two.upsample_bilinear2d(&c(&[1, 1, 1, 2]), 1, 3, true, 0.0, 0.0).unwrap()
               .to_vec::<f32>().unwrap(), vec![1.0, 1.5, 2.0]);
}

#[test]
fn indexing() {
    let d = cpu();
    // src [[1,2],[3,4],[5,6]]
    let src = d.from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let ls = c(&[3, 2]);
    let ids = d.from_slice(&[2u32, 0]).unwrap();
    assert_eq!(src.index_select(&ls, &ids, &c(&[2]), 0).unwrap().to_vec::<f32>().unwrap(),
               vec![5.0, 6.0, 1.0, 2.0]);
    let g = d.from_slice(&[1i64, 0, 0, 0, 1, 1]).unwrap();
    assert_eq!(src.gather(&ls, &g, &c(&[3, 2]), 1).unwrap().to_vec::<f32>().unwrap(),
               vec![2.0, 1.0, 3.0, 3.0, 6.0, 6.0]);
    let add = d.from_slice(&[10.0f32, 20.0, 30.0, 40.0]).unwrap();
    assert_eq!(src.index_add(&ls, &ids, &c(&[2]), &add, &c(&[2, 2]), 0).unwrap().to_vec::<f32>().unwrap(),
               vec![31.0, 42.0, 3.0, 4.0, 15.0, 26.0]);
    let mut dst = d.zeros(DType::F32, 6).unwrap();
    let sid = d.from_slice(&[1u8, 0, 1, 1, 0, 0]).unwrap();
    dst.scatter_set(&ls, &sid, &c(&[3, 2]), &src, &ls, 1).unwrap();
    assert_eq!(dst.to_vec::<f32>().unwrap(), vec![2.0, 1.0, 0.0, 4.0, 6.0, 0.0]);
    dst.scatter_add_set(&ls, &sid, &c(&[3, 2]), &src, &ls, 1).unwrap();
    assert_eq!(dst.to_vec::<f32>().unwrap(), vec![4.0, 2.0, 0.0, 11.0, 17.0, 0.0]);
    // an id out of range: nothing written, the exact status
    let bad = d.from_slice(&[7u32]).unwrap();
    let e = src.index_select(&ls, &bad, &c(&[1]), 0).unwrap_err();
    assert_eq!(e.status, Status::IndexOutOfRange);
}

#[test]
fn fused() {
    let d = cpu();
    let x = d.from_slice(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let l = c(&[1, 4]);
    let e: Vec<f64> = (1..=4).map(|v| (v as f64).exp()).collect();
    let z: f64 = e.iter().sum();
    assert_close(&x.softmax_last_dim(&l).unwrap().to_vec::<f32>().unwrap(),
                 &e.iter().map(|v| v / z).collect::<Vec<_>>(), 1e-6);
    let ones = d.from_slice(&[1.0f32; 4]).unwrap();
    let zeros = d.zeros(DType::F32, 4).unwrap();
    let rms = (30.0f64 / 4.0).sqrt(); // mean of squares 7.5
    assert_close(&x.rms_norm(&l, &ones, &c(&[4]), 0.0).unwrap().to_vec::<f32>().unwrap(),
                 &[1.0 / rms, 2.0 / rms, 3.0 / rms, 4.0 / rms], 1e-6);
    // residual add + rms_norm: [0, 1, 2, 3] + [1, 1, 1, 1] is x, whose rms_norm is above
    let (sum, o) = d.from_slice(&[0.0f32, 1.0, 2.0, 3.0]).unwrap()
        .add_rms_norm(&l, &ones, &l, &ones, &c(&[4]), 0.0).unwrap();
    assert_eq!(sum.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    assert_close(&o.to_vec::<f32>().unwrap(), &[1.0 / rms, 2.0 / rms, 3.0 / rms, 4.0 / rms], 1e-6);
    let sd = 1.25f64.sqrt(); // mean 2.5, variance 1.25
    assert_close(&x.layer_norm(&l, &ones, &c(&[4]), &zeros, &c(&[4]), 0.0).unwrap().to_vec::<f32>().unwrap(),
                 &[-1.5 / sd, -0.5 / sd, 0.5 / sd, 1.5 / sd], 1e-6);
    // rope on (1,1,1,4) with cos 0, sin 1: halves (x1, x2) -> (-x2, x1); pairs likewise
    let cos = d.zeros(DType::F32, 2).unwrap();
    let sin = d.from_slice(&[1.0f32, 1.0]).unwrap();
    let lx = c(&[1, 1, 1, 4]);
    let lc = c(&[1, 2]);
    assert_eq!(x.rope(&lx, &cos, &lc, &sin, &lc).unwrap().to_vec::<f32>().unwrap(), vec![-3.0, -4.0, 1.0, 2.0]);
    assert_eq!(x.rope_i(&lx, &cos, &lc, &sin, &lc).unwrap().to_vec::<f32>().unwrap(), vec![-2.0, 1.0, -4.0, 3.0]);
    assert_eq!(x.rope_thd(&lx, &cos, &lc, &sin, &lc).unwrap().to_vec::<f32>().unwrap(), vec![-3.0, -4.0, 1.0, 2.0]);
    let v = d.from_slice(&[3.0f32, 1.0, 3.0, 2.0]).unwrap();
    assert_eq!(v.arg_sort_last_dim(&l, true).unwrap().to_vec::<u32>().unwrap(), vec![1, 3, 0, 2]);
    assert_eq!(v.arg_sort_last_dim(&l, false).unwrap().to_vec::<u32>().unwrap(), vec![0, 2, 3, 1]);
}

#[test]
fn quantized() {
    let d = cpu();
    // one Q8_0 block: values k/127 * 2 for k = -16..15: amax 32/127 -> d = (32/127)/127
    let vals: Vec<f32> = (0..32).map(|i| (i as f32 - 16.0) / 8.0).collect(); // -2 .. 1.875
    let x = d.from_slice(&vals).unwrap();
    let q = x.quantize(QType::Q8_0, &c(&[32])).unwrap();
    assert_eq!((q.dtype(), q.len() as i64), (DType::U8, QType::Q8_0.block_bytes()));
    let back = q.dequantize(QType::Q8_0, DType::F32, 32).unwrap().to_vec::<f32>().unwrap();
    let step = 2.0f64 / 127.0; // d = amax / 127, amax = 2
    assert_close(&back, &vals.iter().map(|&v| v as f64).collect::<Vec<_>>(), step / 2.0 + 1e-3);
    // qmatmul: W (1, 32) = vals, x = ones -> sum(vals) = -2 (within the quantization error)
    let ones = d.from_slice(&[1.0f32; 32]).unwrap();
    let y = ones.qmatmul(&c(&[1, 32]), &q, QType::Q8_0, 1, 32).unwrap().to_vec::<f32>().unwrap();
    assert!((y[0] as f64 + 2.0).abs() < 32.0 * step, "qmatmul {}", y[0]);
    let ids = d.from_slice(&[0u32, 0]).unwrap();
    let emb = ids.qembedding(DType::F32, &c(&[2]), &q, QType::Q8_0, 1, 32).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(&emb[..32], &back[..]);
    assert_eq!(&emb[32..], &back[..]);
}

#[test]
fn errors_carry_status_and_message() {
    let d = cpu();
    let a = d.from_slice(&[1.0f32; 6]).unwrap();
    let e = a.matmul(&c(&[2, 3]), &a, &c(&[2, 3])).unwrap_err();
    assert_eq!(e.status, Status::Shape);
    assert!(e.name.starts_with("WK_ERR_SHAPE") && e.message.contains("matmul"), "{e}");
    let i = d.from_slice(&[1i32, 2]).unwrap();
    assert_eq!(i.unary(UnaryOp::Exp, &c(&[2])).unwrap_err().status, Status::DType);
    assert_eq!(a.unary(UnaryOp::Exp, &c(&[7])).unwrap_err().status, Status::Layout);
    assert_eq!(Device::open("tpu:0").unwrap_err().status, Status::InvalidArgument);
    assert_eq!(a.to_vec::<f64>().unwrap_err().status, Status::DType); // host type of another size
    assert_eq!(Layout::contiguous(&[1; 9]).unwrap_err().status, Status::InvalidArgument);
    assert_eq!(Layout::contiguous(&[2]).unwrap().narrow(0, 1, 5).unwrap_err().status,
               Status::IndexOutOfRange);
    let (n, why) = Device::count(Backend::Cuda);
    assert!(n > 0 || !why.is_empty(), "an unavailable backend says why");
}

#[test]
fn dlpack_round_trip() {
    let d = cpu();
    let s = d.from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let view = c(&[2, 3]).transpose(0, 1).unwrap();
    let t = s.export_dlpack(&view).unwrap();
    // SAFETY: t is the tensor just exported; the import takes it over
    let (back, l) = unsafe { Storage::import_dlpack(&d, t) }.unwrap();
    assert_eq!(back.data_ptr(), s.data_ptr());
    assert_eq!((l.dims(), l.strides()), (&[3i64, 2][..], &[1i64, 3][..]));
    drop(s); // the import's reference keeps the memory
    let sum = back.reduce(ReduceOp::Sum, &l, &[1]).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(sum, vec![5.0, 7.0, 9.0]);
}

#[test]
fn send_and_sync_across_threads() {
    fn is_send_sync<T: Send + Sync>() {}
    is_send_sync::<Device>();
    is_send_sync::<Storage>();
    let d = cpu();
    let x = std::sync::Arc::new(d.from_slice(&[1.0f32, 2.0, 3.0]).unwrap());
    let hs: Vec<_> = (0..4).map(|k| {
        let (d, x) = (d.clone(), x.clone());
        std::thread::spawn(move || {
            let y = x.affine(&c(&[3]), k as f64, 0.0).unwrap();
            let z = d.zeros(DType::F32, 3).unwrap();
            (y.to_vec::<f32>().unwrap(), z.len())
        })
    }).collect();
    for (k, h) in hs.into_iter().enumerate() {
        let (y, n) = h.join().unwrap();
        assert_eq!(y, vec![k as f32, 2.0 * k as f32, 3.0 * k as f32]);
        assert_eq!(n, 3);
    }
}
