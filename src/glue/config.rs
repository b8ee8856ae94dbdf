//! Module configuration: `CONFIG SET/GET dreamtown.<name>`, `loadmodule ...
//! <name> <value>` and redis.conf lines. Numbers are range-checked by Redis;
//! the quiet window is parsed here, so a bad value is refused and the old
//! one stays.

use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_longlong, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

use redis_module::raw;

use super::api::api;

use crate::dreams::quiet::QuietHours;
use crate::dreams::trigger::Trigger;

/// `queue-max`: the ceiling over ready + deferred + in-flight.
pub static QUEUE_MAX: AtomicI64 = AtomicI64::new(1000);
/// `quiet-utc-offset`: minutes east of UTC for the quiet window.
pub static QUIET_UTC_OFFSET: AtomicI64 = AtomicI64::new(0);
/// `quiet-backlog-min`: at this backlog quiet hours stop reordering.
pub static QUIET_BACKLOG_MIN: AtomicI64 = AtomicI64::new(32);
/// `memory-threshold`: default memories that fire a region.
pub static MEMORY_THRESHOLD: AtomicI64 = AtomicI64::new(50);
/// `edge-threshold`: default edges that fire a region.
pub static EDGE_THRESHOLD: AtomicI64 = AtomicI64::new(200);
/// `min-interval`: default seconds between cycles of a region.
pub static MIN_INTERVAL: AtomicI64 = AtomicI64::new(3_600);
/// `age-floor`: default seconds after which a region fires anyway.
pub static AGE_FLOOR: AtomicI64 = AtomicI64::new(604_800);
/// `lease`: seconds a drained Dreams item is leased when DRAIN names no
/// `LEASE` (0: no lease).
pub static LEASE: AtomicI64 = AtomicI64::new(0);
/// `town-lease`: the same for `TOWN.RECV ... RELIABLE`.
pub static TOWN_LEASE: AtomicI64 = AtomicI64::new(0);
/// `catch-up-keys-per-turn`: keys one turn of the lease catch-up examines
/// at most (`leases`): a smaller value means shorter main-thread turns and
/// a longer catch-up.
pub static CATCH_UP_KEYS_PER_TURN: AtomicI64 = AtomicI64::new(10_000);
/// `quiet-hours`: the quiet window, `HH-HH` or empty for none.
pub static QUIET_HOURS: QuietSetting = QuietSetting(Mutex::new(String::new()));

/// The default quiet window, as configured text.
pub const QUIET_HOURS_DEFAULT: &str = "02-06";

/// `queue-max`'s inclusive range.
pub const QUEUE_MAX_RANGE: (i64, i64) = (1, 1_000_000_000);
/// `quiet-utc-offset`'s inclusive range (minutes).
pub const QUIET_UTC_OFFSET_RANGE: (i64, i64) = (-1439, 1439);
/// `quiet-backlog-min`'s inclusive range.
pub const QUIET_BACKLOG_MIN_RANGE: (i64, i64) = (0, 1_000_000_000);
/// `memory-threshold`'s and `edge-threshold`'s inclusive range.
pub const THRESHOLD_RANGE: (i64, i64) = (0, 4_294_967_295);
/// `min-interval`'s and `age-floor`'s inclusive range (seconds): anything
/// a Redis numeric config holds, so a seed deployment's `u32` hours and days
/// (up to 371,085,174,374,400 seconds, its "never") carry over as they are.
pub const SECONDS_RANGE: (i64, i64) = (0, i64::MAX);

/// `lease`'s and `town-lease`'s inclusive range (seconds, 100 years).
pub const LEASE_RANGE: (i64, i64) = (0, 3_153_600_000);

/// `catch-up-keys-per-turn`'s inclusive range.
pub const CATCH_UP_KEYS_RANGE: (i64, i64) = (100, 1_000_000);

