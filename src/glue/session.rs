//! One command's view of the server: the caller's ACL user, keys checked
//! against it before they open, context flags and the clock.
//!
//! Tenant commands declare their first argument as a `NOT_KEY` key spec, so
//! Redis routes them in a cluster but does not match the bare tenant name
//! against ACL key patterns; the module checks every key (and channel) a
//! command touches itself, under Redis's own rule (`glue::acl`: one
//! selector must allow the command and all of them).
//!
//! The rule is kept by types. A key opens only from a [`Checked`] proof,
//! which only [`Session::check`] makes, in the access mode
//! (`glue::access`) the check was for; the open key offers only that
//! mode's operations. And a command checks every key before it opens the
//! first one (a check after an open is refused as a bug): so a refusal
//! changes nothing, and a *dry run* of the command ([`Session::dry_run_as`],
//! what `ACL DRYRUN` runs) stops at the first open with the same verdict
//! the real call would reach.

use std::cell::Cell;
use std::marker::PhantomData;
use std::os::raw::c_int;
use std::ptr;
use std::rc::Rc;

use redis_module::raw;

use super::access::{Meta, Mode, Read, ReadsValues};
use super::acl::{self, Selectors, Shape};
use super::api::api;
use super::context_flags::ContextFlags;
use super::ctx::Ctx;
use super::key::Key;
use super::module_state::PerLoad;
use super::reply::CommandError;
use super::string::{KeyName, OwnedString};

/// A key name that passed the session's ACL check for mode `M`: the only
/// way to open a key. Made only by [`Session::check`].
#[must_use = "a checked key is opened with Checked::open"]
pub struct Checked<M: Mode> {
    name: KeyName,
    mode: PhantomData<M>,
}

impl<M: Mode> Checked<M> {
    /// The key name as a Redis string.
    pub fn name_string(&self) -> &OwnedString {
        &self.name
    }

    /// Open the key now. In a dry run this is where the run stops: every
    /// check passed ([`dry_run_complete`](super::reply::dry_run_complete)).
    pub fn open(self, session: &Session) -> Result<Key<M>, CommandError> {
        session.opening()?;
        Ok(Key::open_name(session.ctx, self.name))
    }

    /// Open the key now as a command that writes opens its keys: the lookup
    /// counts no keyspace hit or miss and fires no `keymiss` event, as the
    /// write commands' lookups do not (`LPUSH` of one key looks at no
    /// other), while `M` still decides what may be done with it. For a key
    /// a writing command only looks at (the lengths `DREAMS.FIRE` checks
    /// against the ceiling).
    pub fn open_beside_writes(self, session: &Session) -> Result<Key<M>, CommandError> {
        session.opening()?;
        Ok(Key::open_name_as(session.ctx, self.name, true))
    }

    /// The key, opened by the first operation that needs it (for a key
    /// some paths only touch).
    pub fn open_lazily(self, session: &Session) -> Result<Key<M>, CommandError> {
        session.opening()?;
        Ok(Key::unopened(session.ctx, self.name))
    }

    /// Look at the key's type, existence or length without opening it
    /// for the command (before a write, or while checking others). Allowed
    /// in a dry run. Looked up as the checked mode opens it (a key checked
    /// for writing counts no keyspace hit or miss, as a write's lookup).
    pub fn peek(&self, session: &Session) -> Key<Meta> {
        Key::open_name_as(session.ctx, self.name.clone(), M::WRITE)
    }

    /// Read the key while checking others (a command whose further keys
    /// are named by this one's content: an index). Allowed in a dry run.
    /// Looked up as [`Checked::peek`].
    pub fn peek_values(&self, session: &Session) -> Key<Read>
    where
        M: ReadsValues,
    {
        Key::open_name_as(session.ctx, self.name.clone(), M::WRITE)
    }
}

/// Proof that a session's caller may use every key (a user with `~*` and
/// only its root selector, or the server itself): a key is then checked
/// without naming it first ([`Checked::for_every_key`]), for a command that
/// names a key only on the path that uses it. Made only by
/// [`Session::every_key`].
pub struct EveryKey(());

