//! An organization's limits in the keyspace: the string
//! `exocortex:dreams:{<org>}:limits` (its text: `crate::dreams::limits`),
//! checked (ACL) with the other keys of a command before any opens, read,
//! written back (replicated as a `SET`, or a `DEL` once nothing is set),
//! and kept in step with the limits index
//! (`crate::services::limits_index`), which lets a drain of an
//! organization without limits skip the key altogether.

use crate::dreams::limits::{BadLimits, Limits};
use crate::dreams::region::QueueKey;
use crate::glue::access::{Read, ReadWrite};
use crate::glue::key::{Key, KeyKind};
use crate::glue::reply::CommandError;
use crate::glue::session::{Checked, Session};
use crate::glue::string::OwnedString;
use crate::services::limits_index;

/// The name of `org`'s limits key.
pub fn limits_key_name(org: &str) -> OwnedString {
    OwnedString::concat(&QueueKey::Limits.name_parts(org))
}

/// `ERR` for a limits key whose text does not parse.
fn unreadable(name: &[u8]) -> CommandError {
    CommandError::err(format_args!(
        "Dreams limits are not valid (key {}); set them again with DREAMS.LIMIT SET, or DREAMS.LIMIT CLEAR them",
        String::from_utf8_lossy(name)
    ))
}

/// Read the limits an open (or peeked) key holds: `None` when it does not
/// exist; `WRONGTYPE` or `ERR` when it holds something else.
fn read_limits(key: &Key<Read>) -> Result<Option<Limits>, CommandError> {
    key.require(KeyKind::String)?;
    match key.with_string(Limits::parse) {
        None => Ok(None),
        Some(Ok(limits)) => Ok(Some(limits)),
        Some(Err(BadLimits)) => Err(unreadable(key.name())),
    }
}

/// A limited organization's limits as a drain uses them: checked and read
/// before any of the drain's keys opens (so a refusal or a bad key
/// changes nothing, and a dry run sees every check), the key itself
/// opened only where a rate's state is written back.
pub struct DrainLimits {
    limits: Limits,
    /// The key, checked for writing too when a rate is set (its tokens).
    write: Option<Checked<ReadWrite>>,
    /// The key, opened for writing ([`DrainLimits::open_for_writes`]).
    key: Option<Key<ReadWrite>>,
}

impl DrainLimits {
    /// The limits of `org` for a drain, or `None` when it has none:
    /// without a look at the key when the limits index says so (nearly
    /// every drain: one test, inlined), else checked and read
    /// ([`DrainLimits::check_limited`]).
    #[inline]
    pub fn check(session: &Session, org: &str) -> Result<Option<Box<Self>>, CommandError> {
        if !limits_index::may_be_limited(session, org) {
            return Ok(None);
        }
        Self::check_limited(session, org)
    }

    /// The key of an organization the limits index says may be limited:
    /// checked for reading and read (a look before any key opens), checked
    /// for writing too when a rate is set (the drain writes its state
    /// back); `None` when it is gone (it then leaves the index). Boxed: a
    /// drain moves a pointer, not the limits (one without moves nothing).
    #[cold]
    #[inline(never)]
    pub fn check_limited(session: &Session, org: &str) -> Result<Option<Box<Self>>, CommandError> {
        if !limits_index::trusted() {
            limits_index::count_untrusted_open();
        }
        let name = limits_key_name(org);
        let checked = session.check::<Read>(name.clone())?;
        let Some(limits) = read_limits(&checked.peek_values(session))? else {
            limits_index::forget(session.ctx(), org);
            return Ok(None);
        };
        let write = match limits.rate {
            Some(_) => Some(session.check::<ReadWrite>(name)?),
            None => None,
        };
        Ok(Some(Box::new(Self { limits, write, key: None })))
    }

    /// Open the key for the writes of a rate's state (every check is done:
    /// the drain opens its keys now).
    pub fn open_for_writes(&mut self, session: &Session) -> Result<(), CommandError> {
        if let Some(write) = self.write.take() {
            self.key = Some(write.open(session)?);
        }
        Ok(())
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Change the limits (written by [`DrainLimits::store`]).
    pub fn limits_mut(&mut self) -> &mut Limits {
        &mut self.limits
    }

    /// Write the limits back (a rate's state): a `SET` of their text.
    /// Nothing without a rate (nothing a drain changes).
    pub fn store(&mut self) {
        if let Some(key) = &self.key {
            key.set_string(self.limits.to_text().as_bytes());
        }
    }
}

/// Read `org`'s limits without ACL checks, for a waiter pass's look
/// (`probe`): `Ok(None)` without limits, `Err` when the key cannot be read
/// as limits (the waiter's own drain then answers the error).
pub fn peek(session: &Session, org: &str) -> Result<Option<Limits>, BadLimits> {
    if !limits_index::may_be_limited(session, org) {
        return Ok(None);
    }
    let server = Session::internal(session.ctx());
    let Ok(checked) = server.check::<Read>(limits_key_name(org)) else { return Err(BadLimits) };
    let key = checked.peek_values(&server);
    match key.kind() {
        KeyKind::Empty => Ok(None),
        KeyKind::String => key.with_string(Limits::parse).transpose(),
        _ => Err(BadLimits),
    }
}

/// Check `org`'s limits key for reading (a command that shows them).
pub fn check_read(session: &Session, org: &str) -> Result<Checked<Read>, CommandError> {
    session.check::<Read>(limits_key_name(org))
}

/// Open and read a limits key [`check_read`] checked: all unset when absent.
pub fn open_read(session: &Session, checked: Checked<Read>) -> Result<Limits, CommandError> {
    Ok(read_limits(&checked.open(session)?)?.unwrap_or_default())
}

/// One organization's limits key, open to change it (`DREAMS.LIMIT SET`,
/// `CLEAR`, `DREAMS.PAUSE`, `RESUME`), and what it holds.
pub struct RedisLimits {
    key: Key<ReadWrite>,
    limits: Limits,
}

impl RedisLimits {
    /// Check `org`'s limits key to change it (ACL: read and write).
    pub fn check_for_change(session: &Session, org: &str) -> Result<Checked<ReadWrite>, CommandError> {
        session.check::<ReadWrite>(limits_key_name(org))
    }

    /// Open the key [`RedisLimits::check_for_change`] checked: type-checked
    /// (a string); text that does not parse reads as no limits at all
    /// (what is set now replaces it), and the second value says so.
    pub fn open_for_change(session: &Session, checked: Checked<ReadWrite>) -> Result<(Self, bool), CommandError> {
        let key = checked.open(session)?;
        key.require(KeyKind::String)?;
        let parsed = key.with_string(Limits::parse);
        let unreadable = matches!(parsed, Some(Err(_)));
        let limits = parsed.and_then(Result::ok).unwrap_or_default();
        Ok((Self { key, limits }, unreadable))
    }

    /// What the key holds (all unset when it does not exist).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Change the limits (written by [`RedisLimits::store`]).
    pub fn limits_mut(&mut self) -> &mut Limits {
        &mut self.limits
    }

    /// Write the limits back: a `SET` of their text, or a `DEL` when
    /// nothing is set any more; `org`'s limits index entry follows.
    pub fn store(&mut self, session: &Session, org: &str) {
        if self.limits.is_empty() {
            if self.key.delete() {
                limits_index::forget(session.ctx(), org);
            }
            return;
        }
        self.key.set_string(self.limits.to_text().as_bytes());
        limits_index::note(session.ctx(), org);
    }
}
