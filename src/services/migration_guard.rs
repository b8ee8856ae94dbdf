//! The migration guard: in Redis Cluster, a tenant command runs only on the
//! node that holds all of the tenant's keys, never on a node that holds part
//! of them while the tenant's slot moves.
//!
//! Why it is needed. The tenant argument is a `NOT_KEY` key spec, so Redis
//! routes by its slot but looks the bare name up as a key. While the slot is
//! `MIGRATING`, the source never finds that name and answers `ASK` to every
//! tenant command, so it never runs them (only wake-ups of clients blocked
//! there, and timers, can). The importing target accepts the command under
//! `ASKING`, and Redis's own guard (`TRYAGAIN` when a multi-key command's
//! keys are split) sees only argv keys: without this guard the command ran
//! on whatever subset of the tenant had arrived and created new, empty keys,
//! which made `MIGRATE` fail with `BUSYKEY` and split the tenant.
//!
//! How. Before a command (or a blocked command's wake-up) touches anything,
//! the guard asks Redis about two names in the tenant's slot that never
//! exist, through `RedisModule_Call` of `EXISTS`. `RM_Call` applies
//! cluster routing to its own argv and copies the caller's
//! `ASKING`/`READONLY` flags, so Redis itself decides, from its live slot
//! table: on a stable slot this node serves (as master, or as a replica
//! for a `READONLY` read) the call passes; while the slot is importing or
//! migrating, two keys with one missing are `TRYAGAIN`/`ASK`; on a node
//! that no longer serves the slot it is `MOVED`. Any refusal becomes
//! `-TRYAGAIN` with nothing changed, which cluster clients retry (through
//! the source's `ASK`) until the move completes and the target owns the
//! slot. Where the server has `RM_Call`'s dry run (`D`: Redis 7.2+,
//! Valkey 8+) the call stops after routing: no command runs, nothing shows
//! in `INFO commandstats` or the keyspace statistics, no `keymiss` event.
//! Redis 7.0 has none: there the check runs `EXISTS` (one call in
//! commandstats, two keyspace misses and two `keymiss` events).
//!
//! The memo (`slot_memo`). A client's command on a master, on a slot
//! where a full check passed and no `CLUSTER SETSLOT` for it may have
//! taken effect since, runs with no call at all (one bit read). Why no
//! interleaving of a move with a command runs it on a half-filled node:
//! * the server routes a client's command on its tenant argument before
//!   the module sees it: `MOVED` where the node does not serve the slot,
//!   `ASK` on a `MIGRATING` source (the bare tenant is never a key). What
//!   it lets through beyond a stable owned slot is a command under
//!   `ASKING` on an `IMPORTING` target, and a command on a `MIGRATING`
//!   source where a key named exactly like the tenant exists;
//! * `IMPORTING` and `MIGRATING` are set only by `CLUSTER SETSLOT` (and
//!   `nodes.conf` at startup, before the module loads and the memo starts
//!   empty); `IMPORTING` only where the node does not own the slot, where
//!   no full check passes, so an importing slot is never settled;
//! * the filter forgets the slot when it sees the `SETSLOT`, before it can
//!   apply; where the server applies it later (Valkey 8+: after the
//!   replicas acknowledge, or after a write pause), nothing settles until
//!   the client that sent it has been seen unblocked at two successive
//!   timer firings (its re-run happens in the `beforeSleep` between), so a
//!   full check that passed while the state was still stable cannot
//!   settle the slot just before it becomes migrating;
//! * a `SETSLOT` queued in `MULTI` applies at `EXEC`: that `EXEC` forgets
//!   every slot (and makes its client pending) before it runs.
//!
//! So a settled slot is, at every command, owned-and-stable as far as
//! `SETSLOT` is concerned, and the server's routing answers the rest.
//! Code without a client (timers, waiter passes: [`may_touch`]) gets no
//! routing from the server and never uses the memo: the cluster bus can
//! take a slot away without any command.
//!
//! Why never-existing names instead of the command's own keys: the target
//! cannot tell a key that has not arrived yet from one that exists nowhere
//! (an empty deferred set, a dead-letter list never written), so naming the
//! real keys gives the same answer for nearly every tenant, but costs one
//! call per group of keys, must be kept in step with every code path that
//! opens a key (including data-dependent ones like listings and resets), and
//! lets a command that opens one key through (Redis's rule lets a single
//! missing key run under `ASKING`). Two fixed names make one call per
//! command whatever keys the command touches.
//!
//! Cost: nothing outside cluster mode (one context-flags test; the filter
//! is registered only in cluster mode), and on a settled slot the tenant's
//! CRC16 and one bit (`make bench`'s cluster rows; `CLUSTER=1
//! bench/callgrind.sh`).