impl<M: Mode> Checked<M> {
    /// The proof for `name`, whose check [`EveryKey`] already answers.
    pub fn for_every_key(_every: &EveryKey, name: impl Into<KeyName>) -> Self {
        Checked { name: name.into(), mode: PhantomData }
    }
}

/// A channel that passed the session's ACL check for publishing.
pub struct CheckedChannel {
    name: OwnedString,
}

impl CheckedChannel {
    /// The channel name, to publish to. In a dry run this is where the
    /// run stops (see [`Checked::open`]).
    pub fn publish_to(&self, session: &Session) -> Result<&[u8], CommandError> {
        session.opening()?;
        Ok(self.name.as_bytes())
    }
}

/// Whose permissions a session checks.
enum Caller {
    /// The server itself (a timer, the replication link, AOF loading): no checks.
    Server,
    /// An ACL user with only its root selector: the server's any-selector
    /// checks are exact; a user with every key (or channel) needs none.
    Simple { user: *mut raw::RedisModuleUser, owned: bool, all_keys: bool, all_channels: bool },
    /// An ACL user with selectors: one probe each (`glue::acl`), and the
    /// selectors still allowing everything checked so far (`None` until
    /// the command itself is checked, at the first key).
    Selectors { user: *mut raw::RedisModuleUser, owned: bool, probes: Rc<Shape>, viable: Cell<Option<Selectors>> },
    /// Refuse every key: the user's selectors could not be read, or the
    /// client's user is not one the module can look up.
    Refused { user: *mut raw::RedisModuleUser, owned: bool, why: String },
}

/// The per-command context.
pub struct Session {
    ctx: Ctx,
    caller: Caller,
    /// The context flags as the command found them, once read: for the
    /// flags that cannot change while it runs (MULTI, Lua, no-block,
    /// cluster). `OOM` can, and is always read afresh.
    start_flags: Cell<Option<ContextFlags>>,
    /// The command's arguments as Redis passed them (its name first), or
    /// none (a timer's session): for a command that hands an argument on
    /// as the string it is instead of copying it into a new one.
    argv: *mut *mut raw::RedisModuleString,
    argc: usize,
    /// The whole call as the ACL sees it (its name, a subcommand's, the
    /// arguments), for the command check of a user with selectors: the
    /// client's argv, or (a blocked call served later, a dry run) made here.
    command: CommandWords,
    /// A dry run: nothing opens; no `ACL LOG` entries.
    dry_run: bool,
    /// A key was opened: no key may be checked any more (user sessions).
    opened: Cell<bool>,
    /// What the last refusal named: the key or channel, and which.
    refused: std::cell::RefCell<Option<(Vec<u8>, &'static str)>>,
}

/// The command's words for the ACL's command check.
enum CommandWords {
    /// Not known (a server session).
    None,
    /// The client's own argv.
    Client(*mut *mut raw::RedisModuleString, usize),
    /// Made for a blocked call served later or a dry run.
    Made(Vec<OwnedString>),
}

impl Session {
    /// The session of the command running in `ctx`, whose context flags
    /// are `flags` ([`Session::context_flags`]: every command's entry
    /// reads them once, for the migration guard and the session), whose
    /// arguments Redis passed as `argv` (`argc` of them, the command's name
    /// first), within the client's whole call `call`/`call_len` (a
    /// subcommand's container name first).
    pub fn for_command(
        ctx: Ctx,
        flags: ContextFlags,
        argv: *mut *mut raw::RedisModuleString,
        argc: usize,
        call: *mut *mut raw::RedisModuleString,
        call_len: usize,
    ) -> Self {
        Self {
            ctx,
            caller: current_caller(ctx, flags),
            start_flags: Cell::new(Some(flags)),
            argv,
            argc,
            command: CommandWords::Client(call, call_len),
            dry_run: false,
            opened: Cell::new(false),
            refused: std::cell::RefCell::new(None),
        }
    }

    fn for_caller(ctx: Ctx, caller: Caller, flags: Option<ContextFlags>) -> Self {
        Self {
            ctx,
            caller,
            start_flags: Cell::new(flags),
            argv: ptr::null_mut(),
            argc: 0,
            command: CommandWords::None,
            dry_run: false,
            opened: Cell::new(false),
            refused: std::cell::RefCell::new(None),
        }
    }

