//! Keeps the module's reading of ACL rules current and answers `ACL
//! DRYRUN` for its commands; fed by the command filter
//! (`command_filter`).
//!
//! * `ACL SETUSER`, `DELUSER` and `LOAD` may change a user's selectors:
//!   `glue::acl` forgets what it read (`rules_changed`). Queued in `MULTI`
//!   they apply at `EXEC`: that client's `EXEC` forgets again (where the
//!   filter cannot name clients, Redis 7.0, every `EXEC` after any such
//!   command does). `ACL` cannot run in scripts or functions.
//! * `ACL DRYRUN <user> <command> ...` of a module command becomes
//!   `DREAMTOWN.DRYRUN <user> <command> ...` (`commands::dry_run`): Redis
//!   alone would check the command and none of the keys the module
//!   derives from the tenant, and answer `OK` where the call is refused.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::glue::filter::{in_multi, Filtered};
use crate::glue::{acl, command};

/// The command `ACL DRYRUN` of a module command becomes.
pub const DRY_RUN_COMMAND: &str = "DREAMTOWN.DRYRUN";

/// Clients that queued an ACL change in `MULTI`.
static QUEUED: Mutex<Vec<u64>> = Mutex::new(Vec::new());

/// Every `EXEC` forgets: an ACL change was queued by a client the filter
/// could not name, or too many clients queued one.
static EVERY_EXEC: AtomicBool = AtomicBool::new(false);

/// At most this many clients remembered (beyond: every `EXEC` forgets).
const MAX_CLIENTS: usize = 1024;

fn queued() -> MutexGuard<'static, Vec<u64>> {
    QUEUED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `MODULE UNLOAD`: reset the statics.
pub fn unload() {
    queued().clear();
    EVERY_EXEC.store(false, Ordering::Relaxed);
}

/// An `ACL` command.
pub fn on_acl(command: &Filtered) {
    let sub = command.arg(1);
    if [&b"SETUSER"[..], b"DELUSER", b"LOAD"].iter().any(|write| sub.eq_ignore_ascii_case(write)) {
        acl::rules_changed();
        match command.client_id() {
            Some(id) if in_multi(id) => {
                let mut queued = queued();
                if !queued.contains(&id) {
                    if queued.len() >= MAX_CLIENTS {
                        EVERY_EXEC.store(true, Ordering::Relaxed);
                    } else {
                        queued.push(id);
                    }
                }
            }
            Some(_) => {}
            None => EVERY_EXEC.store(true, Ordering::Relaxed),
        }
        return;
    }
    if sub.eq_ignore_ascii_case(b"DRYRUN") && command.argc() >= 4 && command::is_registered(command.arg(3)) {
        command.replace(0, DRY_RUN_COMMAND.as_bytes());
        command.delete(1);
    }
}

/// An `EXEC` (of client `id`, where known).
pub fn on_exec(id: Option<u64>) {
    let queued_here = id.is_some_and(|id| {
        let mut queued = queued();
        let before = queued.len();
        queued.retain(|q| *q != id);
        queued.len() != before
    });
    if queued_here || EVERY_EXEC.load(Ordering::Relaxed) {
        acl::rules_changed();
    }
}

/// A `DISCARD` (of client `id`, where known).
pub fn on_discard(id: Option<u64>) {
    if let Some(id) = id {
        queued().retain(|q| *q != id);
    }
}