/// Each numeric setting by name, with its range. Redis enforces the ranges
/// on `CONFIG SET`, but installs `loadmodule` arguments (the defaults the
/// module registers) unchecked: [`check_module_args`] applies them there.
pub const NUMERIC_RANGES: [(&str, (i64, i64)); 10] = [
    ("lease", LEASE_RANGE),
    ("town-lease", LEASE_RANGE),
    ("queue-max", QUEUE_MAX_RANGE),
    ("quiet-utc-offset", QUIET_UTC_OFFSET_RANGE),
    ("quiet-backlog-min", QUIET_BACKLOG_MIN_RANGE),
    ("memory-threshold", THRESHOLD_RANGE),
    ("edge-threshold", THRESHOLD_RANGE),
    ("min-interval", SECONDS_RANGE),
    ("age-floor", SECONDS_RANGE),
    ("catch-up-keys-per-turn", CATCH_UP_KEYS_RANGE),
];

/// The text settings (validated by their own setters when Redis loads them).
pub const TEXT_SETTINGS: [&str; 1] = ["quiet-hours"];

/// Validate `loadmodule` / `MODULE LOADEX ... ARGS` arguments: `<name>
/// <value>` pairs of known settings, each at most once, numbers in range.
/// The configuration layer would otherwise ignore an unknown or misspelt
/// name, a missing value or a repeat, and install an out-of-range number.
pub fn check_module_args(args: &[&[u8]]) -> Result<(), String> {
    if !args.len().is_multiple_of(2) {
        return Err("module arguments must be <name> <value> pairs".into());
    }
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
        if TEXT_SETTINGS.iter().any(|known| known.as_bytes() == name) {
            continue;
        }
        let Some((_, (min, max))) = NUMERIC_RANGES.iter().find(|(known, _)| known.as_bytes() == name) else {
            let known: Vec<&str> = NUMERIC_RANGES.iter().map(|(n, _)| *n).chain(TEXT_SETTINGS).collect();
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

/// The quiet-window setting, kept as the validated text.
pub struct QuietSetting(Mutex<String>);

impl QuietSetting {
    /// The configured window (without offset).
    pub fn window(&self) -> QuietHours {
        let text = match self.0.lock() {
            Ok(text) => text,
            Err(poisoned) => poisoned.into_inner(),
        };
        QuietHours::parse_setting(&text).unwrap_or_else(|_| QuietHours::nightly())
    }
}

impl QuietSetting {
    /// Validate and install `text` (the setter of `quiet-hours`); the
    /// error text when it is refused (the old window stays).
    fn set(&self, text: &[u8]) -> Result<(), String> {
        let text = std::str::from_utf8(text).map_err(|_| "quiet-hours must be text like 02-06".to_owned())?;
        QuietHours::parse_setting(text)
            .map_err(|e| format!("invalid quiet-hours '{text}': {e} (use HH-HH, or empty for none)"))?;
        match self.0.lock() {
            Ok(mut current) => *current = text.to_owned(),
            Err(poisoned) => *poisoned.into_inner() = text.to_owned(),
        }
        Ok(())
    }

    fn text(&self) -> String {
        match self.0.lock() {
            Ok(text) => text.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

/// Each numeric setting: name, variable, default (before `loadmodule`
/// arguments), range.
const NUMERIC: [(&str, &AtomicI64, i64, (i64, i64)); 10] = [
    ("queue-max", &QUEUE_MAX, 1000, QUEUE_MAX_RANGE),
    ("quiet-utc-offset", &QUIET_UTC_OFFSET, 0, QUIET_UTC_OFFSET_RANGE),
    ("quiet-backlog-min", &QUIET_BACKLOG_MIN, 32, QUIET_BACKLOG_MIN_RANGE),
    ("memory-threshold", &MEMORY_THRESHOLD, 50, THRESHOLD_RANGE),
    ("edge-threshold", &EDGE_THRESHOLD, 200, THRESHOLD_RANGE),
    ("min-interval", &MIN_INTERVAL, 3_600, SECONDS_RANGE),
    ("lease", &LEASE, 0, LEASE_RANGE),
    ("town-lease", &TOWN_LEASE, 0, LEASE_RANGE),
    ("age-floor", &AGE_FLOOR, 604_800, SECONDS_RANGE),
    ("catch-up-keys-per-turn", &CATCH_UP_KEYS_PER_TURN, 10_000, CATCH_UP_KEYS_RANGE),
];

/// Register every setting with the server and load the values given by
/// `MODULE LOADEX ... CONFIG` or redis.conf; `args` (`loadmodule`
/// arguments, already checked by [`check_module_args`]) replace the
/// defaults. Called from the module's load.
///
/// Why not the `redis_module!` macro's `configurations`: it gives each
/// setting a boxed private data the server never frees (no free callback),
/// 11 small boxes left behind by every `MODULE LOAD` (352 bytes of
/// `used_memory` a load/unload cycle). Here the private data is the
/// setting's own static: nothing to free.
pub fn register(ctx: *mut raw::RedisModuleCtx, args: &[&[u8]]) -> Result<(), String> {
    let given = |name: &str| {
        args.chunks(2).find(|pair| pair.first() == Some(&name.as_bytes())).and_then(|pair| pair.get(1).copied())
    };
    for (name, variable, default, (min, max)) in NUMERIC {
        let default = given(name)
            .and_then(|value| std::str::from_utf8(value).ok())
            .and_then(|value| value.parse::<i64>().ok())
            .unwrap_or(default);
        let c_name = CString::new(name).map_err(|_| format!("bad setting name {name}"))?;
        let privdata = std::ptr::from_ref::<AtomicI64>(variable).cast_mut().cast::<c_void>();
        // SAFETY: `ctx` is the load's live context; the name is NUL-terminated; `privdata` points
        // at a `static` `AtomicI64`, which the callbacks read as one.
        let done = unsafe {
            api!(RedisModule_RegisterNumericConfig)(
                ctx,
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
    let default = given("quiet-hours").map_or_else(|| QUIET_HOURS_DEFAULT.as_bytes().to_vec(), <[u8]>::to_vec);
    let default = CString::new(default).map_err(|_| "quiet-hours must be text like 02-06".to_owned())?;
    // SAFETY: `ctx` is live; the name and default are NUL-terminated (the server copies them).
    let done = unsafe {
        api!(RedisModule_RegisterStringConfig)(
            ctx,
            c"quiet-hours".as_ptr(),
            default.as_ptr(),
            raw::REDISMODULE_CONFIG_DEFAULT,
            Some(get_quiet_hours),
            Some(set_quiet_hours),
            None,
            std::ptr::null_mut(),
        )
    };
    if done != raw::REDISMODULE_OK as c_int {
        return Err("could not register the setting quiet-hours".into());
    }
    // SAFETY: `ctx` is the load's live context.
    if unsafe { api!(RedisModule_LoadConfigs)(ctx) } != raw::REDISMODULE_OK as c_int {
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

/// The string the last get of `quiet-hours` returned. The server copies
/// what a string setting's getter returns and never frees it (module.c
/// `getModuleStringConfig`: the module keeps ownership): the module keeps it
/// and frees it at the next get, or at `MODULE UNLOAD` ([`unload`]). (The
/// `redis-module` crate's getter handed a new string over each time: every
/// `CONFIG GET dreamtown.quiet-hours`, or `CONFIG GET *` by a monitoring
/// scrape, leaked ~30 bytes.) Main thread only.
struct Returned(*mut raw::RedisModuleString);

// SAFETY: only touched on the server's main thread (configuration callbacks
// and the unload), under the mutex.
unsafe impl Send for Returned {}

static RETURNED: Mutex<Returned> = Mutex::new(Returned(std::ptr::null_mut()));

/// Keep `string` as the last returned one, freeing the one before.
fn returned(string: *mut raw::RedisModuleString) {
    let mut kept = RETURNED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let previous = std::mem::replace(&mut kept.0, string);
    if !previous.is_null() {
        // SAFETY: `previous` is the string the last get made (no context: not auto-memory), freed
        // once here.
        unsafe { api!(RedisModule_FreeString)(std::ptr::null_mut(), previous) };
    }
}

/// `MODULE UNLOAD`: free the string the last get returned.
pub fn unload() {
    returned(std::ptr::null_mut());
}

unsafe extern "C" fn get_quiet_hours(_name: *const c_char, _privdata: *mut c_void) -> *mut raw::RedisModuleString {
    catch_unwind(|| {
        let text = QUIET_HOURS.text();
        // SAFETY: a pointer and length valid for the call; no context, so the string is ours (kept
        // by `returned`).
        let string = unsafe { api!(RedisModule_CreateString)(std::ptr::null_mut(), text.as_ptr().cast(), text.len()) };
        returned(string);
        string
    })
    .unwrap_or(std::ptr::null_mut())
}

unsafe extern "C" fn set_quiet_hours(
    _name: *const c_char,
    value: *mut raw::RedisModuleString,
    _privdata: *mut c_void,
    err: *mut *mut raw::RedisModuleString,
) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| QUIET_HOURS.set(super::string::bytes_of(value))))
        .unwrap_or_else(|_| Err("internal error setting quiet-hours".into()));
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

fn unsigned(setting: &AtomicI64) -> u64 {
    u64::try_from(setting.load(Ordering::Relaxed)).unwrap_or(0)
}

/// The configured queue ceiling.
pub fn queue_max() -> u64 {
    unsigned(&QUEUE_MAX)
}

/// The configured quiet-hours backlog threshold.
pub fn quiet_backlog_min() -> u64 {
    unsigned(&QUIET_BACKLOG_MIN)
}

/// The configured quiet window at the configured offset.
pub fn quiet_hours() -> QuietHours {
    let offset = i16::try_from(QUIET_UTC_OFFSET.load(Ordering::Relaxed)).unwrap_or(0);
    let window = QUIET_HOURS.window();
    window.with_utc_offset_minutes(offset).unwrap_or(window)
}

/// The configured Dreams lease in seconds, if any.
pub fn lease_secs() -> Option<f64> {
    let secs = LEASE.load(Ordering::Relaxed);
    (secs > 0).then_some(secs as f64)
}

/// The configured Town lease in seconds, if any.
pub fn town_lease_secs() -> Option<f64> {
    let secs = TOWN_LEASE.load(Ordering::Relaxed);
    (secs > 0).then_some(secs as f64)
}

/// The configured trigger defaults.
pub fn trigger() -> Trigger {
    Trigger {
        memory_threshold: unsigned(&MEMORY_THRESHOLD),
        edge_threshold: unsigned(&EDGE_THRESHOLD),
        min_interval_secs: unsigned(&MIN_INTERVAL),
        age_floor_secs: unsigned(&AGE_FLOOR),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(args: &[&str]) -> Result<(), String> {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        check_module_args(&bytes)
    }

    #[test]
    fn module_args_are_known_pairs_in_range() {
        assert_eq!(check(&[]), Ok(()));
        assert_eq!(check(&["queue-max", "5", "quiet-hours", "", "quiet-utc-offset", "-1439"]), Ok(()));
        assert_eq!(check(&["age-floor", "3153600000", "memory-threshold", "0"]), Ok(()));
        // The seed's "never", u32::MAX days in seconds.
        assert_eq!(check(&["age-floor", "371085174374400"]), Ok(()));
        for bad in [
            &["queue-max"][..],
            &["queue-max", "0"],
            &["queue-max", "1000000001"],
            &["queue-max", "x"],
            &["quiet-utc-offset", "1440"],
            &["edge-threshold", "4294967296"],
            &["min-interval", "-1"],
            &["bogus", "1"],
            &["QUEUE-MAX", "5"],
            &["queue-max", "5", "queue-max", "6"],
        ] {
            assert!(check(bad).is_err(), "{bad:?}");
        }
    }
}
