//! `DREAMS.REDRIVE <org> [COUNT <n>]`: move dead letters that now read as
//! fire messages of `<org>` back to the tail of ready, oldest first; look
//! at up to `n` (default 100) dead items, each once, moving the others to
//! the tail of the dead-letter list; stop at the queue ceiling. Reply:
//! `[moved, kept, dead-left]`. Each move is replicated as the `LMOVE` it
//! is, with its keyspace events, and wakes a blocked drain as any push
//! onto ready does.

use super::organization;
use crate::commands::dreams::settings;
use crate::commands::options::COUNT_ARG;
use crate::dreams::redrive::redrive;
use crate::entry::entry_point;
use crate::glue::command::{Arg, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::stores::dreams::store::RedisQueue;
use dreamtown_protocol::args::Args;

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

/// Dead items one call looks at unless told: a step that stays small.
pub const DEFAULT_COUNT: u64 = 100;

/// The largest `COUNT`: one call stays a few milliseconds.
pub const COUNT_MAX: u64 = 10_000;

/// The parse step: `(org, count)`.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(&'a str, u64), CommandError> {
    let mut args = Args::new(argv);
    let org = organization(&mut args)?;
    let mut count = DEFAULT_COUNT;
    if args.keyword("COUNT") {
        count = args.unsigned("count", COUNT_MAX)?;
        if count == 0 {
            return Err(CommandError::err(format_args!("count must be from 1 to {COUNT_MAX}")));
        }
    }
    args.end()?;
    Ok((org, count))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (org, count) = parse(argv)?;
    let queue = RedisQueue::check(session, org, true)?;
    let mut queue = queue.open(session)?;
    let done = redrive(&mut queue, org, count, settings::queue_max());
    let left = crate::dreams::store::DeadLetters::dead_len(&queue);
    Ok(Reply::Array(vec![Reply::count(done.moved), Reply::count(done.kept), Reply::count(left)]))
}
