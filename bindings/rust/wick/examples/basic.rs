//! basic: a tiny attention-like computation on the first available device.
//!   WICK_LIB_DIR=$PWD/../../build cargo run --offline -p wick --example basic   (from bindings/rust)
use wick::{Device, Layout, ReduceOp, UnaryOp};

fn main() -> Result<(), wick::Error> {
    let dev = Device::open("auto")?;
    println!("wick {} on {}", wick::version(), dev.name());
    // q (2, 4) and k (3, 4): scores = softmax(q @ k^T / 2)
    let q = dev.from_slice(&[0.1f32, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])?;
    let k = dev.from_slice(&[1.0f32, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0])?;
    let lq = Layout::contiguous(&[2, 4])?;
    let lk_t = Layout::contiguous(&[3, 4])?.transpose(0, 1)?; // (4, 3), no copy
    let scores = q.matmul(&lq, &k, &lk_t)?;
    let ls = Layout::contiguous(&[2, 3])?;
    let p = scores.affine(&ls, 0.5, 0.0)?.softmax_last_dim(&ls)?;
    println!("softmax(q k^T / 2) = {:?}", p.to_vec::<f32>()?);
    let best = p.reduce(ReduceOp::ArgMax, &ls, &[1])?;
    println!("argmax per row = {:?}", best.to_vec::<u32>()?);
    let g = q.unary(UnaryOp::GeluErf, &lq)?;
    println!("gelu(q) = {:?}", g.to_vec::<f32>()?);
    Ok(())
}
