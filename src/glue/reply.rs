//! What a command answers: a reply value, or a Redis-style error whose
//! first word is its code (`ERR`, `WRONGTYPE`, `NOPERM`). Replies are built
//! whole before anything is written to the client, so a failure half way
//! can never leave a partial reply.

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_long};

use super::api::api;
use super::ctx::Ctx;
use super::string::OwnedString;
use dreamtown_protocol::reply::Wire;

/// A reply value.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// A status reply such as `OK` or `queued` (NUL-terminated already:
    /// handed to Redis as it is, no copy or scan per reply).
    Status(&'static CStr),
    /// A bulk string (any bytes).
    Bulk(Vec<u8>),
    /// An integer.
    Integer(i64),
    /// The null reply of one item: `$-1` in RESP2 (as `GET`, or `BLMOVE`
    /// inside MULTI); `_` in RESP3.
    Nil,
    /// The null array: `*-1` in RESP2 (as the timeout of `BLPOP`,
    /// `BLMOVE`, `BLMPOP`, `XREADGROUP`); `_` in RESP3.
    NilArray,
    /// An array.
    Array(Vec<Reply>),
    /// Field/value pairs: a map in RESP3, the flat array `[field, value,
    /// ...]` in RESP2 (as `HGETALL` and `CONFIG GET` reply; the server
    /// writes it as the client's protocol wants: `RedisModule_ReplyWithMap`).
    Map(Vec<(Reply, Reply)>),
    /// A bulk string held in a Redis string, sent as it is.
    String(OwnedString),
    /// An array of bulk strings held in Redis strings (elements popped
    /// from a list), sent as they are, not copied into `Vec`s first.
    Strings(Vec<OwnedString>),
    /// The array `[status, integer, integer]`, sent without building a
    /// `Vec` for it (a hot reply's shape).
    Counted(&'static CStr, i64, i64),
    /// Nothing now: the client was blocked and is answered later.
    Blocked,
}

/// What a reply's bulk strings are held in: bytes of our own, or Redis
/// strings (elements popped from a list) sent as they are.
pub trait Bulk: Sized {
    /// One bulk string.
    fn reply(self) -> Reply;
    /// An array of them.
    fn replies(items: Vec<Self>) -> Reply;
}

impl Bulk for Vec<u8> {
    fn reply(self) -> Reply {
        Reply::Bulk(self)
    }

    fn replies(items: Vec<Self>) -> Reply {
        Reply::Array(items.into_iter().map(Reply::Bulk).collect())
    }
}

impl Bulk for OwnedString {
    fn reply(self) -> Reply {
        Reply::String(self)
    }

    fn replies(items: Vec<Self>) -> Reply {
        Reply::Strings(items)
    }
}

/// The protocol's replies ([`dreamtown_protocol::reply`]) are written
/// straight into a `Reply`, no protocol `Value` built first: the counted
/// shape of RECORD and ACK stays [`Reply::Counted`] (no `Vec`), a drained
/// payload moves into [`Reply::Bulk`] uncopied, received messages stay the
/// Redis strings they were popped as ([`Reply::Strings`]).
impl<B: Bulk> Wire<B> for Reply {
    fn status(word: &'static CStr) -> Self {
        Reply::Status(word)
    }

    fn bulk(bytes: B) -> Self {
        bytes.reply()
    }

    fn integer(value: i64) -> Self {
        Reply::Integer(value)
    }

    fn nil() -> Self {
        Reply::Nil
    }

    fn nil_array() -> Self {
        Reply::NilArray
    }

    fn array(items: Vec<Self>) -> Self {
        Reply::Array(items)
    }

    fn map(pairs: Vec<(Self, Self)>) -> Self {
        Reply::Map(pairs)
    }

    fn counted(word: &'static CStr, first: i64, second: i64) -> Self {
        Reply::Counted(word, first, second)
    }

    fn bulks(items: Vec<B>) -> Self {
        B::replies(items)
    }
}

impl Reply {
    /// A command's reply, as its protocol type writes it.
    #[inline(always)]
    pub fn of(reply: impl dreamtown_protocol::reply::Reply<Vec<u8>>) -> Self {
        reply.encode()
    }

    /// A reply of Redis strings (received messages), as its protocol type
    /// writes it.
    #[inline(always)]
    pub fn of_strings(reply: impl dreamtown_protocol::reply::Reply<OwnedString>) -> Self {
        reply.encode()
    }

    /// `[acked, then]`, of two replies written already: the protocol's
    /// one-trip shape (`DREAMS.DRAIN ... ACK`, `TOWN.RECV ... ACK`).
    pub fn acked_then(acked: Reply, then: Reply) -> Self {
        dreamtown_protocol::reply::acked_then::<Vec<u8>, _>(acked, then)
    }
}

pub use dreamtown_protocol::error::CommandError;

/// A dry run (`ACL DRYRUN`, `session::Session::dry_run_as`) reached the
/// first key it would open: every ACL check passed. Never sent.
pub(crate) fn dry_run_complete() -> CommandError {
    CommandError::coded("DRYRUN", "every check passed")
}

/// What a command handler returns.
pub type CommandResult = Result<Reply, CommandError>;

/// Write `result` to the client of `ctx`.
pub fn send(ctx: Ctx, result: &CommandResult) {
    match result {
        Ok(reply) => send_reply(ctx, reply),
        Err(error) => send_error(ctx, error.message()),
    }
}

/// Write an error reply; the text is made a legal one-line RESP error.
pub fn send_error(ctx: Ctx, message: &str) {
    let clean: String = message.chars().map(|c| if c == '\r' || c == '\n' || c == '\0' { ' ' } else { c }).collect();
    let text = CString::new(clean).unwrap_or_default();
    // SAFETY: `ctx` is the running command's live context and `text` NUL-terminated.
    unsafe { api!(RedisModule_ReplyWithError)(ctx.raw(), text.as_ptr()) };
}

fn send_reply(ctx: Ctx, reply: &Reply) {
    // SAFETY: `ctx` is the live context of the command (or blocked client) replying; every string
    // passed is NUL-terminated or given with its length, valid for the call.
    unsafe {
        match reply {
            Reply::Status(status) => {
                api!(RedisModule_ReplyWithSimpleString)(ctx.raw(), status.as_ptr());
            }
            Reply::Bulk(bytes) => {
                api!(RedisModule_ReplyWithStringBuffer)(ctx.raw(), bytes.as_ptr().cast::<c_char>(), bytes.len());
            }
            Reply::Integer(value) => {
                api!(RedisModule_ReplyWithLongLong)(ctx.raw(), *value);
            }
            Reply::Nil => {
                api!(RedisModule_ReplyWithNull)(ctx.raw());
            }
            Reply::NilArray => {
                api!(RedisModule_ReplyWithNullArray)(ctx.raw());
            }
            Reply::Array(items) => {
                api!(RedisModule_ReplyWithArray)(ctx.raw(), items.len() as c_long);
                for item in items {
                    send_reply(ctx, item);
                }
            }
            Reply::Map(pairs) => {
                api!(RedisModule_ReplyWithMap)(ctx.raw(), pairs.len() as c_long);
                for (field, value) in pairs {
                    send_reply(ctx, field);
                    send_reply(ctx, value);
                }
            }
            Reply::String(string) => {
                api!(RedisModule_ReplyWithString)(ctx.raw(), string.as_ptr());
            }
            Reply::Strings(items) => {
                api!(RedisModule_ReplyWithArray)(ctx.raw(), items.len() as c_long);
                for item in items {
                    api!(RedisModule_ReplyWithString)(ctx.raw(), item.as_ptr());
                }
            }
            Reply::Counted(status, first, second) => {
                api!(RedisModule_ReplyWithArray)(ctx.raw(), 3);
                api!(RedisModule_ReplyWithSimpleString)(ctx.raw(), status.as_ptr());
                api!(RedisModule_ReplyWithLongLong)(ctx.raw(), *first);
                api!(RedisModule_ReplyWithLongLong)(ctx.raw(), *second);
            }
            Reply::Blocked => {}
        }
    }
}
