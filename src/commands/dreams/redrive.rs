//! `DREAMS.REDRIVE <org> [COUNT <n>]`: move dead letters that now read as
//! fire messages of `<org>` back to the tail of ready, oldest first; look
//! at up to `n` (default 100) dead items, each once, moving the others to
//! the tail of the dead-letter list; stop at the queue ceiling. Reply:
//! `[moved, kept, dead-left]`. Each move is replicated as the `LMOVE` it
//! is, with its keyspace events, and wakes a blocked drain as any push
//! onto ready does.

use crate::commands::dreams::settings;
use crate::commands::options::COUNT_ARG;
use crate::dreams::redrive::redrive;
use crate::entry::entry_point;
use crate::glue::command::{Arg, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::stores::dreams::store::RedisQueue;
use dreamtown_protocol::reply::dreams as reply;
use dreamtown_protocol::request::dreams as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::dreams::REDRIVE,
    entry: entry_point!(run),
    flags: "write deny-oom",
    tenant: TenantUse::Write,
    arity: -2,
    summary: "Move dead letters that are fire messages of the organization back to the ready list",
    complexity: "O(N) where N is the number of dead items looked at (COUNT, default 100)",
    args: &[Arg::tenant("org"), COUNT_ARG],
};

/// The parse step ([`request::Redrive`]): `(org, count)`.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(&'a str, u64), CommandError> {
    let request = request::Redrive::parse(argv)?;
    Ok((request.org, request.count()))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (org, count) = parse(argv)?;
    let queue = RedisQueue::check(session, org, true)?;
    let mut queue = queue.open(session)?;
    let done = redrive(&mut queue, org, count, settings::queue_max());
    let left = crate::dreams::store::DeadLetters::dead_len(&queue);
    Ok(Reply::of(reply::Redrive { moved: done.moved, kept: done.kept, left }))
}
