//! One command's view of the server: the caller's ACL user, key opening
//! with permission checks, context flags and the clock.
//!
//! Tenant commands declare their first argument as a `NOT_KEY` key spec, so
//! Redis routes them in a cluster but does not match the bare tenant name
//! against ACL key patterns; the module checks every key it opens instead,
//! before writing anything.

use std::cell::Cell;
use std::os::raw::c_int;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use redis_module::raw;

use super::api::api;
use super::key::Key;
use super::reply::CommandError;
use super::string::{KeyName, OwnedString};

/// How a command uses a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read only.
    Read,
    /// Read and write.
    Write,
}

/// The per-command context.
pub struct Session {
    ctx: *mut raw::RedisModuleCtx,
    user: *mut raw::RedisModuleUser,
    /// Whether `user` is this session's to free (not the shared default user).
    owns_user: bool,
    /// The context flags as the command found them, once read: for the
    /// flags that cannot change while it runs (MULTI, Lua, no-block,
    /// cluster). `OOM` can, and is always read afresh.
    start_flags: Cell<Option<u32>>,
    /// The command's arguments as Redis passed them (its name first), or
    /// none (a timer's session): for a command that hands an argument on
    /// as the string it is instead of copying it into a new one.
    argv: *mut *mut raw::RedisModuleString,
    argc: usize,
}

impl Session {
    /// The session of the command running in `ctx`, whose context flags
    /// are `flags` ([`Session::context_flags`]): every command's entry
    /// reads them once, for the migration guard and the session.
    pub fn with_flags(ctx: *mut raw::RedisModuleCtx, flags: u32) -> Self {
        let (user, owns_user) = current_user(ctx, flags);
        Self { ctx, user, owns_user, start_flags: Cell::new(Some(flags)), argv: ptr::null_mut(), argc: 0 }
    }

    /// This session, for the command whose arguments Redis passed as
    /// `argv` (`argc` of them, the command's name first).
    pub fn with_argv(mut self, argv: *mut *mut raw::RedisModuleString, argc: usize) -> Self {
        self.argv = argv;
        self.argc = argc;
        self
    }

    /// The Redis string of argument `index` (0: the first after the
    /// command's name), which Redis keeps for the whole command.
    pub fn argument(&self, index: usize) -> Option<*mut raw::RedisModuleString> {
        if self.argv.is_null() {
            return None;
        }
        let all = unsafe { std::slice::from_raw_parts(self.argv, self.argc) };
        all.get(index.checked_add(1)?).copied()
    }

    /// The context flags of `ctx`, now.
    pub fn context_flags(ctx: *mut raw::RedisModuleCtx) -> u32 {
        unsafe { api!(RedisModule_GetContextFlags)(ctx) as u32 }
    }

    /// A session of the server itself (a module timer): no ACL user, as
    /// for the replication link; the module's own housekeeping.
    pub fn internal(ctx: *mut raw::RedisModuleCtx) -> Self {
        Self::for_user(ctx, ptr::null_mut(), false)
    }

    /// A session in `ctx` acting for `user` (freed on drop if `owns_user`),
    /// its context flags read when first needed.
    fn for_user(ctx: *mut raw::RedisModuleCtx, user: *mut raw::RedisModuleUser, owns_user: bool) -> Self {
        Self { ctx, user, owns_user, start_flags: Cell::new(None), argv: ptr::null_mut(), argc: 0 }
    }

    /// A session in `ctx` (a timer's) acting for the ACL user `name`, as
    /// if that user ran the command; `None`: the server itself (no checks).
    /// Refused when the user no longer exists.
    pub fn acting_as(ctx: *mut raw::RedisModuleCtx, name: Option<&[u8]>) -> Result<Self, CommandError> {
        let Some(name) = name else {
            return Ok(Self::internal(ctx));
        };
        if name == b"default" {
            let cached = DEFAULT_USER.load(Ordering::Relaxed);
            if !cached.is_null() {
                return Ok(Self::for_user(ctx, cached, false));
            }
        }
        let string = OwnedString::new(name);
        let user = unsafe { api!(RedisModule_GetModuleUserFromUserName)(string.as_ptr()) };
        if user.is_null() {
            return Err(CommandError::coded(
                "NOPERM",
                format_args!("the user '{}' of this blocked call no longer exists", String::from_utf8_lossy(name)),
            ));
        }
        if name == b"default" {
            DEFAULT_USER.store(user, Ordering::Relaxed);
            return Ok(Self::for_user(ctx, user, false));
        }
        Ok(Self::for_user(ctx, user, true))
    }

