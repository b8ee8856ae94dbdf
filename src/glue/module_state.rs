//! The module's per-load state: ONE [`ModuleState`], created by `MODULE
//! LOAD` (or the server's start) and dropped by `MODULE UNLOAD`, owns
//! every mutable value a service, a metric or a store keeps between
//! commands. Dropping it is the reset: a value lives in the state of the
//! load that made it, so an unload followed by a load finds nothing of the
//! first load, whether or not the server unmapped the library between
//! them (glibc keeps a library mapped once a thread-local registered a
//! destructor), and no list of what to reset is kept by hand.
//!
//! A part of the state is named by a `static` [`PerLoad<T>`] handle in the
//! file that owns it (the handle holds no value, only the part's place in
//! the state), and reached with [`PerLoad::with`]: the one accessor, on
//! the main thread (module commands, timers, events and callbacks all run
//! there; the module starts no thread), without a lock or an allocation
//! (an index, a pointer and a branch). A part is made (`T::default()`)
//! the first time a load uses it; the state drops its parts at unload,
//! newest first. A part gives shared access (`&T`): what it changes sits
//! in cells (`Cell`, `RefCell`, atomics), so a part's user may reach
//! another part, or the same one, while it holds it.
//!
//! Constants and tables fixed at build time stay `static`s: they hold no
//! state.
//!
//! Unit tests run on several threads at once: there, each thread has its
//! own state (a thread-local), so tests do not share parts.

use std::any::Any;
use std::cell::UnsafeCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The state of one load: the parts made since, each boxed, at the index
/// of its handle.
#[derive(Default)]
pub struct ModuleState {
    parts: Vec<Option<NonNull<dyn Any>>>,
    /// Indexes of the parts in the order they were made (dropped newest
    /// first, as a part may use an older one while dropping).
    made: Vec<usize>,
}

impl ModuleState {
    /// The part at `index`, if this load has made it.
    #[inline]
    fn part(&self, index: usize) -> Option<NonNull<dyn Any>> {
        self.parts.get(index).copied().flatten()
    }

    /// Keep `part` (just made) at `index`.
    fn insert(&mut self, index: usize, part: Box<dyn Any>) -> NonNull<dyn Any> {
        if self.parts.len() <= index {
            self.parts.resize(index + 1, None);
        }
        let part = NonNull::from(Box::leak(part));
        self.parts[index] = Some(part);
        self.made.push(index);
        part
    }

    /// How many parts this load has made.
    #[cfg(test)]
    fn parts_made(&self) -> usize {
        self.made.len()
    }
}

impl Drop for ModuleState {
    fn drop(&mut self) {
        while let Some(index) = self.made.pop() {
            if let Some(part) = self.parts.get_mut(index).and_then(Option::take) {
                // SAFETY: `part` came from `Box::leak` in `part` and was
                // taken out of the table just now, so it is freed once; no
                // `&T` to it is alive: parts are lent only inside
                // `PerLoad::with`, and the state is dropped only by
                // `unload`, which no part's user calls.
                drop(unsafe { Box::from_raw(part.as_ptr()) });
            }
        }
    }
}

/// Where the one state lives: a cell only the main thread touches.
struct Slot(UnsafeCell<Option<ModuleState>>);

// SAFETY: the module's code runs only on the server's main thread (see the
// module doc), so the cell is never reached from two threads; unit tests,
// which do run on several, use a thread-local instead (`slot`).
unsafe impl Sync for Slot {}

#[cfg(not(test))]
static STATE: Slot = Slot(UnsafeCell::new(None));

#[cfg(not(test))]
fn slot<R>(run: impl FnOnce(&Slot) -> R) -> R {
    run(&STATE)
}

#[cfg(test)]
fn slot<R>(run: impl FnOnce(&Slot) -> R) -> R {
    thread_local! {
        static STATE: Slot = const { Slot(UnsafeCell::new(None)) };
    }
    STATE.with(run)
}

/// `MODULE LOAD`: a new, empty state (dropping any left, which a
/// successful unload never leaves).
pub fn create() {
    let old = slot(|slot| {
        // SAFETY: main thread only (see `Slot`); no part is lent now (load
        // runs before any command), so nothing borrows the old state.
        unsafe { (*slot.0.get()).replace(ModuleState::default()) }
    });
    drop(old);
}