    /// The Redis string of argument `index` (0: the first after the
    /// command's name), which Redis keeps for the whole command.
    pub fn argument(&self, index: usize) -> Option<*mut raw::RedisModuleString> {
        if self.argv.is_null() {
            return None;
        }
        // SAFETY: the command's `argc` arguments at `argv` (not null here), which the server keeps
        // for the whole command.
        let all = unsafe { std::slice::from_raw_parts(self.argv, self.argc) };
        all.get(index.checked_add(1)?).copied()
    }

    /// The context flags of `ctx`, now.
    #[inline]
    pub fn context_flags(ctx: Ctx) -> ContextFlags {
        ContextFlags::of(ctx)
    }

    /// A session of the server itself (a module timer): no ACL user, as
    /// for the replication link; the module's own housekeeping.
    pub fn internal(ctx: Ctx) -> Self {
        Self::for_caller(ctx, Caller::Server, None)
    }

    /// A session in `ctx` (a timer's) acting for the ACL user `name`, as
    /// if that user ran the call `command` (its name words and arguments:
    /// what the ACL's command check reads); `None`: the server itself (no
    /// checks). Refused when the user no longer exists.
    pub fn acting_as(ctx: Ctx, name: Option<&[u8]>, command: &[&[u8]]) -> Result<Self, CommandError> {
        let Some(name) = name else {
            return Ok(Self::internal(ctx));
        };
        let Some(caller) = caller_named(ctx, name) else {
            return Err(CommandError::coded(
                "NOPERM",
                format_args!("the user '{}' of this blocked call no longer exists", String::from_utf8_lossy(name)),
            ));
        };
        let mut session = Self::for_caller(ctx, caller, None);
        session.command = CommandWords::Made(command.iter().map(|word| OwnedString::new(word)).collect());
        Ok(session)
    }

    /// A dry run of the call `command` as user `name`: every key check the
    /// call would make, as `name` would, with no `ACL LOG` entry; the
    /// first key it would open ends it ([`dry_run_complete`](super::reply::dry_run_complete)).
    pub fn dry_run_as(ctx: Ctx, name: &[u8], command: &[&[u8]]) -> Result<Self, CommandError> {
        let mut session = Self::acting_as(ctx, Some(name), command)?;
        session.dry_run = true;
        Ok(session)
    }

    /// The command's name as the client sent it (a blocked call keeps it
    /// for the ACL check of its serving later); `None` for a server session.
    pub fn command_name(&self) -> Option<Vec<u8>> {
        let words = self.command_words();
        let first = words.first()?;
        Some(super::string::bytes_of(*first).to_vec())
    }

    /// The key or channel the last refusal named (`key` or `channel`, and
    /// the name).
    pub fn refused_object(&self) -> Option<(Vec<u8>, &'static str)> {
        self.refused.borrow().clone()
    }

    /// May the caller run the call `words` (its command and subcommand
    /// names, then arguments), by Redis's own command check? Refused with
    /// `NOPERM` (and an `ACL LOG` entry, as Redis logs) when not.
    pub fn require_command(&self, words: &[&[u8]], full_name: &str) -> Result<(), CommandError> {
        let user = match &self.caller {
            Caller::Server => return Ok(()),
            Caller::Simple { user, .. } | Caller::Selectors { user, .. } | Caller::Refused { user, .. } => *user,
        };
        let strings: Vec<OwnedString> = words.iter().map(|word| OwnedString::new(word)).collect();
        let argv: Vec<*mut raw::RedisModuleString> = strings.iter().map(OwnedString::as_ptr).collect();
        if !user.is_null() && acl::allows_command(user, &argv) {
            return Ok(());
        }
        if !user.is_null() {
            let object = OwnedString::new(full_name.as_bytes());
            let reason = raw::RedisModuleACLLogEntryReason_REDISMODULE_ACL_LOG_CMD;
            // SAFETY: `self.ctx` is live, `user` a live module user (not null here) and `object` a
            // live string.
            unsafe { api!(RedisModule_ACLAddLogEntry)(self.ctx.raw(), user, object.as_ptr(), reason) };
        }
        Err(CommandError::coded(
            "NOPERM",
            format_args!("this user has no permissions to run the '{full_name}' command"),
        ))
    }