//! Rules for code that blocks clients or runs on its own:
//! * Blocked `DREAMS.DRAIN` / `TOWN.RECV` are served by the waiter pass
//!   (`waiters`), which asks [`may_touch`] before it serves a waiter and
//!   answers `-TRYAGAIN` instead when the tenant's slot is moving.
//! * Waiters block with `RedisModule_BlockClientOnKeys` on a private key in
//!   the tenant's slot: Redis's cluster cron redirects (`MOVED`) clients
//!   blocked on keys of a slot the node no longer serves, within about a
//!   second of the move's completion; it does not redirect clients blocked
//!   with plain `RedisModule_BlockClient` (no keys).
//! * A timer (or anything without a client) that touches a tenant calls
//!   [`may_touch`] first and leaves the tenant alone when it is false
//!   (migrating, importing, not owned, or this node is a replica; and
//!   while Valkey 9's atomic slot migration imports or exports the slot,
//!   which the slot table does not show: `slot_migration`).

use std::cell::Cell;

use crate::glue::call;
use crate::glue::context_flags::ContextFlags;
use crate::glue::ctx::Ctx;
use crate::glue::module_state::PerLoad;
use crate::glue::reply::CommandError;
use crate::glue::server_info;

/// What follows `{<tenant>` in the two names the guard asks about: the
/// tenant is their hash tag, so they hash to its slot whatever the
/// family's key prefix.
const GUARD_SUFFIX: &[u8] = b"}dreamtown-migration-guard-";

/// The two distinct names in `tenant`'s slot (Redis counts a repeated name
/// once, and it takes two keys, one missing, to refuse under `ASKING`).
fn guard_names(tenant: &[u8]) -> [Vec<u8>; 2] {
    [b'a', b'b'].map(|last| {
        let mut name = Vec::with_capacity(tenant.len() + GUARD_SUFFIX.len() + 2);
        name.push(b'{');
        name.extend_from_slice(tenant);
        name.extend_from_slice(GUARD_SUFFIX);
        name.push(last);
        name
    })
}

/// Does this server have `RedisModule_Call`'s dry run (the `D` flag: every
/// check, cluster routing included, then no call)? Redis 7.2 and newer,
/// and Valkey 8+ (which reports 7.2.4 to modules). Set at load (a part of
/// the module state: false until the load decides).
static DRY_RUN: PerLoad<Cell<bool>> = PerLoad::new();

/// Decide at load whether the full check can be a dry run.
pub fn init(ctx: Ctx, filter_registered: bool) {
    let version = server_info::version();
    DRY_RUN.with(|dry_run| dry_run.set(version >= 0x00_07_02_00));
    super::slot_memo::activate(ctx, filter_registered);
}

/// Is `tenant` a name the guard can ask about (a command refuses any other
/// before opening anything, so there is nothing to guard)?
fn guardable(tenant: &[u8]) -> bool {
    !tenant.is_empty() && !tenant.iter().any(|b| *b == b'{' || *b == b'}')
}