/// `MODULE UNLOAD` (or a failed load): drop the state and every part in
/// it. A part used after this (nothing should) gets a fresh state.
pub fn drop_state() {
    let old = slot(|slot| {
        // SAFETY: main thread only; unload runs outside any `with`, so no
        // part of the state is lent. The state is moved out before its
        // parts drop, so a part that reaches the state while dropping
        // finds a new one, not the one being dropped.
        unsafe { (*slot.0.get()).take() }
    });
    drop(old);
}

/// How many parts the current load has made (0 right after load).
#[cfg(test)]
fn parts_made() -> usize {
    slot(|slot| {
        // SAFETY: main thread only; a shared look at the state, whose
        // parts are not touched.
        unsafe { (*slot.0.get()).as_ref().map_or(0, ModuleState::parts_made) }
    })
}

/// The next free index for a handle.
static NEXT_INDEX: AtomicUsize = AtomicUsize::new(0);
const UNASSIGNED: usize = usize::MAX;

/// A handle to one part of the state, of type `T`: a `static` in the file
/// that owns the part. Holds no value: each load has its own.
pub struct PerLoad<T> {
    index: AtomicUsize,
    make: fn() -> T,
}

impl<T: Default + 'static> PerLoad<T> {
    /// A handle whose part starts as `T::default()` in each load.
    pub const fn new() -> Self {
        PerLoad { index: AtomicUsize::new(UNASSIGNED), make: T::default }
    }
}

impl<T: Default + 'static> Default for PerLoad<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: 'static> PerLoad<T> {
    /// This handle's index, assigned on first use (once per process: the
    /// index names a place in every load's state).
    #[inline]
    fn index(&self) -> usize {
        let index = self.index.load(Ordering::Relaxed);
        if index != UNASSIGNED {
            return index;
        }
        let fresh = NEXT_INDEX.fetch_add(1, Ordering::Relaxed);
        match self.index.compare_exchange(UNASSIGNED, fresh, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => fresh,
            Err(assigned) => assigned,
        }
    }

    /// Run `use_part` on this load's part (made now if this load has not
    /// used it yet).
    #[inline]
    pub fn with<R>(&'static self, use_part: impl FnOnce(&T) -> R) -> R {
        let index = self.index();
        let found = slot(|slot| {
            // SAFETY: main thread only (see `Slot`); a shared look that
            // ends before anything can change the state.
            unsafe { (*slot.0.get()).as_ref().and_then(|state| state.part(index)) }
        });
        let part = match found {
            Some(part) => part,
            None => self.make_part(index),
        };
        // SAFETY: the part is a live box of `T` (each index belongs to one
        // handle, so to one `T`), freed only when the state drops at
        // unload, which never happens while a part is lent; `&T` is shared,
        // and parts change only through their own cells.
        use_part(unsafe { part.cast::<T>().as_ref() })
    }

    /// The first use of this part in this load: make it (outside any
    /// borrow of the state: making a part may use another) and keep it.
    #[cold]
    fn make_part(&self, index: usize) -> NonNull<dyn Any> {
        let part: Box<dyn Any> = Box::new((self.make)());
        slot(|slot| {
            // SAFETY: main thread only (see `Slot`). The `&mut` lives only
            // for this insertion; parts already lent are separate boxes
            // (the table holds raw pointers to them), untouched by it.
            let state = unsafe { &mut *slot.0.get() };
            state.get_or_insert_with(ModuleState::default).insert(index, part)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        static DROPPED: Cell<u32> = const { Cell::new(0) };
    }

    #[derive(Default)]
    struct Counter(Cell<u32>);

    impl Drop for Counter {
        fn drop(&mut self) {
            DROPPED.with(|dropped| dropped.set(dropped.get() + 1));
        }
    }

    static COUNTER: PerLoad<Counter> = PerLoad::new();
    static OTHER: PerLoad<Cell<u64>> = PerLoad::new();

    #[test]
    fn dropping_the_state_resets_every_part() {
        create();
        assert_eq!(parts_made(), 0);
        COUNTER.with(|counter| counter.0.set(counter.0.get() + 5));
        // A part used while another is lent.
        COUNTER.with(|counter| OTHER.with(|other| other.set(u64::from(counter.0.get()))));
        assert_eq!(parts_made(), 2);
        assert_eq!(OTHER.with(Cell::get), 5);
        drop_state();
        assert_eq!(DROPPED.with(Cell::get), 1, "the part was dropped with the state");
        create();
        assert_eq!(parts_made(), 0, "a new load starts with no part");
        assert_eq!(COUNTER.with(|counter| counter.0.get()), 0);
        assert_eq!(OTHER.with(Cell::get), 0);
        drop_state();
        assert_eq!(DROPPED.with(Cell::get), 2);
    }
}
