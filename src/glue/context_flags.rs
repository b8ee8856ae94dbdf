//! What the server is now, as a context sees it
//! (`RedisModule_GetContextFlags`): master or replica, loading, in a
//! cluster, replaying the replication link. Read once and asked several
//! questions (a read is ~130 instructions).

use redis_module::raw;

use super::api::api;
use super::ctx::Ctx;

/// The context flags of one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextFlags(u32);

impl ContextFlags {
    /// The flags of `ctx`, now.
    #[inline]
    pub fn of(ctx: Ctx) -> Self {
        // SAFETY: `ctx` is a live context the server passed to the running
        // callback (or null: the server then answers the flags of no client).
        Self(unsafe { api!(RedisModule_GetContextFlags)(ctx.raw()) } as u32)
    }

    /// The server is a master.
    #[inline]
    pub fn is_master(self) -> bool {
        self.0 & raw::REDISMODULE_CTX_FLAGS_MASTER != 0
    }

    /// The server is a replica.
    #[inline]
    pub fn is_replica(self) -> bool {
        self.0 & raw::REDISMODULE_CTX_FLAGS_SLAVE != 0
    }

    /// The server is loading its dataset (startup, a full sync).
    #[inline]
    pub fn loading(self) -> bool {
        self.0 & raw::REDISMODULE_CTX_FLAGS_LOADING != 0
    }

    /// A replica is loading a dataset beside the old one (swapdb).
    #[inline]
    pub fn async_loading(self) -> bool {
        self.0 & raw::REDISMODULE_CTX_FLAGS_ASYNC_LOADING != 0
    }

    /// The server runs as a cluster node.
    #[inline]
    pub fn in_cluster(self) -> bool {
        self.0 & raw::REDISMODULE_CTX_FLAGS_CLUSTER != 0
    }

    /// The call comes from the replication link (the master's stream).
    #[inline]
    pub fn replicated(self) -> bool {
        self.0 & raw::REDISMODULE_CTX_FLAGS_REPLICATED != 0
    }

    /// The call may not block its client (MULTI, Lua, a no-block context).
    #[inline]
    pub fn forbids_blocking(self) -> bool {
        let forbidding = raw::REDISMODULE_CTX_FLAGS_MULTI
            | raw::REDISMODULE_CTX_FLAGS_LUA
            | raw::REDISMODULE_CTX_FLAGS_DENY_BLOCKING;
        self.0 & forbidding != 0
    }
}

/// Should the module write nothing of its own now (a `FAILOVER` or
/// `CLIENT PAUSE WRITE` under way: `RedisModule_AvoidReplicaTraffic`)?
#[inline]
pub fn avoid_replica_traffic() -> bool {
    // SAFETY: takes no argument; the API table was filled at load.
    unsafe { api!(RedisModule_AvoidReplicaTraffic)() != 0 }
}
