//! Values held in a `static` that only the server's main thread touches:
//! module commands, timers, events and callbacks all run there, and the
//! module starts no thread of its own. A `static Mutex<T>` needs `T:
//! Send`; server strings (`OwnedString`, and `Rc`s sharing them) are not,
//! and need not be, since no other thread ever sees them.

/// `T`, sendable because only the main thread uses it (see the module
/// doc). Hold it in a `Mutex` (uncontended) or another `Sync` cell.
pub struct MainThreadOnly<T>(pub T);

// SAFETY: every use of a module static is on the server's main thread
// (the module's code runs only in the server's callbacks there, and it
// spawns no thread), so the value never crosses threads.
unsafe impl<T> Send for MainThreadOnly<T> {}
