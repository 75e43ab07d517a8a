//! Layouts: how an op reads a storage (dims, strides in elements, offset), wick.h `wk_layout`.
//! Plain values (Copy); the helpers make new views and never move data.
use crate::error::{check, rust_error, Result, Status};
use wick_sys as sys;

pub const MAX_RANK: usize = sys::WK_MAX_RANK as usize;

#[derive(Clone, Copy)]
pub struct Layout(pub(crate) sys::wk_layout);

impl std::fmt::Debug for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Layout(dims {:?}, strides {:?}, offset {})", self.dims(), self.strides(), self.offset())
    }
}

impl PartialEq for Layout {
    fn eq(&self, o: &Layout) -> bool {
        self.dims() == o.dims() && self.strides() == o.strides() && self.offset() == o.offset()
    }
}

fn empty() -> sys::wk_layout {
    sys::wk_layout { rank: 0, dims: [0; MAX_RANK], strides: [0; MAX_RANK], offset: 0 }
}

fn rank_of(dims: &[i64]) -> Result<i32> {
    if dims.len() > MAX_RANK {
        return Err(rust_error(Status::InvalidArgument, 100,
                              format!("rank {} is above wick's {MAX_RANK}", dims.len())));
    }
    Ok(dims.len() as i32)
}

impl Layout {
    /// Row-major contiguous dims, offset 0.
    pub fn contiguous(dims: &[i64]) -> Result<Layout> {
        let mut l = empty();
        // SAFETY: dims holds rank elements; l is a valid output
        check(unsafe { sys::wk_layout_contiguous(&mut l, rank_of(dims)?, dims.as_ptr()) })?;
        Ok(Layout(l))
    }
    /// From explicit dims, strides and offset (checked against a storage when an op runs).
    pub fn new(dims: &[i64], strides: &[i64], offset: i64) -> Result<Layout> {
        let rank = rank_of(dims)?;
        if strides.len() != dims.len() {
            return Err(rust_error(Status::InvalidArgument, 100,
                                  format!("{} dims but {} strides", dims.len(), strides.len())));
        }
        let mut l = empty();
        l.rank = rank;
        l.dims[..dims.len()].copy_from_slice(dims);
        l.strides[..dims.len()].copy_from_slice(strides);
        l.offset = offset;
        Ok(Layout(l))
    }
    pub fn rank(&self) -> usize {
        self.0.rank.clamp(0, MAX_RANK as i32) as usize
    }
    pub fn dims(&self) -> &[i64] {
        &self.0.dims[..self.rank()]
    }
    pub fn strides(&self) -> &[i64] {
        &self.0.strides[..self.rank()]
    }
    pub fn offset(&self) -> i64 {
        self.0.offset
    }
    pub fn elem_count(&self) -> i64 {
        // SAFETY: a valid layout pointer
        unsafe { sys::wk_layout_elem_count(&self.0) }
    }
    pub fn is_contiguous(&self) -> bool {
        // SAFETY: a valid layout pointer
        unsafe { sys::wk_layout_is_contiguous(&self.0) != 0 }
    }
    /// Dims d0 and d1 swapped.
    pub fn transpose(&self, d0: usize, d1: usize) -> Result<Layout> {
        let mut l = empty();
        // SAFETY: valid pointers; wick checks the dims
        check(unsafe { sys::wk_layout_transpose(&mut l, &self.0, d0 as i32, d1 as i32) })?;
        Ok(Layout(l))
    }
    /// [start, start + len) along dim.
    pub fn narrow(&self, dim: usize, start: i64, len: i64) -> Result<Layout> {
        let mut l = empty();
        // SAFETY: valid pointers; wick checks the range
        check(unsafe { sys::wk_layout_narrow(&mut l, &self.0, dim as i32, start, len) })?;
        Ok(Layout(l))
    }
    /// Broadcast to dims with NumPy's rules (stride 0 for the new or size-1 dims).
    pub fn broadcast_as(&self, dims: &[i64]) -> Result<Layout> {
        let mut l = empty();
        // SAFETY: dims holds rank elements
        check(unsafe { sys::wk_layout_broadcast(&mut l, &self.0, rank_of(dims)?, dims.as_ptr()) })?;
        Ok(Layout(l))
    }
    /// The C struct, for wick-sys calls.
    pub fn as_raw(&self) -> &sys::wk_layout {
        &self.0
    }
}
