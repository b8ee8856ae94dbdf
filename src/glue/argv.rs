//! A command's arguments as the server passes them (`argv`, `argc`), read
//! as byte slices without copying, and the status a command's C entry
//! point answers.

use std::os::raw::c_int;

use redis_module::raw;

use super::string::bytes_of;

/// A command's `argv`: `argc` strings, valid while the command runs.
pub type Argv = *mut *mut raw::RedisModuleString;

/// A C entry point's answer: the command ran (its reply is sent).
pub const STATUS_OK: c_int = raw::REDISMODULE_OK as c_int;
/// A C entry point's answer: the command failed without a reply (the
/// server answers a generic error).
pub const STATUS_ERR: c_int = raw::REDISMODULE_ERR as c_int;

/// Run `run` with the arguments after the first `SKIP` (the command's
/// name, and a subcommand's), as bytes: up to
/// 16 in a stack array (every call reads its arguments; most have a few,
/// the longest hot form, RECORD with every option, 16). The array is
/// filled whole before use, so its size is paid on every call: 32 slots
/// cost FIRE about 100 instructions more than 16.
pub fn with_arguments<const SKIP: usize, R>(argv: Argv, argc: c_int, run: impl FnOnce(&[&[u8]]) -> R) -> R {
    const INLINE: usize = 16;
    let count = usize::try_from(argc).unwrap_or(0);
    if argv.is_null() || count == 0 {
        return run(&[]);
    }
    // SAFETY: the server passes `argc` (> 0 here) live strings at
    // `argv` (not null here), valid while the command runs.
    let all = unsafe { std::slice::from_raw_parts(argv, count) };
    let after_name = all.get(SKIP..).unwrap_or_default();
    if after_name.len() <= INLINE {
        let mut inline: [&[u8]; INLINE] = [&[]; INLINE];
        for (slot, arg) in inline.iter_mut().zip(after_name) {
            *slot = bytes_of(*arg);
        }
        run(inline.get(..after_name.len()).unwrap_or_default())
    } else {
        let args: Vec<&[u8]> = after_name.iter().map(|arg| bytes_of(*arg)).collect();
        run(&args)
    }
}

/// `argv`/`argc` without the subcommand's name when `SKIP` is 2 (the
/// command's name stays first, as a session expects).
pub fn skip_subcommand<const SKIP: usize>(argv: Argv, argc: c_int) -> (Argv, usize) {
    let count = usize::try_from(argc).unwrap_or(0);
    let extra = SKIP.saturating_sub(1);
    if argv.is_null() || count <= extra {
        return (argv, count);
    }
    // SAFETY: in bounds: argv holds `count` > `extra` pointers.
    (unsafe { argv.add(extra) }, count - extra)
}
