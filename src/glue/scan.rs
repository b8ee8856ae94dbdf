//! Walking the keys of the selected database in steps
//! (`RedisModule_Scan`): a [`ScanCursor`] remembers where a walk is and is
//! destroyed with its last clone.

use std::os::raw::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use redis_module::raw;

use super::api::api;
use super::ctx::{Ctx, RawString};
use super::string::bytes_of;

/// Where a walk of a database is. Clones share one server cursor.
#[derive(Clone)]
pub struct ScanCursor(Arc<Owned>);

struct Owned(*mut raw::RedisModuleScanCursor);

// SAFETY: the cursor is a server object the module touches only from the
// server's main thread (commands, timers and events all run there; the
// module starts no thread); `Send`/`Sync` only let a `static` hold it.
unsafe impl Send for Owned {}
// SAFETY: as above.
unsafe impl Sync for Owned {}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: made by `RedisModule_ScanCursorCreate`, destroyed once,
        // by its last owner.
        unsafe { api!(RedisModule_ScanCursorDestroy)(self.0) };
    }
}

impl Default for ScanCursor {
    fn default() -> Self {
        Self::new()
    }
}

impl ScanCursor {
    /// A cursor at the start of a walk.
    pub fn new() -> Self {
        // SAFETY: takes no argument; the API table was filled at load.
        Self(Arc::new(Owned(unsafe { api!(RedisModule_ScanCursorCreate)() })))
    }

    /// Back to the start (for another database).
    pub fn restart(&self) {
        // SAFETY: the cursor is live while `self` is.
        unsafe { api!(RedisModule_ScanCursorRestart)(self.0 .0) };
    }

    /// One step of the walk in the database selected in `ctx`: `each`
    /// gets the name of every key of the step (opening keys in it could
    /// rehash the dictionary under the walk: only read names). False when
    /// the walk is done.
    pub fn step<F: FnMut(&[u8])>(&self, ctx: Ctx, mut each: F) -> bool {
        let data: *mut F = &mut each;
        // SAFETY: `ctx` is the running callback's live context, the
        // cursor is live while `self` is, and `data` points at `each`,
        // alive for the call, which `on_key::<F>` reads as an `F`.
        unsafe { api!(RedisModule_Scan)(ctx.raw(), self.0 .0, Some(on_key::<F>), data.cast()) != 0 }
    }
}

extern "C" fn on_key<F: FnMut(&[u8])>(
    _ctx: *mut raw::RedisModuleCtx,
    name: RawString,
    _key: *mut raw::RedisModuleKey,
    data: *mut c_void,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `step::<F>` passes a pointer to its `F`, alive and not
        // otherwise borrowed during the scan call that runs this.
        if let Some(each) = unsafe { data.cast::<F>().as_mut() } {
            each(bytes_of(name));
        }
    }));
}