/// May a tenant's keys be touched here, per the slot table? `None` for a
/// tenant argument that is not a valid tenant (the command refuses it
/// before opening anything, so there is nothing to guard).
fn serves(ctx: Ctx, tenant: &[u8]) -> Option<bool> {
    if !guardable(tenant) {
        return None;
    }
    let [first, second] = guard_names(tenant);
    // A dry run stops after the routing check: no command runs, so nothing
    // shows in `INFO commandstats` or the keyspace statistics (Redis 7.2+
    // looks keys up for routing only in a migrating or importing slot, and
    // then without statistics or keyspace events).
    let dry_run = DRY_RUN.with(Cell::get);
    // A dry run that passed every check answers no reply; a refused one an
    // error reply. Without a dry run, a refusal by cluster routing gives
    // no reply (7.0).
    match call::exists_is_refused(ctx, &first, &second, dry_run) {
        None => Some(dry_run),
        Some(is_error) => Some(!is_error),
    }
}

/// Would a guarded call in `ctx` need the check? Only in cluster mode, and
/// not for what the replication link or a load replays (those must apply).
fn needed(ctx: Ctx) -> bool {
    needed_by(ContextFlags::of(ctx))
}

/// [`needed`], from the context flags already read.
fn needed_by(flags: ContextFlags) -> bool {
    flags.in_cluster() && !flags.replicated() && !flags.loading()
}

/// The error a command answers while its tenant's slot is moving (or,
/// for a blocked client woken after the move, is no longer served here).
pub fn moving(tenant: &[u8]) -> CommandError {
    CommandError::coded(
        "TRYAGAIN",
        format_args!(
            "tenant '{}' is moving between cluster nodes (its slot is migrating or no longer served here); retry",
            String::from_utf8_lossy(tenant)
        ),
    )
}

/// Refuse with `-TRYAGAIN` unless this node may touch `tenant`'s keys now:
/// call it before a command or a wake-up opens any key. `flags`: the
/// context flags of `ctx` (`RedisModule_GetContextFlags`), which the
/// caller reads once for this and for its session.
pub fn check(ctx: Ctx, flags: ContextFlags, tenant: &[u8]) -> Result<(), CommandError> {
    if !needed_by(flags) {
        return Ok(());
    }
    // A master's client command on a settled slot: the server's own routing
    // on the tenant argument already ran, and nothing that could make the
    // slot importing or migrating happened since a full check passed
    // (`slot_memo`).
    // Replicas (READONLY reads) and invalid tenants never use the memo.
    let memo_slot = (flags.is_master() && guardable(tenant)).then(|| super::slot_memo::tenant_slot(tenant));
    if memo_slot.is_some_and(super::slot_memo::is_settled) {
        return Ok(());
    }
    match serves(ctx, tenant) {
        Some(false) => Err(moving(tenant)),
        Some(true) => {
            if let Some(slot) = memo_slot {
                super::slot_memo::settle(ctx, slot);
            }
            Ok(())
        }
        None => Ok(()),
    }
}

/// For code that runs without a client (timers, and anything else that
/// touches a tenant on its own): may this node touch `tenant`'s keys now?
/// False while the slot migrates or imports (legacy moves, per the slot
/// table; atomic slot migration, per `slot_migration`: the source still
/// owns an exporting slot, but must not write it on its own) and when
/// another node owns it; true outside cluster mode. A timer that gets
/// false must leave the tenant alone (the node that owns the slot when the
/// move completes runs its own timers on the keys it then holds).
pub fn may_touch(ctx: Ctx, tenant: &[u8]) -> bool {
    !needed(ctx) || (!super::slot_moves::tenant_is_moving(tenant) && serves(ctx, tenant).unwrap_or(false))
}

#[cfg(test)]
mod tests {
    use super::guard_names;

    #[test]
    fn the_names_carry_the_tenant_as_hash_tag() {
        let [a, b] = guard_names(b"acme");
        assert_eq!(a, b"{acme}dreamtown-migration-guard-a");
        assert_eq!(b, b"{acme}dreamtown-migration-guard-b");
    }
}