    /// The raw context.
    pub fn ctx(&self) -> Ctx {
        self.ctx
    }

    /// Check that the caller may use key `name` in mode `M`; the proof
    /// opens it. `NOPERM` (logged in `ACL LOG`, as Redis logs its own
    /// refusals) when no selector that allows the command allows this key
    /// with the keys checked before.
    #[inline]
    pub fn check<M: Mode>(&self, name: impl Into<KeyName>) -> Result<Checked<M>, CommandError> {
        let name = name.into();
        self.check_key(&name, M::ACL_FLAGS)?;
        Ok(Checked { name, mode: PhantomData })
    }

    /// [`Session::check`] of several keys in one mode.
    pub fn check_all<M: Mode, const N: usize>(
        &self,
        names: [impl Into<KeyName>; N],
    ) -> Result<[Checked<M>; N], CommandError> {
        let names = names.map(Into::into);
        for name in &names {
            self.check_key(name, M::ACL_FLAGS)?;
        }
        Ok(names.map(|name| Checked { name, mode: PhantomData }))
    }

    /// [`EveryKey`], if the caller may use every key.
    pub fn every_key(&self) -> Option<EveryKey> {
        matches!(self.caller, Caller::Server | Caller::Simple { all_keys: true, .. }).then_some(EveryKey(()))
    }

    /// Check that the caller may publish to `channel`.
    pub fn check_publish(&self, channel: &[u8]) -> Result<CheckedChannel, CommandError> {
        let name = OwnedString::new(channel);
        self.check_object(&name, Object::Channel)?;
        Ok(CheckedChannel { name })
    }

    #[inline]
    fn check_key(&self, key: &OwnedString, flags: c_int) -> Result<(), CommandError> {
        // The common case first: a caller that may access every key (its
        // checks are nothing to the server, but a check after an open is
        // still a bug).
        if matches!(self.caller, Caller::Simple { all_keys: true, .. }) && !self.opened.get() {
            return Ok(());
        }
        self.check_object(key, Object::Key(flags))
    }

    fn check_object(&self, object: &OwnedString, kind: Object) -> Result<(), CommandError> {
        if matches!(self.caller, Caller::Server) {
            return Ok(());
        }
        if self.opened.get() {
            return Err(CommandError::err(format_args!(
                "internal error: the {} '{}' was checked after a key was opened; please report this as a dreamtown bug",
                kind.word(),
                String::from_utf8_lossy(object.as_bytes())
            )));
        }
        match &self.caller {
            Caller::Server => Ok(()),
            Caller::Simple { all_keys: true, .. } if matches!(kind, Object::Key(_)) => Ok(()),
            Caller::Simple { all_channels: true, .. } if matches!(kind, Object::Channel) => Ok(()),
            Caller::Simple { user, .. } => match kind.allowed_by(*user, object) {
                true => Ok(()),
                false => Err(self.refuse(*user, object, kind, "")),
            },
            Caller::Selectors { user, probes, viable, .. } => {
                let Shape::Selectors(probes) = probes.as_ref() else {
                    return Err(self.refuse(*user, object, kind, ""));
                };
                let among = match viable.get() {
                    Some(among) => among,
                    None => {
                        let words = self.command_words();
                        acl::narrow(probes, acl::all(probes), |probe| acl::allows_command(probe, &words))
                    }
                };
                let kept = acl::narrow(probes, among, |probe| kind.allowed_by(probe, object));
                viable.set(Some(kept));
                if kept != 0 {
                    return Ok(());
                }
                let elsewhere = acl::narrow(probes, acl::all(probes), |probe| kind.allowed_by(probe, object)) != 0;
                let why = match elsewhere {
                    true => " (with this command: no one selector of the user allows the command and every key and channel it touches)",
                    false => "",
                };
                Err(self.refuse(*user, object, kind, why))
            }
            Caller::Refused { user, why, .. } => {
                Err(self.refuse(*user, object, kind, &format!(" (dreamtown refuses what it cannot check: {why})")))
            }
        }
    }

