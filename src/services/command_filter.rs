//! The module's one command filter, registered at load: it sees every
//! command before it runs (clients, the replication link, scripts, other
//! modules' `RM_Call`s; a command queued in `MULTI` when it is queued)
//! and tells the two mechanisms that must know:
//!
//! * `acl_watch`: an `ACL` command or an `EXEC` may change the ACL rules
//!   the module evaluates (`glue::acl`), and `ACL DRYRUN` of a module
//!   command is answered by the module (`DREAMTOWN.DRYRUN`);
//! * `slot_memo` (cluster mode only): `CLUSTER`, `REPLICAOF`, `EXEC` and
//!   `DISCARD` may change slot states.
//!
//! It runs for every command, so it rejects by length and first letter
//! before comparing names: `ACL`, `EXEC`, `CLUSTER`, `DISCARD`, `SLAVEOF`,
//! `REPLICAOF`.

use super::{acl_watch, slot_memo};
use crate::glue::ctx::Ctx;
use crate::glue::filter::{self, CommandFilter, Filtered};

/// Register the filter (module load). Without the filter API the module
/// still works: `ACL DRYRUN` then answers for module commands as Redis
/// does (the command alone), ACL changes are not seen (nothing tells
/// `glue::acl` to forget what it read: `rules_changed`), and in a
/// cluster every command gets the migration guard's full check.
pub fn register(ctx: Ctx) -> bool {
    filter::register::<Filter>(ctx)
}

/// The module's command filter.
struct Filter;

impl CommandFilter for Filter {
    fn on_command(command: &Filtered) {
        on_command(command);
    }
}

fn on_command(command: &Filtered) {
    let name = command.arg(0);
    if !matches!(name.len(), 3 | 4 | 7 | 9)
        || !matches!(
            name.first(),
            Some(b'a' | b'A' | b'c' | b'C' | b'e' | b'E' | b'd' | b'D' | b's' | b'S' | b'r' | b'R')
        )
    {
        return;
    }
    if name.eq_ignore_ascii_case(b"ACL") {
        acl_watch::on_acl(command);
        return;
    }
    if name.eq_ignore_ascii_case(b"EXEC") {
        acl_watch::on_exec(command.client_id());
    } else if name.eq_ignore_ascii_case(b"DISCARD") {
        acl_watch::on_discard(command.client_id());
    }
    if slot_memo::is_active() {
        slot_memo::on_command(command, name);
    }
}