    /// The raw context.
    pub fn ctx(&self) -> *mut raw::RedisModuleCtx {
        self.ctx
    }

    /// Refuse with `NOPERM` unless the caller may use `name` as `access`.
    pub fn check(&self, name: &[u8], access: Access) -> Result<(), CommandError> {
        if self.user.is_null() {
            return Ok(());
        }
        self.check_name(&OwnedString::new(name), access)
    }

    /// [`Session::check`] for a name already made as a Redis string.
    pub fn check_name(&self, key: &OwnedString, access: Access) -> Result<(), CommandError> {
        if self.user.is_null() {
            return Ok(());
        }
        let flags = match access {
            Access::Read => raw::REDISMODULE_CMD_KEY_ACCESS,
            Access::Write => raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE,
        };
        let verdict = unsafe { api!(RedisModule_ACLCheckKeyPermissions)(self.user, key.as_ptr(), flags as c_int) };
        if verdict == raw::REDISMODULE_OK as c_int {
            return Ok(());
        }
        Err(self.refuse(key, raw::RedisModuleACLLogEntryReason_REDISMODULE_ACL_LOG_KEY, "key"))
    }

    /// Refuse with `NOPERM` unless the caller may publish to `channel`.
    pub fn check_publish(&self, channel: &[u8]) -> Result<(), CommandError> {
        if self.user.is_null() {
            return Ok(());
        }
        let name = OwnedString::new(channel);
        let verdict = unsafe {
            api!(RedisModule_ACLCheckChannelPermissions)(
                self.user,
                name.as_ptr(),
                raw::REDISMODULE_CMD_CHANNEL_PUBLISH as c_int,
            )
        };
        if verdict == raw::REDISMODULE_OK as c_int {
            return Ok(());
        }
        Err(self.refuse(&name, raw::RedisModuleACLLogEntryReason_REDISMODULE_ACL_LOG_CHANNEL, "channel"))
    }

    /// Log a refusal in `ACL LOG` (as Redis does for its own commands) and
    /// make the `NOPERM` reply naming the refused `what`.
    fn refuse(&self, object: &OwnedString, reason: raw::RedisModuleACLLogEntryReason, what: &str) -> CommandError {
        unsafe { api!(RedisModule_ACLAddLogEntry)(self.ctx, self.user, object.as_ptr(), reason) };
        CommandError::coded(
            "NOPERM",
            format_args!(
                "this user has no permissions to access the {what} '{}'",
                String::from_utf8_lossy(object.as_bytes())
            ),
        )
    }

    /// Is the server running as a cluster node?
    pub fn in_cluster(&self) -> bool {
        self.start_flags() & raw::REDISMODULE_CTX_FLAGS_CLUSTER != 0
    }

    /// Check ACL for every key in `names`; the names as Redis strings, for
    /// [`Session::open_checked`] (made once for both: this runs for every
    /// key of every command).
    pub fn check_all<const N: usize>(
        &self,
        names: [&[u8]; N],
        access: Access,
    ) -> Result<[OwnedString; N], CommandError> {
        self.check_strings(names.map(OwnedString::new), access)
    }

    /// [`Session::check_all`] of names already made Redis strings.
    pub fn check_strings<T: std::borrow::Borrow<OwnedString>, const N: usize>(
        &self,
        names: [T; N],
        access: Access,
    ) -> Result<[T; N], CommandError> {
        for name in &names {
            self.check_name(name.borrow(), access)?;
        }
        Ok(names)
    }

    /// Open a key whose name passed [`Session::check_all`].
    pub fn open_checked(&self, name: impl Into<KeyName>, access: Access) -> Key {
        Key::open_name(self.ctx, name, access == Access::Write)
    }

