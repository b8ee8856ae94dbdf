//! Server-wide totals reported by `INFO dreamtown`, kept per server since
//! it started (a replica counts nothing: it applies effects, not commands).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::events::{Dreams, Town, DREAMS_EVENTS, TOWN_EVENTS};

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

/// Each Dreams event's total ([`crate::events::Dreams`], by its order).
static DREAMS: [Total; DREAMS_EVENTS] = [const { Total::new() }; DREAMS_EVENTS];
/// Each Town event's total ([`crate::events::Town`], by its order).
static TOWN: [Total; TOWN_EVENTS] = [const { Total::new() }; TOWN_EVENTS];

/// The server's total of Dreams event `event`.
pub fn dreams(event: Dreams) -> &'static Total {
    // In range by construction (the enum's size); `events` tests it.
    &DREAMS[event as usize]
}

/// The server's total of Town event `event`.
pub fn town(event: Town) -> &'static Total {
    &TOWN[event as usize]
}

/// Every Dreams event's total, by the enum's order (for `INFO`).
pub fn dreams_counts() -> [u64; DREAMS_EVENTS] {
    std::array::from_fn(|at| DREAMS[at].get())
}

/// Every Town event's total, by the enum's order (for `INFO`).
pub fn town_counts() -> [u64; TOWN_EVENTS] {
    std::array::from_fn(|at| TOWN[at].get())
}
