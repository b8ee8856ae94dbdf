//! Selecting another database for a while (`RedisModule_SelectDb`): a
//! [`DbScope`] selects, and puts the database selected before back when it
//! goes, whatever path the code leaves by.

use std::os::raw::c_int;

use redis_module::raw;

use super::api::api;
use super::ctx::{selected_db, Ctx};

/// While alive, databases may be selected in its context; dropped, the
/// database selected when it was made is selected again.
pub struct DbScope {
    ctx: Ctx,
    before: c_int,
}

impl DbScope {
    /// A scope in `ctx`, remembering the database selected now.
    pub fn new(ctx: Ctx) -> Self {
        Self { ctx, before: selected_db(ctx) }
    }

    /// A scope in `ctx` with `db` selected; `None` (nothing changed) when
    /// there is no such database.
    pub fn select_in(ctx: Ctx, db: c_int) -> Option<Self> {
        let scope = Self::new(ctx);
        scope.select(db).then_some(scope)
    }

    /// Select `db`; false when there is no such database (the selection is
    /// then as it was).
    pub fn select(&self, db: c_int) -> bool {
        select(self.ctx, db)
    }

    /// The number of keys in the selected database.
    pub fn size(&self) -> u64 {
        // SAFETY: the scope's context is live while the scope is (it is
        // made from the running callback's context and not kept beyond it).
        unsafe { api!(RedisModule_DbSize)(self.ctx.raw()) }
    }
}

impl Drop for DbScope {
    fn drop(&mut self) {
        select(self.ctx, self.before);
    }
}

fn select(ctx: Ctx, db: c_int) -> bool {
    // SAFETY: `ctx` is the live context of the running callback; the
    // server checks `db` and refuses one out of range.
    unsafe { api!(RedisModule_SelectDb)(ctx.raw(), db) == raw::REDISMODULE_OK as c_int }
}
