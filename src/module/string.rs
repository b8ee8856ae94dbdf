//! Redis strings owned by the module: created from bytes, read as bytes,
//! freed when dropped; and static ones made once for the fixed names the
//! hot paths pass on every call.

use std::os::raw::c_char;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use redis_module::raw;

use super::api::api;

/// An owned `RedisModuleString` (created without a context, so no
/// auto-memory: freed on drop).
pub struct OwnedString(*mut raw::RedisModuleString);

impl OwnedString {
    /// A new string holding `bytes` (any bytes, NUL included).
    pub fn new(bytes: &[u8]) -> Self {
        let create = api!(RedisModule_CreateString);
        Self(unsafe { create(ptr::null_mut(), bytes.as_ptr().cast::<c_char>(), bytes.len()) })
    }

    /// Take ownership of a string the API returned to us (may be null).
    pub fn from_raw(string: *mut raw::RedisModuleString) -> Option<Self> {
        if string.is_null() {
            None
        } else {
            Some(Self(string))
        }
    }

    /// The raw pointer, still owned by `self`.
    pub fn as_ptr(&self) -> *mut raw::RedisModuleString {
        self.0
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        bytes_of(self.0)
    }
}

impl Drop for OwnedString {
    fn drop(&mut self) {
        let free = api!(RedisModule_FreeString);
        unsafe { free(ptr::null_mut(), self.0) };
    }
}

/// A Redis string made on first use and kept for the server's lifetime,
/// for a fixed name (a hash field) that would otherwise be created and
/// freed on every call. Only ever touched on Redis's main thread; the
/// atomic is just the `Sync` way to hold the pointer in a `static`. Redis
/// takes its own reference (or copy) wherever it keeps one, so sharing
/// the object between calls is safe; it is never freed.
pub struct StaticString {
    bytes: &'static [u8],
    string: AtomicPtr<raw::RedisModuleString>,
}

impl StaticString {
    /// The name `text` (made a Redis string when first used).
    pub const fn new(text: &'static str) -> Self {
        Self {
            bytes: text.as_bytes(),
            string: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// The Redis string.
    pub fn as_ptr(&self) -> *mut raw::RedisModuleString {
        let made = self.string.load(Ordering::Relaxed);
        if !made.is_null() {
            return made;
        }
        let create = api!(RedisModule_CreateString);
        let made = unsafe { create(ptr::null_mut(), self.bytes.as_ptr().cast::<c_char>(), self.bytes.len()) };
        self.string.store(made, Ordering::Relaxed);
        made
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &'static [u8] {
        self.bytes
    }
}

/// The bytes of a string the server owns for at least `'a`.
pub fn bytes_of<'a>(string: *const raw::RedisModuleString) -> &'a [u8] {
    if string.is_null() {
        return &[];
    }
    let mut len = 0usize;
    let ptr_len = api!(RedisModule_StringPtrLen);
    let data = unsafe { ptr_len(string, &mut len) };
    if data.is_null() || len == 0 {
        &[]
    } else {
        unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }
    }
}

/// Copy out a string the API returned and free it.
pub fn take_bytes(string: *mut raw::RedisModuleString) -> Option<Vec<u8>> {
    OwnedString::from_raw(string).map(|owned| owned.as_bytes().to_vec())
}
