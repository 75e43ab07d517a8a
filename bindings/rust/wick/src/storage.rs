//! Storages: a typed buffer on one device, freed on Drop. Out-of-place ops (ops.rs) take
//! `&self` and return a new Storage; in-place ones (here) take `&mut self`, so Rust's borrow
//! rules keep a storage from being written while anything else reads it.
use crate::device::Device;
use crate::error::{check, rust_error, Result, Status};
use crate::layout::Layout;
use crate::types::{DType, Element};
use std::ptr::NonNull;
use wick_sys as sys;

pub struct Storage {
    ptr: NonNull<sys::wk_storage>,
    dev: Device, // keeps the device open while the storage lives
}

// SAFETY: a storage is a buffer plus immutable facts (device, dtype, length); wick's reference
// count on it is atomic, and it may be freed from any thread. Reads (&self) from several threads
// are reads of the buffer; writes need &mut self. (Memory shared through DLPack is outside these
// rules: see `export_dlpack` / `import_dlpack`.)
unsafe impl Send for Storage {}
unsafe impl Sync for Storage {}

impl Drop for Storage {
    fn drop(&mut self) {
        // SAFETY: this Storage owns one reference
        unsafe { sys::wk_storage_free(self.ptr.as_ptr()) }
    }
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Storage({} x {}, {})", self.len(), self.dtype().name(), self.dev.name())
    }
}

pub(crate) fn check_elem<T: Element>(dtype: DType, what: &str) -> Result<()> {
    if std::mem::size_of::<T>() != dtype.size() {
        return Err(rust_error(Status::DType, 102, format!(
            "{what}: {}-byte host elements for {} ({} bytes)",
            std::mem::size_of::<T>(), dtype.name(), dtype.size())));
    }
    Ok(())
}

impl Storage {
    /// Takes ownership of a non-NULL storage pointer returned by a successful wick call.
    pub(crate) fn wrap(p: *mut sys::wk_storage, dev: Device) -> Storage {
        Storage { ptr: NonNull::new(p).expect("wick returned WK_OK and a NULL storage"), dev }
    }
    pub(crate) fn raw(&self) -> *mut sys::wk_storage {
        self.ptr.as_ptr()
    }
    /// The C handle, for wick-sys calls (valid while this Storage lives).
    pub fn as_raw(&self) -> *const sys::wk_storage {
        self.ptr.as_ptr()
    }
    pub fn device(&self) -> &Device {
        &self.dev
    }
    pub fn dtype(&self) -> DType {
        // SAFETY: a live handle; wick only makes storages of valid dtypes
        DType::from_raw(unsafe { sys::wk_storage_dtype(self.raw()) }).expect("a wick dtype")
    }
    /// Elements.
    pub fn len(&self) -> usize {
        // SAFETY: a live handle
        unsafe { sys::wk_storage_len(self.raw()) }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The base address (host memory on the CPU, a device address on a GPU).
    pub fn data_ptr(&self) -> *mut std::ffi::c_void {
        // SAFETY: a live handle
        unsafe { sys::wk_storage_data(self.raw()) }
    }
    /// True for memory imported read-only through DLPack (in-place ops refuse it).
    pub fn is_readonly(&self) -> bool {
        // SAFETY: a live handle
        unsafe { sys::wk_storage_is_readonly(self.raw()) != 0 }
    }
    /// All elements, copied to the host as T (T of the dtype's size; waits for the device).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        check_elem::<T>(self.dtype(), "to_vec")?;
        let mut v = vec![T::default(); self.len()];
        // SAFETY: v holds len elements of the dtype's size
        check(unsafe { sys::wk_storage_to_host(v.as_mut_ptr().cast(), v.len(), self.raw()) })?;
        Ok(v)
    }
    /// A copy on the same device.
    pub fn try_clone(&self) -> Result<Storage> {
        let mut o = std::ptr::null_mut();
        // SAFETY: a live handle and a valid out pointer
        check(unsafe { sys::wk_storage_clone(&mut o, self.raw()) })?;
        Ok(Storage::wrap(o, self.dev.clone()))
    }

