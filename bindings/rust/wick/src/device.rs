//! Devices. A `Device` is a shared handle (cloning is cheap); the C handle closes when the last
//! clone and the last storage on it are dropped, so a storage can never outlive its device.
use crate::error::{check, cstring, Result};
use crate::storage::Storage;
use crate::types::{Backend, DType, Element, OpId};
use std::ffi::CStr;
use std::ptr::NonNull;
use std::sync::Arc;
use wick_sys as sys;

pub(crate) struct DeviceHandle(NonNull<sys::wk_device>);

// SAFETY: wick's device state that calls share is synchronized on the C side (the GPU caching
// allocator behind a mutex, the thread-safe module cache, the random counter advanced
// atomically, one stream per device that every launch is ordered on; the CPU backend has no
// shared mutable state), so a device handle may be used from several threads at once.
unsafe impl Send for DeviceHandle {}
unsafe impl Sync for DeviceHandle {}

impl Drop for DeviceHandle {
    fn drop(&mut self) {
        // SAFETY: the handle came from wk_device_open and every storage on it is gone (each
        // holds an Arc to this handle)
        unsafe { sys::wk_device_close(self.0.as_ptr()) }
    }
}

#[derive(Clone)]
pub struct Device(pub(crate) Arc<DeviceHandle>);

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Device({})", self.name())
    }
}

impl PartialEq for Device {
    fn eq(&self, o: &Device) -> bool {
        // SAFETY: two live handles
        unsafe { sys::wk_device_same(self.ptr(), o.ptr()) != 0 }
    }
}

impl Device {
    /// Opens "cpu", "cuda:N", "rocm:N" or "auto".
    pub fn open(spec: &str) -> Result<Device> {
        let spec = cstring(spec)?;
        let mut d = std::ptr::null_mut();
        // SAFETY: valid out pointer and C string
        check(unsafe { sys::wk_device_open(&mut d, spec.as_ptr()) })?;
        Ok(Device(Arc::new(DeviceHandle(NonNull::new(d).expect("wk_device_open: WK_OK and NULL")))))
    }
    pub fn cpu() -> Result<Device> {
        Device::open("cpu")
    }
    /// How many devices a backend has here (0 when unavailable) and, if none, why.
    pub fn count(backend: Backend) -> (usize, String) {
        let mut n = 0;
        let mut why = std::ptr::null();
        // SAFETY: valid out pointers; the reason is a static string
        let st = unsafe { sys::wk_backend_device_count(&mut n, &mut why, backend.raw()) };
        let why = if why.is_null() { String::new() }
                  else { unsafe { CStr::from_ptr(why) }.to_string_lossy().into_owned() };
        (if st == sys::wk_status::WK_OK { n.max(0) as usize } else { 0 }, why)
    }
    pub(crate) fn ptr(&self) -> *mut sys::wk_device {
        self.0 .0.as_ptr()
    }
    /// The C handle, for wick-sys calls (valid while this Device lives).
    pub fn as_raw(&self) -> *mut sys::wk_device {
        self.ptr()
    }
    pub fn name(&self) -> String {
        // SAFETY: a live handle; the name lives as long as the device
        unsafe { CStr::from_ptr(sys::wk_device_name(self.ptr())) }.to_string_lossy().into_owned()
    }
    pub fn backend(&self) -> Backend {
        // SAFETY: a live handle
        match unsafe { sys::wk_device_backend(self.ptr()) }.0 {
            1 => Backend::Cuda,
            2 => Backend::Rocm,
            _ => Backend::Cpu,
        }
    }
    pub fn ordinal(&self) -> i32 {
        // SAFETY: a live handle
        unsafe { sys::wk_device_ordinal(self.ptr()) }
    }
    /// Waits for queued work; reports deferred errors (an out-of-range id on a GPU).
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: a live handle
        check(unsafe { sys::wk_device_synchronize(self.ptr()) })
    }
    pub fn supports(&self, op: OpId, dtype: DType) -> bool {
        // SAFETY: a live handle; any op/dtype value is accepted
        unsafe { sys::wk_device_supports(self.ptr(), op, dtype.raw()) != 0 }
    }
    pub fn set_seed(&self, seed: u64) -> Result<()> {
        // SAFETY: a live handle
        check(unsafe { sys::wk_device_set_seed(self.ptr(), seed) })
    }
    fn new_storage(&self, f: impl FnOnce(*mut *mut sys::wk_storage) -> sys::wk_status) -> Result<Storage> {
        let mut s = std::ptr::null_mut();
        check(f(&mut s))?;
        Ok(Storage::wrap(s, self.clone()))
    }
    /// n elements of a float dtype, uniform in [lo, up) (Philox; the same on every backend).
    pub fn rand_uniform(&self, dtype: DType, n: usize, lo: f64, up: f64) -> Result<Storage> {
        // SAFETY: a live handle and a valid out pointer
        self.new_storage(|o| unsafe { sys::wk_rand_uniform(o, self.ptr(), dtype.raw(), n, lo, up) })
    }
    /// n elements of a float dtype, normal(mean, std).
    pub fn rand_normal(&self, dtype: DType, n: usize, mean: f64, std: f64) -> Result<Storage> {
        // SAFETY: as above
        self.new_storage(|o| unsafe { sys::wk_rand_normal(o, self.ptr(), dtype.raw(), n, mean, std) })
    }
    /// n zero elements.
    pub fn zeros(&self, dtype: DType, n: usize) -> Result<Storage> {
        // SAFETY: as above
        self.new_storage(|o| unsafe { sys::wk_storage_zeros(o, self.ptr(), dtype.raw(), n) })
    }
    /// n elements whose contents are unspecified (whatever the memory held).
    pub fn alloc_uninit(&self, dtype: DType, n: usize) -> Result<Storage> {
        // SAFETY: as above; the bytes are never read by Rust before wick writes or copies them
        self.new_storage(|o| unsafe { sys::wk_storage_alloc_uninit(o, self.ptr(), dtype.raw(), n) })
    }
    /// A copy of data, as elements of T's natural dtype.
    pub fn from_slice<T: Element>(&self, data: &[T]) -> Result<Storage> {
        self.from_raw(T::DTYPE, data)
    }
    /// A copy of data as elements of dtype: T must have the dtype's size (raw bits: u16 for
    /// bf16 or f16, u8 for f8e4m3).
    pub fn from_raw<T: Element>(&self, dtype: DType, data: &[T]) -> Result<Storage> {
        crate::storage::check_elem::<T>(dtype, "from_raw")?;
        // SAFETY: data holds data.len() elements of the dtype's size
        self.new_storage(|o| unsafe {
            sys::wk_storage_from_host(o, self.ptr(), dtype.raw(), data.as_ptr().cast(), data.len())
        })
    }
}
