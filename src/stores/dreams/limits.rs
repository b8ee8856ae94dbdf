//! An organization's limits in the keyspace: the string
//! `exocortex:dreams:{<org>}:limits` (its text: `crate::dreams::limits`),
//! opened with ACL and type checks, read, written back (replicated as a
//! `SET`, or a `DEL` once nothing is set), and kept in step with the
//! limits index (`crate::services::limits_index`), which lets a drain of
//! an organization without limits skip the key altogether.

use crate::dreams::limits::{BadLimits, Limits};
use crate::dreams::region::QueueKey;
use crate::glue::key::{Key, KeyKind};
use crate::glue::reply::CommandError;
use crate::glue::session::{Access, Session};
use crate::glue::string::OwnedString;
use crate::services::limits_index;

/// One organization's limits key, open, and what it holds.
pub struct RedisLimits {
    key: Key,
    limits: Limits,
    /// The key existed when opened.
    existed: bool,
}

/// The name of `org`'s limits key.
pub fn limits_key_name(org: &str) -> OwnedString {
    OwnedString::concat(&QueueKey::Limits.name_parts(org))
}

/// `ERR` for a limits key whose text does not parse.
fn unreadable(key: &Key) -> CommandError {
    CommandError::err(format_args!(
        "Dreams limits are not valid (key {}); set them again with DREAMS.LIMIT SET, or DREAMS.LIMIT CLEAR them",
        String::from_utf8_lossy(key.name())
    ))
}

impl RedisLimits {
    /// Open `org`'s limits key, checked for `access` (ACL, then type: a
    /// string), and read it: an error if it holds something else or text
    /// that does not parse.
    pub fn open(session: &Session, org: &str, access: Access) -> Result<Self, CommandError> {
        Self::open_as(session, org, access, access)
    }

    /// Open `org`'s limits key to change it (ACL for writing, type): text
    /// that does not parse reads as no limits at all (what is set now
    /// replaces it), and the second value says so.
    pub fn open_for_change(session: &Session, org: &str) -> Result<(Self, bool), CommandError> {
        let [name] = session.check_strings([limits_key_name(org)], Access::Write)?;
        let key = session.open_checked(name, Access::Write);
        key.require(KeyKind::String)?;
        let parsed = key.with_string(Limits::parse);
        let existed = parsed.is_some();
        let unreadable = matches!(parsed, Some(Err(_)));
        let limits = parsed.and_then(Result::ok).unwrap_or_default();
        Ok((Self { key, limits, existed }, unreadable))
    }

    /// [`RedisLimits::open`], checked for `check` and opened for `mode`.
    fn open_as(session: &Session, org: &str, check: Access, mode: Access) -> Result<Self, CommandError> {
        let [name] = session.check_strings([limits_key_name(org)], check)?;
        let key = session.open_checked(name, mode);
        key.require(KeyKind::String)?;
        let parsed = key.with_string(Limits::parse);
        let existed = parsed.is_some();
        let limits = match parsed {
            None => Limits::default(),
            Some(Ok(limits)) => limits,
            Some(Err(BadLimits)) => return Err(unreadable(&key)),
        };
        Ok(Self { key, limits, existed })
    }

    /// Open `org`'s limits key for a drain, or `None` when it has none:
    /// without a look at the key when the limits index says so (nearly
    /// every drain: one test, inlined), else opened and read
    /// ([`RedisLimits::open_limited`]).
    #[inline]
    pub fn open_for_drain(session: &Session, org: &str) -> Result<Option<Box<Self>>, CommandError> {
        if !limits_index::may_be_limited(session, org) {
            return Ok(None);
        }
        Self::open_limited(session, org)
    }

    /// The key of an organization the limits index says may be limited:
    /// opened and read, checked for reading, and for writing too when a
    /// rate is set (the drain writes its state back); `None` when it is
    /// gone (it then leaves the index). Boxed: a drain moves a pointer,
    /// not the key and its limits (a drain without limits moves nothing).
    #[cold]
    #[inline(never)]
    pub fn open_limited(session: &Session, org: &str) -> Result<Option<Box<Self>>, CommandError> {
        if !limits_index::trusted() {
            limits_index::UNTRUSTED_OPENS.bump();
        }
        // Opened for writing (a rate's state is written back), checked for
        // reading until then (`check_write`).
        let limits = Self::open_as(session, org, Access::Read, Access::Write)?;
        if !limits.existed {
            limits_index::forget(session.ctx(), org);
            return Ok(None);
        }
        // A rate's state is written back by the drain that takes tokens:
        // checked now, before the call writes anything.
        if limits.limits.rate.is_some() {
            limits.check_write(session)?;
        }
        Ok(Some(Box::new(limits)))
    }

    /// Read `org`'s limits without ACL checks, for a waiter pass's look
    /// (`probe`): `Ok(None)` without limits, `Err` when the key cannot be
    /// read as limits (the waiter's own drain then answers the error).
    pub fn peek(session: &Session, org: &str) -> Result<Option<Limits>, BadLimits> {
        if !limits_index::may_be_limited(session, org) {
            return Ok(None);
        }
        let key = session.open_unchecked(limits_key_name(org).as_bytes(), Access::Read);
        match key.kind() {
            KeyKind::Empty => Ok(None),
            KeyKind::String => key.with_string(Limits::parse).transpose(),
            _ => Err(BadLimits),
        }
    }

    /// What the key holds (all unset when it does not exist).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Change the limits (written by [`RedisLimits::store`]).
    pub fn limits_mut(&mut self) -> &mut Limits {
        &mut self.limits
    }

    /// Refuse with `NOPERM` unless the caller may write the key.
    pub fn check_write(&self, session: &Session) -> Result<(), CommandError> {
        session.check_name(self.key.name_string(), Access::Write)
    }

    /// Write the limits back: a `SET` of their text, or a `DEL` when
    /// nothing is set any more; `org`'s limits index entry follows.
    pub fn store(&mut self, session: &Session, org: &str) {
        if self.limits.is_empty() {
            if self.key.delete() {
                limits_index::forget(session.ctx(), org);
            }
            self.existed = false;
            return;
        }
        self.key.set_string(self.limits.to_text().as_bytes());
        limits_index::note(session.ctx(), org);
        self.existed = true;
    }
}
