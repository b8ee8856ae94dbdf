//! Redis strings owned by the module: created from bytes, read as bytes,
//! freed when dropped; and static ones made once for the fixed names the
//! hot paths pass on every call.

use std::cell::{Cell, RefCell};
use std::os::raw::c_char;
use std::ptr;
use std::rc::Rc;

use redis_module::raw;

use super::api::api;
use super::module_state::PerLoad;

/// An owned `RedisModuleString` (created without a context, so no
/// auto-memory: freed on drop).
pub struct OwnedString(*mut raw::RedisModuleString);

impl OwnedString {
    /// A new string holding `bytes` (any bytes, NUL included).
    pub fn new(bytes: &[u8]) -> Self {
        let create = api!(RedisModule_CreateString);
        // SAFETY: a pointer and length valid for the call; no context, so no auto-memory: the
        // string is freed by `Drop`.
        Self(unsafe { create(ptr::null_mut(), bytes.as_ptr().cast::<c_char>(), bytes.len()) })
    }

    /// A new string holding `parts` concatenated (a key name): built in a
    /// stack buffer, so a name up to 256 bytes costs no heap allocation
    /// besides the Redis string itself.
    pub fn concat<P: AsRef<[u8]>>(parts: &[P]) -> Self {
        let mut buffer = [0u8; 256];
        let mut length = 0usize;
        for part in parts {
            let part = part.as_ref();
            match buffer.get_mut(length..length + part.len()) {
                Some(slot) => slot.copy_from_slice(part),
                None => return Self::new(&parts.iter().flat_map(|part| part.as_ref()).copied().collect::<Vec<u8>>()),
            }
            length += part.len();
        }
        Self::new(buffer.get(..length).unwrap_or_default())
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

    /// Give up ownership: the caller frees the string.
    pub fn into_raw(self) -> *mut raw::RedisModuleString {
        let string = self.0;
        std::mem::forget(self);
        string
    }
}

impl std::fmt::Debug for OwnedString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

impl PartialEq for OwnedString {
    /// Same bytes.
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Clone for OwnedString {
    /// Another reference to the same string (a reference count, no copy).
    fn clone(&self) -> Self {
        // SAFETY: `self.0` is live (we hold a reference); the new reference is released by the
        // clone's `Drop`.
        unsafe { api!(RedisModule_RetainString)(ptr::null_mut(), self.0) };
        Self(self.0)
    }
}

impl Drop for OwnedString {
    fn drop(&mut self) {
        let free = api!(RedisModule_FreeString);
        // SAFETY: releases the one reference this value holds.
        unsafe { free(ptr::null_mut(), self.0) };
    }
}

/// A key's name as a Redis string: one of the key's own, or one shared
/// with the cache of an organization's queue-key names
/// (`stores::dreams::queue_names`), which every queue command opens.
///
/// A shared name is the cache's own Redis string, kept alive by the `Rc`
/// for as long as any key holds it (even once the cache has moved on to
/// another organization and dropped its reference), so handing it to a
/// key costs no Redis call: `RedisModule_RetainString` and
/// `RedisModule_FreeString` per key (about 40 instructions a key) were the
/// price of a reference of its own. Redis takes its own reference or copy
/// wherever it keeps a key name, and nothing changes a name's text.
/// Main thread only, as every key is (`Rc` is neither `Send` nor `Sync`).
pub enum KeyName {
    /// A string made for this key, freed with it.
    Own(OwnedString),
    /// A string shared with the cache of queue-key names.
    Shared(Rc<OwnedString>),
}

impl std::ops::Deref for KeyName {
    type Target = OwnedString;
    fn deref(&self) -> &OwnedString {
        match self {
            Self::Own(name) => name,
            Self::Shared(name) => name,
        }
    }
}

impl Clone for KeyName {
    /// Another holder of the same string: a Redis reference for a name of
    /// its own, an `Rc` count for a shared one.
    fn clone(&self) -> Self {
        match self {
            Self::Own(name) => Self::Own(name.clone()),
            Self::Shared(name) => Self::Shared(Rc::clone(name)),
        }
    }
}

impl std::borrow::Borrow<OwnedString> for KeyName {
    fn borrow(&self) -> &OwnedString {
        self
    }
}

impl From<OwnedString> for KeyName {
    fn from(name: OwnedString) -> Self {
        Self::Own(name)
    }
}

impl From<&[u8]> for KeyName {
    fn from(name: &[u8]) -> Self {
        Self::Own(OwnedString::new(name))
    }
}

impl From<&str> for KeyName {
    fn from(name: &str) -> Self {
        Self::Own(OwnedString::new(name.as_bytes()))
    }
}

impl From<&String> for KeyName {
    fn from(name: &String) -> Self {
        Self::Own(OwnedString::new(name.as_bytes()))
    }
}

/// A Redis string made on first use and kept until the module unloads,
/// for a fixed name (a hash field) that would otherwise be created and
/// freed on every call. The string is a part of the module state (freed
/// with it). Redis takes its own reference (or copy) wherever it keeps
/// one, so sharing the object between calls is safe.
pub struct StaticString {
    bytes: &'static [u8],
    string: PerLoad<Made>,
}

/// The string a [`StaticString`] made in this load (null until then).
struct Made(Cell<*mut raw::RedisModuleString>);

impl Default for Made {
    fn default() -> Self {
        Made(Cell::new(ptr::null_mut()))
    }
}

impl Drop for Made {
    fn drop(&mut self) {
        let made = self.0.replace(ptr::null_mut());
        if !made.is_null() {
            // SAFETY: the string this load made (no context: not
            // auto-memory), taken out of its cell, freed once; whoever
            // else holds it took a reference of its own.
            unsafe { api!(RedisModule_FreeString)(ptr::null_mut(), made) };
        }
    }
}

impl StaticString {
    /// The name `text` (made a Redis string when first used).
    pub const fn new(text: &'static str) -> Self {
        Self { bytes: text.as_bytes(), string: PerLoad::new() }
    }