    // ---- in place
    /// Every element addressed by l becomes value (converted to the dtype with wick's rules:
    /// round to nearest even for floats, truncation for integers).
    pub fn const_set(&mut self, l: &Layout, value: f64) -> Result<()> {
        let mut raw = [0u8; 8];
        // SAFETY: the scalar conversions accept any value
        unsafe {
            match self.dtype() {
                DType::U8 => raw[0] = value as u8,
                DType::U32 => raw[..4].copy_from_slice(&(value as u32).to_ne_bytes()),
                DType::I16 => raw[..2].copy_from_slice(&(value as i16).to_ne_bytes()),
                DType::I32 => raw[..4].copy_from_slice(&(value as i32).to_ne_bytes()),
                DType::I64 => raw[..8].copy_from_slice(&(value as i64).to_ne_bytes()),
                DType::F32 => raw[..4].copy_from_slice(&(value as f32).to_ne_bytes()),
                DType::F64 => raw[..8].copy_from_slice(&value.to_ne_bytes()),
                DType::F16 => raw[..2].copy_from_slice(&sys::wk_f32_to_f16(value as f32).to_ne_bytes()),
                DType::BF16 => raw[..2].copy_from_slice(&sys::wk_f32_to_bf16(value as f32).to_ne_bytes()),
                DType::F8E4M3 => raw[0] = sys::wk_f32_to_f8e4m3(value as f32),
            }
        }
        // SAFETY: raw holds one element of the dtype; wick checks l against the storage
        check(unsafe { sys::wk_const_set(self.raw(), &l.0, raw.as_ptr().cast()) })
    }
    /// self[dst_offset + i] = src[element i of ls] (row-major).
    pub fn copy_strided_src(&mut self, dst_offset: usize, src: &Storage, ls: &Layout) -> Result<()> {
        // SAFETY: live handles (distinct: &mut self and &src cannot alias); wick checks bounds
        check(unsafe { sys::wk_copy_strided_src(self.raw(), dst_offset, src.raw(), &ls.0) })
    }
    /// Candle's copy2d: d1 rows of d2 elements from src (row stride src_stride1, from
    /// src_offset) into self (dst_stride1, dst_offset).
    #[allow(clippy::too_many_arguments)]
    pub fn copy2d(&mut self, src: &Storage, d1: usize, d2: usize, src_stride1: usize,
                  dst_stride1: usize, src_offset: usize, dst_offset: usize) -> Result<()> {
        // SAFETY: as above
        check(unsafe { sys::wk_copy2d(self.raw(), src.raw(), d1, d2, src_stride1, dst_stride1,
                                      src_offset, dst_offset) })
    }
    /// self[.., ids[.., i, ..], ..] = src[.., i, ..] along dim (ld views self).
    pub fn scatter_set(&mut self, ld: &Layout, ids: &Storage, li: &Layout, src: &Storage,
                       ls: &Layout, dim: usize) -> Result<()> {
        // SAFETY: live handles; wick checks every id and layout
        check(unsafe { sys::wk_scatter_set(self.raw(), &ld.0, ids.raw(), &li.0, src.raw(), &ls.0,
                                           dim as i32) })
    }
    /// self[.., ids[.., i, ..], ..] += src[.., i, ..] along dim.
    pub fn scatter_add_set(&mut self, ld: &Layout, ids: &Storage, li: &Layout, src: &Storage,
                           ls: &Layout, dim: usize) -> Result<()> {
        // SAFETY: as above
        check(unsafe { sys::wk_scatter_add_set(self.raw(), &ld.0, ids.raw(), &li.0, src.raw(),
                                               &ls.0, dim as i32) })
    }

    // ---- DLPack
    /// A DLPack 1.x view of (self, l), no copy. The returned tensor holds a reference on the
    /// storage until its deleter runs; the caller must call the deleter exactly once. The memory
    /// is then shared: writes through it while this Storage is borrowed are the caller's
    /// responsibility (the reason the pointer is raw).
    pub fn export_dlpack(&self, l: &Layout) -> Result<*mut sys::DLManagedTensorVersioned> {
        let mut t = std::ptr::null_mut();
        // SAFETY: a live handle; wick checks l
        check(unsafe { sys::wk_dlpack_export(&mut t, self.raw(), &l.0) })?;
        Ok(t)
    }
    /// A storage on dev viewing t's memory (no copy), and the layout reading it. On success the
    /// storage owns t (its deleter runs once, on drop); on failure t stays the caller's.
    ///
    /// # Safety
    /// t must point to a valid DLManagedTensorVersioned whose memory stays valid until its
    /// deleter is called, and nothing else may write that memory while Rust reads it.
    pub unsafe fn import_dlpack(dev: &Device, t: *mut sys::DLManagedTensorVersioned)
                                -> Result<(Storage, Layout)> {
        let mut s = std::ptr::null_mut();
        let mut l = Layout::contiguous(&[])?;
        check(sys::wk_dlpack_import(&mut s, &mut l.0, dev.ptr(), t))?;
        Ok((Storage::wrap(s, dev.clone()), l))
    }
}