    /// The whole call's words, for the ACL's command check.
    fn command_words(&self) -> Vec<*mut raw::RedisModuleString> {
        match &self.command {
            CommandWords::None => Vec::new(),
            CommandWords::Client(argv, argc) if !argv.is_null() => {
                // SAFETY: Redis keeps the client's argv for the whole command.
                unsafe { std::slice::from_raw_parts(*argv, *argc) }.to_vec()
            }
            CommandWords::Client(..) => Vec::new(),
            CommandWords::Made(words) => words.iter().map(OwnedString::as_ptr).collect(),
        }
    }

    /// A key is about to open: from now on nothing may be checked; a dry
    /// run ends here.
    fn opening(&self) -> Result<(), CommandError> {
        if self.dry_run {
            return Err(super::reply::dry_run_complete());
        }
        self.opened.set(true);
        Ok(())
    }

    /// Log a refusal in `ACL LOG` (as Redis does for its own commands;
    /// not in a dry run, as `ACL DRYRUN` logs nothing) and make the
    /// `NOPERM` reply naming the refused `object`.
    fn refuse(&self, user: *mut raw::RedisModuleUser, object: &OwnedString, kind: Object, why: &str) -> CommandError {
        self.refused.replace(Some((object.as_bytes().to_vec(), kind.word())));
        if !self.dry_run && !user.is_null() {
            let reason = match kind {
                Object::Key(_) => raw::RedisModuleACLLogEntryReason_REDISMODULE_ACL_LOG_KEY,
                Object::Channel => raw::RedisModuleACLLogEntryReason_REDISMODULE_ACL_LOG_CHANNEL,
            };
            // SAFETY: as above.
            unsafe { api!(RedisModule_ACLAddLogEntry)(self.ctx.raw(), user, object.as_ptr(), reason) };
        }
        CommandError::coded(
            "NOPERM",
            format_args!(
                "this user has no permissions to access the {} '{}'{why}",
                kind.word(),
                String::from_utf8_lossy(object.as_bytes())
            ),
        )
    }

    /// Is the server running as a cluster node?
    pub fn in_cluster(&self) -> bool {
        self.start_flags().in_cluster()
    }

    /// The context flags.
    pub fn flags(&self) -> ContextFlags {
        Self::context_flags(self.ctx)
    }

    /// The context flags as the command found them (read once): only for
    /// flags that stay the same while it runs.
    #[inline]
    fn start_flags(&self) -> ContextFlags {
        match self.start_flags.get() {
            Some(flags) => flags,
            None => {
                let flags = self.flags();
                self.start_flags.set(Some(flags));
                flags
            }
        }
    }

    /// Is the server a master (as the command found it)?
    #[inline]
    pub fn is_master(&self) -> bool {
        self.start_flags().is_master()
    }

    /// May this call block the client (not in MULTI, Lua or a no-block context)?
    pub fn may_block(&self) -> bool {
        !self.start_flags().forbids_blocking()
    }

    /// The server clock in unix milliseconds.
    pub fn now_ms(&self) -> i64 {
        super::ctx::milliseconds()
    }

    /// The server clock in unix seconds.
    pub fn now_secs(&self) -> i64 {
        self.now_ms().div_euclid(1000)
    }
}

/// What a check is about.
#[derive(Clone, Copy)]
enum Object {
    /// A key, with its key-spec access flags.
    Key(c_int),
    /// A channel published to.
    Channel,
}

impl Object {
    fn word(self) -> &'static str {
        match self {
            Object::Key(_) => "key",
            Object::Channel => "channel",
        }
    }