    /// The Redis string.
    pub fn as_ptr(&'static self) -> *mut raw::RedisModuleString {
        self.string.with(|kept| {
            let made = kept.0.get();
            if !made.is_null() {
                return made;
            }
            let create = api!(RedisModule_CreateString);
            // SAFETY: a pointer and length valid for the call; the string
            // is kept until the module unloads (`Made`).
            let made = unsafe { create(ptr::null_mut(), self.bytes.as_ptr().cast::<c_char>(), self.bytes.len()) };
            kept.0.set(made);
            made
        })
    }
}

/// The bytes of a string the server owns for at least `'a`.
pub fn bytes_of<'a>(string: *const raw::RedisModuleString) -> &'a [u8] {
    if string.is_null() {
        return &[];
    }
    let mut len = 0usize;
    let ptr_len = api!(RedisModule_StringPtrLen);
    // SAFETY: `string` is a live server string (not null here), per the caller's contract.
    let data = unsafe { ptr_len(string, &mut len) };
    if data.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: the string's own buffer of `len` bytes, valid for `'a` per the caller's contract.
        unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }
    }
}

/// Copy out a string the API returned and free it.
pub fn take_bytes(string: *mut raw::RedisModuleString) -> Option<Vec<u8>> {
    OwnedString::from_raw(string).map(|owned| owned.as_bytes().to_vec())
}

/// `value` in decimal (`-` for a negative one), written at the end of
/// `buffer` two digits at a time: what `ll2string` writes.
pub fn decimal(value: i64, buffer: &mut [u8; 20]) -> &[u8] {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let mut rest = value.unsigned_abs();
    let mut start = buffer.len();
    while rest >= 100 {
        let pair = (rest % 100) as usize * 2;
        rest /= 100;
        start -= 2;
        if let (Some(slot), Some(digits)) = (buffer.get_mut(start..start + 2), PAIRS.get(pair..pair + 2)) {
            slot.copy_from_slice(digits);
        }
    }
    let pair = rest as usize * 2;
    let digits = match rest >= 10 {
        true => PAIRS.get(pair..pair + 2),
        false => PAIRS.get(pair + 1..pair + 2),
    };
    if let Some(digits) = digits {
        start -= digits.len();
        if let Some(slot) = buffer.get_mut(start..start + digits.len()) {
            slot.copy_from_slice(digits);
        }
    }
    if value < 0 {
        start -= 1;
        if let Some(sign) = buffer.get_mut(start) {
            *sign = b'-';
        }
    }
    buffer.get(start..).unwrap_or_default()
}

/// The decimal strings of 0 to 9, made once a load (see [`StaticString`]): a
/// write often carries one (an acknowledged region's retained `memories`
/// and `edges` are usually 0), and a shared string saves making and
/// freeing one (~300 instructions). Redis never changes a string it holds
/// more than one reference to, and this one always holds one.
static DIGITS: [StaticString; 10] = [
    StaticString::new("0"),
    StaticString::new("1"),
    StaticString::new("2"),
    StaticString::new("3"),
    StaticString::new("4"),
    StaticString::new("5"),
    StaticString::new("6"),
    StaticString::new("7"),
    StaticString::new("8"),
    StaticString::new("9"),
];

/// The last clock second a write carried ([`Argv::new_second`]), and its
/// string, kept from one write to the next: every acknowledgement in that
/// second writes it again (`last_success`), and a shared string (another
/// reference) is cheaper than one made and freed each time (~260
/// instructions). Shared as [`DIGITS`] are, and safe for the same reason
/// (this holds a reference while it keeps the string). A part of the
/// module state (freed with it).
static LAST_SECOND: PerLoad<RefCell<Option<(i64, OwnedString)>>> = PerLoad::new();

/// A reference of its own to a string holding `secs` in decimal: the
/// kept one if it holds `secs`, else a new one, then kept instead.
fn last_second(secs: i64) -> OwnedString {
    let made = || {
        let mut buffer = [0u8; 20];
        OwnedString::new(decimal(secs, &mut buffer))
    };
    LAST_SECOND.with(|last| {
        let mut last = last.borrow_mut();
        match &*last {
            Some((kept, string)) if *kept == secs => string.clone(),
            _ => {
                let string = made();
                *last = Some((secs, string.clone()));
                string
            }
        }
    })
}

/// How many arguments an [`Argv`] holds without a heap allocation.
const INLINE_ARGS: usize = 12;

/// The arguments of one write, as Redis strings in order: ones made for it
/// (freed on drop) and borrowed ones (a key's name, static field names).
/// Up to [`INLINE_ARGS`] live on the stack; every key write builds one, so
/// the common write allocates nothing on the Rust heap.
pub struct Argv {
    inline: [*mut raw::RedisModuleString; INLINE_ARGS],
    inline_owned: [bool; INLINE_ARGS],
    len: usize,
    spilled: Vec<(*mut raw::RedisModuleString, bool)>,
    spilled_view: Vec<*mut raw::RedisModuleString>,
}

impl Argv {
    /// No arguments yet.
    pub fn new() -> Self {
        Self {
            inline: [ptr::null_mut(); INLINE_ARGS],
            inline_owned: [false; INLINE_ARGS],
            len: 0,
            spilled: Vec::new(),
            spilled_view: Vec::new(),
        }
    }

    fn push(&mut self, string: *mut raw::RedisModuleString, owned: bool) {
        if self.spilled.is_empty() {
            if let (Some(slot), Some(flag)) = (self.inline.get_mut(self.len), self.inline_owned.get_mut(self.len)) {
                *slot = string;
                *flag = owned;
                self.len += 1;
                return;
            }
            let inline = self.inline.iter().copied().zip(self.inline_owned.iter().copied());
            self.spilled.extend(inline.take(self.len));
            self.spilled_view.extend(self.inline.iter().copied().take(self.len));
            self.len = 0;
        }
        self.spilled.push((string, owned));
        self.spilled_view.push(string);
    }

    /// Append a string the caller keeps alive until this is dropped.
    pub fn borrowed(&mut self, string: *mut raw::RedisModuleString) {
        self.push(string, false);
    }

    /// Append a new string holding `bytes`; the new string, for the write.
    pub fn new_string(&mut self, bytes: &[u8]) -> *mut raw::RedisModuleString {
        let string = OwnedString::new(bytes).into_raw();
        self.push(string, true);
        string
    }

    /// Append a string holding `value` in decimal: for 0 to 9 one made once
    /// and shared ([`DIGITS`]), else a new one, written here and made with
    /// `RM_CreateString`, the same string `RM_CreateStringFromLongLong`
    /// makes without its slower `ll2string`.
    pub fn new_integer(&mut self, value: i64) -> *mut raw::RedisModuleString {
        if let Some(digit) = usize::try_from(value).ok().and_then(|index| DIGITS.get(index)) {
            let string = digit.as_ptr();
            self.borrowed(string);
            return string;
        }
        let mut buffer = [0u8; 20];
        let string = OwnedString::new(decimal(value, &mut buffer)).into_raw();
        self.push(string, true);
        string
    }

    /// [`Argv::new_integer`] of a clock reading in unix seconds (usually the
    /// current second): the string of the last one appended is kept and
    /// shared while the second lasts ([`LAST_SECOND`]).
    pub fn new_second(&mut self, secs: i64) -> *mut raw::RedisModuleString {
        let string = last_second(secs).into_raw();
        self.push(string, true);
        string
    }

    /// The arguments, in order.
    pub fn as_slice(&self) -> &[*mut raw::RedisModuleString] {
        if self.spilled.is_empty() {
            self.inline.get(..self.len).unwrap_or_default()
        } else {
            &self.spilled_view
        }
    }
}

impl Drop for Argv {
    fn drop(&mut self) {
        let free = api!(RedisModule_FreeString);
        let inline = self.inline.iter().zip(self.inline_owned.iter()).take(self.len);
        let spilled = self.spilled.iter().map(|(string, owned)| (string, owned));
        for (string, owned) in inline.chain(spilled) {
            if *owned {
                // SAFETY: a string this `Argv` made (`owned`), freed once.
                unsafe { free(ptr::null_mut(), *string) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{decimal, DIGITS};

    #[test]
    fn the_shared_digits_are_the_decimals_of_their_index() {
        for (index, digit) in DIGITS.iter().enumerate() {
            assert_eq!(digit.bytes, index.to_string().as_bytes());
        }
    }

    #[test]
    fn decimal_writes_what_to_string_writes() {
        let mut samples = vec![0i64, 1, -1, 9, 10, 99, 100, 101, 999, 1000, 12345, i64::MAX, i64::MIN, i64::MIN + 1];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let shift = (x % 64) as u32;
            samples.push((x >> shift) as i64);
            samples.push(-((x >> shift) as i64));
        }
        for value in samples {
            let mut buffer = [0u8; 20];
            assert_eq!(decimal(value, &mut buffer), value.to_string().as_bytes(), "{value}");
        }
    }
}
