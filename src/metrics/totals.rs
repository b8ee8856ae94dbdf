//! Server-wide totals reported by `INFO dreamtown`, kept since the module
//! loaded (a part of the module state; a replica counts nothing: it
//! applies effects, not commands).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::events::{Dreams, Town, DREAMS_EVENTS, TOWN_EVENTS};
use crate::glue::module_state::PerLoad;

/// A monotonically increasing total.
#[derive(Default)]
pub struct Total(AtomicU64);

impl Total {
    /// Zero.
    pub const fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    /// Add `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// Add one.
    pub fn bump(&self) {
        self.add(1);
    }

    /// The current value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Each event's total, by the enum's order: a part of the module state.
struct State {
    dreams: [Total; DREAMS_EVENTS],
    town: [Total; TOWN_EVENTS],
}

impl Default for State {
    fn default() -> Self {
        State { dreams: [const { Total::new() }; DREAMS_EVENTS], town: [const { Total::new() }; TOWN_EVENTS] }
    }
}

static STATE: PerLoad<State> = PerLoad::new();

/// Add `n` to the server's total of Dreams event `event`.
pub fn add_dreams(event: Dreams, n: u64) {
    // In range by construction (the enum's size); `events` tests it.
    STATE.with(|state| state.dreams[event as usize].add(n));
}

/// Add `n` to the server's total of Town event `event`.
pub fn add_town(event: Town, n: u64) {
    STATE.with(|state| state.town[event as usize].add(n));
}

/// Every Dreams event's total, by the enum's order (for `INFO`).
pub fn dreams_counts() -> [u64; DREAMS_EVENTS] {
    STATE.with(|state| std::array::from_fn(|at| state.dreams[at].get()))
}

/// Every Town event's total, by the enum's order (for `INFO`).
pub fn town_counts() -> [u64; TOWN_EVENTS] {
    STATE.with(|state| std::array::from_fn(|at| state.town[at].get()))
}
