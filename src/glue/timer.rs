//! Module timers (`RedisModule_CreateTimer`): a callback on the main
//! thread after a delay, under `catch_unwind`. A plain timer carries no
//! data (the callback itself is the timer's data pointer: no allocation);
//! a timer with data owns it, boxed, and hands it to the callback when it
//! fires or back to the caller when stopped, so it is freed exactly once.

use std::marker::PhantomData;
use std::os::raw::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use super::api::api;
use super::ctx::Ctx;

/// A scheduled plain timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timer(raw::RedisModuleTimerID);

impl Timer {
    /// The server's id of the timer (to keep in an atomic).
    pub fn id(self) -> u64 {
        self.0
    }

    /// The timer of `id`, as [`Timer::id`] gave it. Keep only plain
    /// timers' ids this way: [`stop`] frees no data, so stopping a timer
    /// made by [`after_with`] through it would leak that timer's data
    /// (never more: its id is kept as a [`TimerWith`], not a number).
    pub fn from_id(id: u64) -> Self {
        Self(id)
    }
}

/// A scheduled timer that owns a `T`.
#[derive(Debug, PartialEq, Eq)]
pub struct TimerWith<T> {
    id: raw::RedisModuleTimerID,
    data: PhantomData<fn() -> T>,
}

impl<T> Clone for TimerWith<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for TimerWith<T> {}

/// Does this server have module timers?
pub fn available() -> bool {
    // SAFETY: reads the API table's entry, filled once at load.
    unsafe { raw::RedisModule_CreateTimer }.is_some()
}

/// Run `fire` in `delay_ms` (0: on the next turn of the event loop).
pub fn after(ctx: Ctx, delay_ms: i64, fire: fn(Ctx)) -> Timer {
    let data = fire as *mut c_void;
    // SAFETY: `ctx` is the running callback's live context; the data is
    // the function pointer `fire_plain` turns back into `fn(Ctx)`.
    Timer(unsafe { api!(RedisModule_CreateTimer)(ctx.raw(), delay_ms, Some(fire_plain), data) })
}

/// Stop `timer` if it has not fired yet; true if it was stopped.
pub fn stop(ctx: Ctx, timer: Timer) -> bool {
    let mut data: *mut c_void = std::ptr::null_mut();
    // SAFETY: `ctx` is live; the server looks `timer` up and refuses an id
    // it does not know (or one of another module). A plain timer's data is
    // a function pointer: nothing to free.
    unsafe { api!(RedisModule_StopTimer)(ctx.raw(), timer.0, &mut data) == raw::REDISMODULE_OK as c_int }
}

/// Run `fire` with `data` in `delay_ms`; `data` is dropped with the timer
/// if it is stopped ([`stop_with`] hands it back).
pub fn after_with<T: 'static>(ctx: Ctx, delay_ms: i64, data: T, fire: fn(Ctx, T)) -> TimerWith<T> {
    let boxed = Box::into_raw(Box::new((fire, data)));
    // SAFETY: `ctx` is live; the box is owned by the timer from here on:
    // freed by `fire_with::<T>` when it fires or by `stop_with::<T>` when
    // stopped, the only two ways a timer ends (the server refuses an
    // unload while one is scheduled).
    let id = unsafe { api!(RedisModule_CreateTimer)(ctx.raw(), delay_ms, Some(fire_with::<T>), boxed.cast()) };
    TimerWith { id, data: PhantomData }
}

/// Stop `timer` if it has not fired yet, and hand its data back.
pub fn stop_with<T: 'static>(ctx: Ctx, timer: TimerWith<T>) -> Option<T> {
    let mut data: *mut c_void = std::ptr::null_mut();
    // SAFETY: `ctx` is live; the server refuses an unknown id.
    let stopped = unsafe { api!(RedisModule_StopTimer)(ctx.raw(), timer.id, &mut data) };
    if stopped != raw::REDISMODULE_OK as c_int || data.is_null() {
        return None;
    }
    // SAFETY: a `TimerWith<T>` is made only by `after_with::<T>`, whose
    // data is a `Box<(fn(Ctx, T), T)>`; stopped, it will not fire, so the
    // box is taken back here once.
    let boxed = unsafe { Box::from_raw(data.cast::<(fn(Ctx, T), T)>()) };
    Some(boxed.1)
}

extern "C" fn fire_plain(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    let ctx = Ctx::from_raw(ctx);
    if data.is_null() {
        return;
    }
    // SAFETY: `after` made this timer's data from a `fn(Ctx)`; function
    // and data pointers have one size on every platform the server runs on.
    let fire = unsafe { std::mem::transmute::<*mut c_void, fn(Ctx)>(data) };
    let _ = catch_unwind(AssertUnwindSafe(|| fire(ctx)));
}

extern "C" fn fire_with<T: 'static>(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    let ctx = Ctx::from_raw(ctx);
    if data.is_null() {
        return;
    }
    // SAFETY: `after_with::<T>` made this data a `Box<(fn(Ctx, T), T)>`; a
    // timer fires once, and a fired timer cannot be stopped.
    let (fire, data) = *unsafe { Box::from_raw(data.cast::<(fn(Ctx, T), T)>()) };
    let _ = catch_unwind(AssertUnwindSafe(|| fire(ctx, data)));
}
