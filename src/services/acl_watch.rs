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

use std::cell::{Cell, RefCell};

use crate::glue::filter::{in_multi, Filtered};
use crate::glue::module_state::PerLoad;
use crate::glue::{acl, command};

/// The command `ACL DRYRUN` of a module command becomes.
pub const DRY_RUN_COMMAND: &str = "DREAMTOWN.DRYRUN";

/// The watch's part of the module state.
#[derive(Default)]
struct State {
    /// Clients that queued an ACL change in `MULTI`.
    queued: RefCell<Vec<u64>>,
    /// Every `EXEC` forgets: an ACL change was queued by a client the
    /// filter could not name, or too many clients queued one.
    every_exec: Cell<bool>,
}

static STATE: PerLoad<State> = PerLoad::new();

/// At most this many clients remembered (beyond: every `EXEC` forgets).
const MAX_CLIENTS: usize = 1024;

fn set_every_exec() {
    STATE.with(|state| state.every_exec.set(true));
}

/// An `ACL` command.
pub fn on_acl(command: &Filtered) {
    let sub = command.arg(1);
    if [&b"SETUSER"[..], b"DELUSER", b"LOAD"].iter().any(|write| sub.eq_ignore_ascii_case(write)) {
        acl::rules_changed();
        match command.client_id() {
            Some(id) if in_multi(id) => STATE.with(|state| {
                let mut queued = state.queued.borrow_mut();
                if !queued.contains(&id) {
                    if queued.len() >= MAX_CLIENTS {
                        state.every_exec.set(true);
                    } else {
                        queued.push(id);
                    }
                }
            }),
            Some(_) => {}
            None => set_every_exec(),
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
    let (queued_here, every_exec) = STATE.with(|state| {
        let queued_here = id.is_some_and(|id| {
            let mut queued = state.queued.borrow_mut();
            let before = queued.len();
            queued.retain(|q| *q != id);
            queued.len() != before
        });
        (queued_here, state.every_exec.get())
    });
    if queued_here || every_exec {
        acl::rules_changed();
    }
}

/// A `DISCARD` (of client `id`, where known).
pub fn on_discard(id: Option<u64>) {
    if let Some(id) = id {
        STATE.with(|state| state.queued.borrow_mut().retain(|q| *q != id));
    }
}