    fn allowed_by(self, user: *mut raw::RedisModuleUser, object: &OwnedString) -> bool {
        match self {
            Object::Key(flags) => acl::allows_key(user, object, flags),
            Object::Channel => acl::allows_publish(user, object),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let (user, owned) = match &self.caller {
            Caller::Server => return,
            Caller::Simple { user, owned, .. }
            | Caller::Selectors { user, owned, .. }
            | Caller::Refused { user, owned, .. } => (*user, *owned),
        };
        if owned && !user.is_null() {
            // SAFETY: a user this session looked up and owns (`owned`), freed once.
            unsafe { api!(RedisModule_FreeModuleUser)(user) };
        }
    }
}

/// The module's handle on the ACL user `default`, looked up once. Redis
/// never frees or replaces that user object (it cannot be deleted, and
/// `ACL LOAD` copies the new rules into the same object: acl.c "This
/// pointer must never change"), and the handle is only a pointer to it, so
/// it stays valid, with the user's current rules, for the server's life
/// (kept per load: the handle is the module's, freed at unload).
static DEFAULT_USER: PerLoad<DefaultUser> = PerLoad::new();

/// The kept handle on `default` (null until first looked up): a part of
/// the module state, freed with it.
struct DefaultUser(Cell<*mut raw::RedisModuleUser>);

impl Default for DefaultUser {
    fn default() -> Self {
        DefaultUser(Cell::new(ptr::null_mut()))
    }
}

impl Drop for DefaultUser {
    fn drop(&mut self) {
        let user = self.0.replace(ptr::null_mut());
        if !user.is_null() {
            // SAFETY: the kept `default` user, taken out of its cell,
            // freed once.
            unsafe { api!(RedisModule_FreeModuleUser)(user) };
        }
    }
}

/// Whose permissions the calling client's command runs with (its context
/// `flags` just read): the server itself for the replication link and AOF
/// loading; else the client's ACL user, refused (fail closed) when the
/// module cannot look it up (a user of another module's own).
fn current_caller(ctx: Ctx, flags: ContextFlags) -> Caller {
    if flags.replicated() || flags.loading() {
        return Caller::Server;
    }
    // SAFETY: `ctx` is the running command's live context; the name is a new string `OwnedString`
    // frees.
    let Some(name) = OwnedString::from_raw(unsafe { api!(RedisModule_GetCurrentUserName)(ctx.raw()) }) else {
        return Caller::Server;
    };
    caller_named(ctx, name.as_bytes()).unwrap_or_else(|| Caller::Refused {
        user: ptr::null_mut(),
        owned: false,
        why: format!("the client's user '{}' is not an ACL user", String::from_utf8_lossy(name.as_bytes())),
    })
}

/// The name of the ACL user of the client running in `ctx`, if any.
pub fn current_user_name(ctx: Ctx) -> Option<Vec<u8>> {
    // SAFETY: `ctx` is the running callback's live context; the name is a
    // new string the caller owns (freed by `OwnedString`'s drop).
    OwnedString::from_raw(unsafe { api!(RedisModule_GetCurrentUserName)(ctx.raw()) }).map(|n| n.as_bytes().to_vec())
}

/// The caller for ACL user `name`, with its selectors' shape; `None` when
/// the server has no such user.
fn caller_named(ctx: Ctx, name: &[u8]) -> Option<Caller> {
    let (user, owned) = lookup_user(name)?;
    if let Some((all_keys, all_channels)) = acl::default_one_selector(name) {
        return Some(Caller::Simple { user, owned, all_keys, all_channels });
    }
    let shape = acl::shape(ctx, name);
    Some(match shape.as_ref() {
        Shape::OneSelector { all_keys, all_channels } => {
            Caller::Simple { user, owned, all_keys: *all_keys, all_channels: *all_channels }
        }
        Shape::Unreadable(why) => Caller::Refused { user, owned, why: why.clone() },
        Shape::Selectors(_) => Caller::Selectors { user, owned, probes: shape, viable: Cell::new(None) },
    })
}

/// The module's handle on ACL user `name`, and whether the caller frees
/// it (`default`'s is kept: [`DEFAULT_USER`]).
fn lookup_user(name: &[u8]) -> Option<(*mut raw::RedisModuleUser, bool)> {
    if name == b"default" {
        let cached = DEFAULT_USER.with(|kept| kept.0.get());
        if !cached.is_null() {
            return Some((cached, false));
        }
    }
    let string = OwnedString::new(name);
    // SAFETY: `string` is live; the user (or null) is freed by its owner.
    let user = unsafe { api!(RedisModule_GetModuleUserFromUserName)(string.as_ptr()) };
    if user.is_null() {
        return None;
    }
    if name == b"default" {
        DEFAULT_USER.with(|kept| kept.0.set(user));
        return Some((user, false));
    }
    Some((user, true))
}