    /// Check ACL for `name` and open it.
    pub fn open(&self, name: &[u8], access: Access) -> Result<Key, CommandError> {
        let [name] = self.check_all([name], access)?;
        Ok(self.open_checked(name, access))
    }

    /// Open a key whose permission was already checked.
    pub fn open_unchecked(&self, name: &[u8], access: Access) -> Key {
        Key::open(self.ctx, name, access == Access::Write)
    }

    /// The context flags.
    pub fn flags(&self) -> u32 {
        Self::context_flags(self.ctx)
    }

    /// The context flags as the command found them (read once): only for
    /// flags that stay the same while it runs.
    #[inline]
    fn start_flags(&self) -> u32 {
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
        self.start_flags() & raw::REDISMODULE_CTX_FLAGS_MASTER != 0
    }

    /// May this call block the client (not in MULTI, Lua or a no-block context)?
    pub fn may_block(&self) -> bool {
        let forbidding = raw::REDISMODULE_CTX_FLAGS_MULTI
            | raw::REDISMODULE_CTX_FLAGS_LUA
            | raw::REDISMODULE_CTX_FLAGS_DENY_BLOCKING;
        self.start_flags() & forbidding == 0
    }

    /// The server clock in unix milliseconds.
    pub fn now_ms(&self) -> i64 {
        unsafe { api!(RedisModule_Milliseconds)() }
    }

    /// The server clock in unix seconds.
    pub fn now_secs(&self) -> i64 {
        self.now_ms().div_euclid(1000)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.owns_user && !self.user.is_null() {
            unsafe { api!(RedisModule_FreeModuleUser)(self.user) };
        }
    }
}

/// The module's handle on the ACL user `default`, looked up once. Redis
/// never frees or replaces that user object (it cannot be deleted, and
/// `ACL LOAD` copies the new rules into the same object: acl.c "This
/// pointer must never change"), and the handle is only a pointer to it, so
/// it stays valid, with the user's current rules, for the server's life.
/// Main thread only; the atomic is the `Sync` way to keep it in a static.
static DEFAULT_USER: AtomicPtr<raw::RedisModuleUser> = AtomicPtr::new(ptr::null_mut());

/// `MODULE UNLOAD`: free the handle on `default` (the library may stay
/// mapped and a later load find it; or be unmapped and the handle lost).
pub fn unload() {
    let user = DEFAULT_USER.swap(ptr::null_mut(), Ordering::Relaxed);
    if !user.is_null() {
        unsafe { api!(RedisModule_FreeModuleUser)(user) };
    }
}

/// The ACL user of the calling client (whose context `flags` were just
/// read) and whether the session must free it; null when there is none to
/// check: the replication link and AOF loading run as the server itself.
fn current_user(ctx: *mut raw::RedisModuleCtx, flags: u32) -> (*mut raw::RedisModuleUser, bool) {
    if flags & (raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING) != 0 {
        return (ptr::null_mut(), false);
    }
    let Some(name) = OwnedString::from_raw(unsafe { api!(RedisModule_GetCurrentUserName)(ctx) }) else {
        return (ptr::null_mut(), false);
    };
    let lookup = || unsafe { api!(RedisModule_GetModuleUserFromUserName)(name.as_ptr()) };
    if name.as_bytes() != b"default" {
        return (lookup(), true);
    }
    let cached = DEFAULT_USER.load(Ordering::Relaxed);
    if !cached.is_null() {
        return (cached, false);
    }
    let user = lookup();
    DEFAULT_USER.store(user, Ordering::Relaxed);
    (user, false)
}

/// Validate a tenant name: non-empty, no `{`/`}` (they would break the hash
/// tag that keeps a tenant in one slot), UTF-8; borrowed from the argument.
pub fn tenant_str<'a>(bytes: &'a [u8], what: &str) -> Result<&'a str, CommandError> {
    if bytes.is_empty() {
        return Err(CommandError::err(format_args!("{what} must not be empty")));
    }
    if bytes.iter().any(|b| *b == b'{' || *b == b'}') {
        return Err(CommandError::err(format_args!("{what} must not contain '{{' or '}}'")));
    }
    super::args::utf8(bytes).ok_or_else(|| CommandError::err(format_args!("{what} must be valid UTF-8")))
}
