//! Module configuration, the mechanism: `CONFIG SET/GET dreamtown.<name>`,
//! `loadmodule ... <name> <value>` and redis.conf lines. The settings
//! themselves are declared by their owners (the families' commands, the
//! services) as [`Numeric`] and [`Text`] statics and handed over at load
//! ([`register`]). Numbers are range-checked by Redis; a text setting is
//! checked by its owner's rule, so a bad value is refused and the old one
//! stays.

use std::cell::Cell;
use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_longlong, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

use redis_module::raw;

use super::api::api;
use super::ctx::Ctx;
use super::module_state::PerLoad;

/// A numeric setting: its name (after `dreamtown.`), default (before
/// `loadmodule` arguments), inclusive range, and current value.
pub struct Numeric {
    name: &'static str,
    default: i64,
    range: (i64, i64),
    value: AtomicI64,
}

impl Numeric {
    /// A setting `name` of `default` in `range` (inclusive).
    pub const fn new(name: &'static str, default: i64, range: (i64, i64)) -> Self {
        Self { name, default, range, value: AtomicI64::new(default) }
    }

    /// The current value.
    pub fn get(&self) -> i64 {
        self.value.load(Ordering::Relaxed)
    }

    /// The current value as a `u64` (0 if negative).
    pub fn unsigned(&self) -> u64 {
        u64::try_from(self.get()).unwrap_or(0)
    }
}

/// A text setting: its name, default, the error for a value that is not
/// text, its owner's check (the error text when a value is refused), and
/// the current (validated) text.
pub struct Text {
    name: &'static str,
    default: &'static str,
    not_text: &'static str,
    check: fn(&str) -> Result<(), String>,
    value: Mutex<String>,
}

impl Text {
    /// A setting `name` of `default`; `not_text` refuses a value that is
    /// not UTF-8 (or holds a NUL), `check` any other bad value.
    pub const fn new(
        name: &'static str,
        default: &'static str,
        not_text: &'static str,
        check: fn(&str) -> Result<(), String>,
    ) -> Self {
        Self { name, default, not_text, check, value: Mutex::new(String::new()) }
    }

    /// Run `read` over the current text (under its lock, no copy).
    pub fn with<R>(&self, read: impl FnOnce(&str) -> R) -> R {
        match self.value.lock() {
            Ok(text) => read(&text),
            Err(poisoned) => read(&poisoned.into_inner()),
        }
    }

    /// Validate and install `text` (the setter); the error text when it is
    /// refused (the old value stays).
    fn set(&'static self, text: &[u8]) -> Result<(), String> {
        let text = std::str::from_utf8(text).map_err(|_| self.not_text.to_owned())?;
        (self.check)(text)?;
        self.replace(text.to_owned());
        SET_TEXTS.with(|texts| texts.remember(self));
        Ok(())
    }

    /// Install `text`, dropping the value before.
    fn replace(&self, text: String) {
        match self.value.lock() {
            Ok(mut current) => *current = text,
            Err(poisoned) => *poisoned.into_inner() = text,
        }
    }

    fn text(&self) -> String {
        self.with(str::to_owned)
    }
}

