//! Blocked clients (`RedisModule_BlockClientOnKeys`): a command blocks its
//! client with private data of a type `T` that answers the server's
//! callbacks ([`Blocked`]), and keeps a [`BlockedClient`] handle to hand
//! it a reply later. The data is shared by the handle and the server
//! (reference-counted, on the main thread only): the server's free
//! callback marks it freed, so a handle kept by mistake can no longer
//! unblock a client that is gone, and the data lives while either holds it.

use std::cell::{Cell, RefCell};
use std::os::raw::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;

use redis_module::raw;

use super::api::api;
use super::ctx::Ctx;
use super::string::OwnedString;

/// What a blocked client's private data does when the server calls.
pub trait Blocked: Sized + 'static {
    /// The client's reply is due: a handle unblocked it, or it timed out
    /// (also `CLIENT UNBLOCK`). Sends the reply in `ctx`.
    fn on_timeout(ctx: Ctx, data: &mut Self);
    /// The client went away while blocked.
    fn on_disconnect(ctx: Ctx, data: &mut Self);
    /// The server frees the blocked client (after its reply, a timeout or
    /// a disconnect): the data's last callback.
    fn on_free(ctx: Ctx, data: &mut Self);
}

/// The private data as the server holds it.
struct Slot<T> {
    /// The server freed the blocked client (its `bc` is gone).
    freed: Cell<bool>,
    data: RefCell<T>,
}

/// A handle on a blocked client.
pub struct BlockedClient<T> {
    bc: *mut raw::RedisModuleBlockedClient,
    slot: Rc<Slot<T>>,
}

impl<T: Blocked> BlockedClient<T> {
    /// Let `with` change the data, then unblock the client: its
    /// [`Blocked::on_timeout`] runs, now (Redis 7.0, Valkey) or before the
    /// event loop sleeps (Redis 7.4+). Nothing happens to a client the
    /// server already freed.
    pub fn unblock_with(self, with: impl FnOnce(&mut T)) {
        if self.slot.freed.get() {
            return;
        }
        with(&mut self.slot.data.borrow_mut());
        // SAFETY: `bc` came from `RedisModule_BlockClientOnKeys` and the
        // server has not freed it (`freed` is set by its free callback);
        // the handle is consumed, so it is unblocked once.
        unsafe { api!(RedisModule_UnblockClient)(self.bc, std::ptr::null_mut()) };
    }
}

/// Block the client of `ctx` on `key` (a key nobody writes: the module
/// unblocks it itself) for `timeout_ms` (0: forever) with `data`. `None`
/// when the server would not block it (`data` is then dropped).
pub fn block_on_key<T: Blocked>(ctx: Ctx, key: &OwnedString, timeout_ms: i64, data: T) -> Option<BlockedClient<T>> {
    let slot = Rc::new(Slot { freed: Cell::new(false), data: RefCell::new(data) });
    let private = Rc::into_raw(Rc::clone(&slot));
    let mut keys = [key.as_ptr()];
    // SAFETY: `ctx` is the running command's live context; `keys` holds
    // one live string for the call; `private` is one strong count of the
    // slot, given to the server and taken back by `free::<T>` (or below).
    let bc = unsafe {
        api!(RedisModule_BlockClientOnKeys)(
            ctx.raw(),
            Some(keep_waiting),
            Some(timeout::<T>),
            Some(free::<T>),
            timeout_ms,
            keys.as_mut_ptr(),
            1,
            private.cast_mut().cast(),
        )
    };
    if bc.is_null() {
        // SAFETY: the server refused, so it did not keep `private`: take
        // that count back.
        drop(unsafe { Rc::from_raw(private) });
        return None;
    }
    // SAFETY: `bc` is the blocked client just made.
    unsafe { api!(RedisModule_SetDisconnectCallback)(bc, Some(disconnect::<T>)) };
    Some(BlockedClient { bc, slot })
}

/// The blocked client's data in one of its callbacks.
fn slot_of<'a, T>(ctx: Ctx) -> Option<&'a Slot<T>> {
    // SAFETY: in a blocked client's callback the server answers the
    // private data given to `block_on_key::<T>`, an `Rc<Slot<T>>` count it
    // holds until `free::<T>` runs, after every other callback.
    unsafe { api!(RedisModule_GetBlockedClientPrivateData)(ctx.raw()).cast::<Slot<T>>().as_ref() }
}

/// Someone wrote the never-created key: not our signal.
extern "C" fn keep_waiting(
    _ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    raw::REDISMODULE_ERR as c_int
}

extern "C" fn timeout<T: Blocked>(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    let ctx = Ctx::from_raw(ctx);
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if let Some(slot) = slot_of::<T>(ctx) {
            T::on_timeout(ctx, &mut slot.data.borrow_mut());
        }
    }));
    raw::REDISMODULE_OK as c_int
}

extern "C" fn disconnect<T: Blocked>(ctx: *mut raw::RedisModuleCtx, _bc: *mut raw::RedisModuleBlockedClient) {
    let ctx = Ctx::from_raw(ctx);
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if let Some(slot) = slot_of::<T>(ctx) {
            T::on_disconnect(ctx, &mut slot.data.borrow_mut());
        }
    }));
}

extern "C" fn free<T: Blocked>(ctx: *mut raw::RedisModuleCtx, privdata: *mut c_void) {
    let ctx = Ctx::from_raw(ctx);
    if privdata.is_null() {
        return;
    }
    // SAFETY: `privdata` is the count `block_on_key::<T>` gave the server,
    // handed back once, here.
    let slot = unsafe { Rc::from_raw(privdata.cast_const().cast::<Slot<T>>()) };
    slot.freed.set(true);
    let _ = catch_unwind(AssertUnwindSafe(|| T::on_free(ctx, &mut slot.data.borrow_mut())));
}
