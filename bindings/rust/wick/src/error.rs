//! Errors: every fallible call returns `Result<_, Error>`; an Error carries the C status and the
//! calling thread's `wk_last_error()` message, read right after the failed call.
use std::ffi::CStr;
use std::fmt;
use wick_sys as sys;

/// wick's status groups (wick.h `wk_status`); `Other` keeps a value this crate does not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    InvalidArgument,
    Shape,
    DType,
    Layout,
    Overflow,
    IndexOutOfRange,
    DeviceMismatch,
    OutOfMemory,
    Device,
    NoDevice,
    Timeout,
    NotSupported,
    Io,
    Format,
    Internal,
    Other(u32),
}

impl Status {
    pub fn from_code(code: u32) -> Status {
        match code {
            100 => Status::InvalidArgument,
            101 => Status::Shape,
            102 => Status::DType,
            103 => Status::Layout,
            104 => Status::Overflow,
            105 => Status::IndexOutOfRange,
            106 => Status::DeviceMismatch,
            200 => Status::OutOfMemory,
            300 => Status::Device,
            301 => Status::NoDevice,
            302 => Status::Timeout,
            400 => Status::NotSupported,
            500 => Status::Io,
            501 => Status::Format,
            900 => Status::Internal,
            c => Status::Other(c),
        }
    }
}

/// A failed wick call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub status: Status,
    /// The numeric wk_status.
    pub code: u32,
    /// wk_status_string(code), e.g. "WK_ERR_SHAPE: shape mismatch".
    pub name: String,
    /// wk_last_error(): the op, shapes and dtypes involved.
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name, self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

fn c_str(p: *const std::os::raw::c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: wick returns NUL-terminated strings that live at least until the next call
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Ok for WK_OK, else the Error of the calling thread's last call.
pub(crate) fn check(st: sys::wk_status) -> Result<()> {
    if st == sys::wk_status::WK_OK {
        return Ok(());
    }
    // SAFETY: plain calls without arguments that can be wrong
    let (name, message) = unsafe { (c_str(sys::wk_status_string(st)), c_str(sys::wk_last_error())) };
    Err(Error { status: Status::from_code(st.0), code: st.0, name, message })
}

/// An error made on the Rust side (a size that does not fit, a slice of the wrong type).
pub(crate) fn rust_error(status: Status, code: u32, message: String) -> Error {
    // SAFETY: wk_status_string accepts any value
    let name = c_str(unsafe { sys::wk_status_string(sys::wk_status(code)) });
    Error { status, code, name, message }
}

pub(crate) fn cstring(s: &str) -> Result<std::ffi::CString> {
    std::ffi::CString::new(s).map_err(|_| {
        rust_error(Status::InvalidArgument, 100, format!("{s:?} holds a NUL byte"))
    })
}
