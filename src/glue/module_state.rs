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
//! file that owns it, and reached with [`PerLoad::with`]: the one
//! accessor, on the main thread (module commands, timers, events and
//! callbacks all run there; the module starts no thread). The state owns
//! the part; the handle only remembers where this load's part is (null
//! before it is made and once the state is dropped), so reaching a part is
//! one load and one branch: no lock, no allocation. A part is made
//! (`T::default()`) the first time a load uses it; the state drops its
//! parts at unload, newest first. A part gives shared access (`&T`): what
//! it changes sits in cells (`Cell`, `RefCell`, atomics), so a part's user
//! may reach another part, or the same one, while it holds it.
//!
//! Constants and tables fixed at build time stay `static`s: they hold no
//! state.
//!
//! Unit tests run on several threads at once: there, each thread has its
//! own state (a thread-local), found by the handle's address, so tests do
//! not share parts.

use std::any::Any;
use std::cell::UnsafeCell;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, Ordering};

/// What the state needs of a handle: to forget where its part was.
trait Handle {
    /// The part is being dropped with the state.
    fn forget(&self);
}

/// One part: its box (owned, freed when the state drops) and its handle.
struct Part {
    value: NonNull<dyn Any>,
    handle: &'static dyn Handle,
}

/// The state of one load: the parts made since, in the order they were
/// made.
#[derive(Default)]
pub struct ModuleState {
    parts: Vec<Part>,
}

impl ModuleState {
    /// The part of `handle`, if this load has made it (unit tests' lookup).
    #[cfg(test)]
    fn part_of(&self, handle: *const ()) -> Option<NonNull<dyn Any>> {
        let found = self.parts.iter().find(|part| ptr::addr_eq(part.handle as *const dyn Handle, handle));
        found.map(|part| part.value)
    }

    /// How many parts this load has made.
    #[cfg(test)]
    fn parts_made(&self) -> usize {
        self.parts.len()
    }
}

impl Drop for ModuleState {
    fn drop(&mut self) {
        // Newest first: a part may use an older one while dropping.
        while let Some(part) = self.parts.pop() {
            part.handle.forget();
            // SAFETY: `value` came from `Box::leak` in `PerLoad::make_part`
            // and was just taken out of the state, so it is freed once; no
            // `&T` to it is alive: parts are lent only inside
            // `PerLoad::with`, and the state is dropped only by
            // `drop_state` (unload) or `create` (load), which no part's
            // user calls.
            drop(unsafe { Box::from_raw(part.value.as_ptr()) });
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

/// Put `new` in the slot and drop what was there (outside the slot's
/// borrow: a part may reach the state while dropping, and then finds the
/// new one).
fn replace(new: Option<ModuleState>) {
    let old = slot(|slot| {
        // SAFETY: main thread only (see `Slot`); no part is lent now (load
        // and unload run outside any `with`), so nothing borrows the state.
        unsafe { std::mem::replace(&mut *slot.0.get(), new) }
    });
    drop(old);
}

/// `MODULE LOAD`: a new, empty state (dropping any left, which a
/// successful unload never leaves).
pub fn create() {
    replace(Some(ModuleState::default()));
}

/// `MODULE UNLOAD` (or a failed load): drop the state and every part in
/// it. A part used after this (nothing should) starts a fresh state.
pub fn drop_state() {
    replace(None);
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

/// A handle to one part of the state, of type `T`: a `static` in the file
/// that owns the part. Holds no value: each load has its own, owned by
/// the load's state.
pub struct PerLoad<T> {
    /// This load's part, once made (never read by unit tests: it would
    /// be shared by their threads).
    part: AtomicPtr<T>,
    make: fn() -> T,
}

impl<T: Default + 'static> PerLoad<T> {
    /// A handle whose part starts as `T::default()` in each load.
    pub const fn new() -> Self {
        PerLoad { part: AtomicPtr::new(ptr::null_mut()), make: T::default }
    }
}

impl<T: Default + 'static> Default for PerLoad<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: 'static> Handle for PerLoad<T> {
    fn forget(&self) {
        self.part.store(ptr::null_mut(), Ordering::Relaxed);
    }
}

impl<T: 'static> PerLoad<T> {
    /// Run `use_part` on this load's part (made now if this load has not
    /// used it yet).
    #[inline]
    pub fn with<R>(&'static self, use_part: impl FnOnce(&T) -> R) -> R {
        let part = match self.current() {
            Some(part) => part,
            None => self.make_part(),
        };
        // SAFETY: the part is a live box of `T` (made by this handle),
        // freed only when the state drops, which forgets it first and
        // never happens while a part is lent; `&T` is shared, and parts
        // change only through their own cells.
        use_part(unsafe { part.as_ref() })
    }

    /// Where this load's part is, if made: the handle's pointer.
    #[cfg(not(test))]
    #[inline]
    fn current(&self) -> Option<NonNull<T>> {
        NonNull::new(self.part.load(Ordering::Relaxed))
    }

    /// Unit tests: this thread's state's part of this handle.
    #[cfg(test)]
    fn current(&'static self) -> Option<NonNull<T>> {
        let handle = ptr::from_ref(self).cast::<()>();
        let found = slot(|slot| {
            // SAFETY: one thread's own state (a thread-local); a shared
            // look that ends before anything can change it.
            unsafe { (*slot.0.get()).as_ref().and_then(|state| state.part_of(handle)) }
        });
        found.map(NonNull::cast::<T>)
    }

    /// The first use of this part in this load: make it (outside any
    /// borrow of the state: making a part may use another) and keep it
    /// in the state.
    #[cold]
    #[inline(never)]
    fn make_part(&'static self) -> NonNull<T> {
        let part = NonNull::from(Box::leak(Box::new((self.make)())));
        let value: NonNull<dyn Any> = part;
        slot(|slot| {
            // SAFETY: main thread only (see `Slot`). The `&mut` lives only
            // for this push; parts already lent are separate boxes (the
            // state holds raw pointers to them), untouched by it.
            let state = unsafe { &mut *slot.0.get() };
            state.get_or_insert_with(ModuleState::default).parts.push(Part { value, handle: self });
        });
        if cfg!(not(test)) {
            self.part.store(part.as_ptr(), Ordering::Relaxed);
        }
        part
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
