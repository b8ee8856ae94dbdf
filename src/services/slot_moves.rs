//! Which slots an atomic slot migration (Valkey 9, Redis 8.4) is moving
//! to or from this node right now: the state `slot_migration` keeps from
//! the server's events, and that anything acting on a tenant on its own
//! asks (`migration_guard::may_touch`), since the slot table does not show
//! such a move. One flag answers "nothing moves" on every path.

use std::cell::{Cell, RefCell};

use crate::glue::module_state::PerLoad;

/// What a move does to this node's copy of its slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Import,
    Export,
    /// Redis 8.4's active trim of slots this node no longer owns (after an
    /// export, or a failed import): treated as the tail of an export.
    Trim,
}

/// A move in progress on this node: its slot ranges (inclusive).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Move {
    side: Side,
    ranges: Vec<(u16, u16)>,
}

/// The moves' part of the module state.
#[derive(Default)]
struct State {
    /// Moves in progress (a handful at most).
    moves: RefCell<Vec<Move>>,
    /// Is any move in progress? The fast path of every check.
    any: Cell<bool>,
}

static STATE: PerLoad<State> = PerLoad::new();

fn with_moves<R>(run: impl FnOnce(&mut Vec<Move>) -> R) -> R {
    STATE.with(|state| {
        let mut moves = state.moves.borrow_mut();
        let result = run(&mut moves);
        state.any.set(!moves.is_empty());
        result
    })
}

/// Moves in progress: imports, and the others (exports, trims).
pub fn in_progress() -> (u64, u64) {
    with_moves(|moves| {
        let importing = moves.iter().filter(|m| m.side == Side::Import).count() as u64;
        (importing, moves.len() as u64 - importing)
    })
}

/// A move of `ranges` started on this side.
pub fn started(side: Side, ranges: &[(u16, u16)]) {
    with_moves(|moves| moves.push(Move { side, ranges: ranges.to_vec() }));
}

/// The move of `ranges` on this side ended (completed or aborted).
pub fn ended(side: Side, ranges: &[(u16, u16)]) {
    let finished = Move { side, ranges: ranges.to_vec() };
    with_moves(|moves| {
        if let Some(at) = moves.iter().position(|m| *m == finished) {
            moves.remove(at);
        }
    });
}

fn in_ranges(ranges: &[(u16, u16)], slot: u16) -> bool {
    ranges.iter().any(|(start, end)| (*start..=*end).contains(&slot))
}

/// Is `slot` being imported (`importing`) or exported here?
pub fn moving(slot: u16, importing: Option<bool>) -> bool {
    if !any_moving() {
        return false;
    }
    with_moves(|moves| {
        moves.iter().any(|m| importing.is_none_or(|i| i == (m.side == Side::Import)) && in_ranges(&m.ranges, slot))
    })
}

/// Is `tenant`'s slot being imported or exported by this node (atomic
/// slot migration)? Then nothing runs on it on its own (timers, waiter
/// passes).
pub fn tenant_is_moving(tenant: &[u8]) -> bool {
    any_moving() && moving(tenant_slot(tenant), None)
}

/// Is `key`'s slot being imported by this node?
pub fn key_is_importing(key: &[u8]) -> bool {
    any_moving() && moving(crate::cluster_slot::key_slot(key), Some(true))
}

/// Is any slot moving now? False almost always: then no key's slot is
/// being imported, and a caller can skip reading the key's name.
pub fn any_moving() -> bool {
    STATE.with(|state| state.any.get())
}

/// The slot of a tenant: a valid tenant has no braces, so it hashes as
/// the hash tag of all its keys does.
fn tenant_slot(tenant: &[u8]) -> u16 {
    crate::cluster_slot::key_slot(tenant)
}