/// The text settings this load set: their values are freed with the load's
/// state (at `MODULE UNLOAD`, or a failed load). The `Text`s are statics,
/// which the server keeps pointers to; their text is on the heap, and a
/// `MODULE UNLOAD` that unmaps the library would lose it (LeakSanitizer's
/// report, `make test-asan`). The next load sets every one again.
#[derive(Default)]
struct SetTexts(std::cell::RefCell<Vec<&'static Text>>);

impl SetTexts {
    fn remember(&self, text: &'static Text) {
        let mut texts = self.0.borrow_mut();
        if !texts.iter().any(|known| std::ptr::eq(*known, text)) {
            texts.push(text);
        }
    }
}

impl Drop for SetTexts {
    fn drop(&mut self) {
        for text in self.0.get_mut().drain(..) {
            text.replace(String::new());
        }
    }
}

static SET_TEXTS: PerLoad<SetTexts> = PerLoad::new();

/// A setting as the module registers it.
#[derive(Clone, Copy)]
pub enum Setting {
    /// A number.
    Numeric(&'static Numeric),
    /// A text.
    Text(&'static Text),
}

/// Validate `loadmodule` / `MODULE LOADEX ... ARGS` arguments against
/// `settings`: `<name> <value>` pairs of known settings, each at most once,
/// numbers in range. The configuration layer would otherwise ignore an
/// unknown or misspelt name, a missing value or a repeat, and install an
/// out-of-range number (Redis enforces the ranges on `CONFIG SET`, but
/// installs the defaults the module registers unchecked).
pub fn check_module_args(args: &[&[u8]], settings: &[Setting]) -> Result<(), String> {
    if !args.len().is_multiple_of(2) {
        return Err("module arguments must be <name> <value> pairs".into());
    }
    let numeric = || {
        settings.iter().filter_map(|setting| match setting {
            Setting::Numeric(numeric) => Some(*numeric),
            Setting::Text(_) => None,
        })
    };
    let text = || {
        settings.iter().filter_map(|setting| match setting {
            Setting::Text(text) => Some(text.name),
            Setting::Numeric(_) => None,
        })
    };
    let mut seen: Vec<&[u8]> = Vec::new();
    for pair in args.chunks(2) {
        let (name, value) = match pair {
            [name, value] => (*name, *value),
            _ => continue,
        };
        let shown = String::from_utf8_lossy(name);
        if seen.contains(&name) {
            return Err(format!("module argument '{shown}' given more than once"));
        }
        seen.push(name);
        if text().any(|known| known.as_bytes() == name) {
            continue;
        }
        let Some(Numeric { range: (min, max), .. }) = numeric().find(|known| known.name.as_bytes() == name) else {
            let known: Vec<&str> = numeric().map(|known| known.name).chain(text()).collect();
            return Err(format!("unknown module argument '{shown}' (known: {})", known.join(", ")));
        };
        let number = std::str::from_utf8(value).ok().and_then(|text| text.parse::<i64>().ok());
        match number {
            Some(number) if (*min..=*max).contains(&number) => {}
            _ => {
                return Err(format!(
                    "module argument {shown} must be an integer from {min} to {max}, got '{}'",
                    String::from_utf8_lossy(value)
                ))
            }
        }
    }
    Ok(())
}

/// Register `settings` with the server and load the values given by
/// `MODULE LOADEX ... CONFIG` or redis.conf; `args` (`loadmodule`
/// arguments, already checked by [`check_module_args`]) replace the
/// defaults. Called from the module's load.
///
/// Why not the `redis_module!` macro's `configurations`: it gives each
/// setting a boxed private data the server never frees (no free callback),
/// 11 small boxes left behind by every `MODULE LOAD` (352 bytes of
/// `used_memory` a load/unload cycle). Here the private data is the
/// setting's own static: nothing to free.
pub fn register(ctx: Ctx, args: &[&[u8]], settings: &[Setting]) -> Result<(), String> {
    let given = |name: &str| {
        args.chunks(2).find(|pair| pair.first() == Some(&name.as_bytes())).and_then(|pair| pair.get(1).copied())
    };
    for setting in settings {
        let Setting::Numeric(numeric) = setting else { continue };
        let (name, (min, max)) = (numeric.name, numeric.range);
        let default = given(name)
            .and_then(|value| std::str::from_utf8(value).ok())
            .and_then(|value| value.parse::<i64>().ok())
            .unwrap_or(numeric.default);
        let c_name = CString::new(name).map_err(|_| format!("bad setting name {name}"))?;
        let privdata = std::ptr::from_ref::<AtomicI64>(&numeric.value).cast_mut().cast::<c_void>();
        // SAFETY: `ctx` is the load's live context; the name is NUL-terminated; `privdata` points
        // at the setting's `static` `AtomicI64` (`Setting` holds `&'static`), which the callbacks
        // read as one.
        let done = unsafe {
            api!(RedisModule_RegisterNumericConfig)(
                ctx.raw(),
                c_name.as_ptr(),
                default,
                raw::REDISMODULE_CONFIG_DEFAULT,
                min,
                max,
                Some(get_numeric),
                Some(set_numeric),
                None,
                privdata,
            )
        };
        if done != raw::REDISMODULE_OK as c_int {
            return Err(format!("could not register the setting {name}"));
        }
    }
    for setting in settings {
        let Setting::Text(text) = setting else { continue };
        let name = text.name;
        let default = given(name).map_or_else(|| text.default.as_bytes().to_vec(), <[u8]>::to_vec);
        let default = CString::new(default).map_err(|_| text.not_text.to_owned())?;
        let c_name = CString::new(name).map_err(|_| format!("bad setting name {name}"))?;
        let privdata = std::ptr::from_ref::<Text>(text).cast_mut().cast::<c_void>();
        // SAFETY: `ctx` is the load's live context; the name and default are NUL-terminated (the
        // server copies them); `privdata` points at the setting's `static` `Text`, which the
        // callbacks read as one.
        let done = unsafe {
            api!(RedisModule_RegisterStringConfig)(
                ctx.raw(),
                c_name.as_ptr(),
                default.as_ptr(),
                raw::REDISMODULE_CONFIG_DEFAULT,
                Some(get_text),
                Some(set_text),
                None,
                privdata,
            )
        };
        if done != raw::REDISMODULE_OK as c_int {
            return Err(format!("could not register the setting {name}"));
        }
    }
    // SAFETY: `ctx` is the load's live context.
    if unsafe { api!(RedisModule_LoadConfigs)(ctx.raw()) } != raw::REDISMODULE_OK as c_int {
        return Err("a configured value was refused".into());
    }
    Ok(())
}

unsafe extern "C" fn get_numeric(_name: *const c_char, privdata: *mut c_void) -> c_longlong {
    // SAFETY: `privdata` is the `&'static AtomicI64` registered with this setting.
    let variable = unsafe { privdata.cast::<AtomicI64>().as_ref() };
    variable.map_or(0, |variable| variable.load(Ordering::Relaxed))
}

unsafe extern "C" fn set_numeric(
    _name: *const c_char,
    value: c_longlong,
    privdata: *mut c_void,
    _err: *mut *mut raw::RedisModuleString,
) -> c_int {
    // The server checked the range.
    // SAFETY: as above.
    if let Some(variable) = unsafe { privdata.cast::<AtomicI64>().as_ref() } {
        variable.store(value, Ordering::Relaxed);
    }
    raw::REDISMODULE_OK as c_int
}

/// The string the last get of a text setting returned. The server copies
/// what a string setting's getter returns and never frees it (module.c
/// `getModuleStringConfig`: the module keeps ownership): the module keeps it
/// and frees it at the next get, or at `MODULE UNLOAD` (a part of the
/// module state, freed with it). (The `redis-module` crate's getter handed
/// a new string over each time: every `CONFIG GET dreamtown.quiet-hours`,
/// or `CONFIG GET *` by a monitoring scrape, leaked ~30 bytes.)
struct Returned(Cell<*mut raw::RedisModuleString>);

impl Default for Returned {
    fn default() -> Self {
        Returned(Cell::new(std::ptr::null_mut()))
    }
}

impl Drop for Returned {
    fn drop(&mut self) {
        free_returned(self.0.replace(std::ptr::null_mut()));
    }
}

static RETURNED: PerLoad<Returned> = PerLoad::new();

/// Keep `string` as the last returned one, freeing the one before.
fn returned(string: *mut raw::RedisModuleString) {
    free_returned(RETURNED.with(|kept| kept.0.replace(string)));
}

fn free_returned(previous: *mut raw::RedisModuleString) {
    if !previous.is_null() {
        // SAFETY: `previous` is the string a get made (no context: not
        // auto-memory), taken out of its cell, freed once here.
        unsafe { api!(RedisModule_FreeString)(std::ptr::null_mut(), previous) };
    }
}

unsafe extern "C" fn get_text(_name: *const c_char, privdata: *mut c_void) -> *mut raw::RedisModuleString {
    catch_unwind(|| {
        // SAFETY: `privdata` is what `register` gave the server: null or a `&'static Text`.
        let Some(setting) = (unsafe { privdata.cast::<Text>().as_ref() }) else { return std::ptr::null_mut() };
        let text = setting.text();
        // SAFETY: a pointer and length valid for the call; no context, so the string is ours (kept
        // by `returned`).
        let string = unsafe { api!(RedisModule_CreateString)(std::ptr::null_mut(), text.as_ptr().cast(), text.len()) };
        returned(string);
        string
    })
    .unwrap_or(std::ptr::null_mut())
}

unsafe extern "C" fn set_text(
    _name: *const c_char,
    value: *mut raw::RedisModuleString,
    privdata: *mut c_void,
    err: *mut *mut raw::RedisModuleString,
) -> c_int {
    // SAFETY: `privdata` is what `register` gave the server: null or a `&'static Text`.
    let setting = unsafe { privdata.cast::<Text>().as_ref() };
    let outcome = catch_unwind(AssertUnwindSafe(|| match setting {
        Some(setting) => setting.set(super::string::bytes_of(value)),
        None => Err("internal error: a text setting without its variable".into()),
    }))
    .unwrap_or_else(|_| Err(format!("internal error setting {}", setting.map_or("", |setting| setting.name))));
    match outcome {
        Ok(()) => raw::REDISMODULE_OK as c_int,
        Err(message) => {
            if !err.is_null() {
                // The server frees it (module.c `propagateErrorString`).
                // SAFETY: `err` is the server's non-null out-pointer for an error string, which it
                // frees; the message's pointer and length are valid for the call.
                unsafe {
                    *err = api!(RedisModule_CreateString)(std::ptr::null_mut(), message.as_ptr().cast(), message.len())
                };
            }
            raw::REDISMODULE_ERR as c_int
        }
    }
}
