//! Redis's own ACL rule, kept for the module's commands: a command runs
//! only if **one** selector of the calling user allows the command and
//! every key and channel it touches, each with the access it needs.
//!
//! Why the module has to do this itself. Every tenant command declares its
//! tenant as a `NOT_KEY` key spec (so clusters route it and ACL does not
//! match the bare name against key patterns), so Redis checks only that
//! some selector allows the command; the module checks the real keys. The
//! module API's key and channel checks (`RedisModule_ACLCheckKeyPermissions`
//! and `...ChannelPermissions`) accept a key if *any* selector allows it,
//! whatever the command: with `~tt:{a}:* +town.send (~tt:{b}:* +town.len)`
//! they would let `TOWN.SEND b` write to tenant `b`, which Redis refuses
//! for `LPUSH` in the same configuration.
//!
//! How. A user with only its root selector is checked as before: the
//! any-selector check is then exact. For a user with selectors, the module
//! reads them once (`ACL GETUSER`) and builds one *probe*, a module user
//! (`RedisModule_CreateModuleUser`, never in `ACL LIST`, never able to
//! authenticate) holding exactly one selector's rules; a command then keeps
//! the set of selectors that allow it (`RedisModule_ACLCheckCommandPermissions`
//! on each probe) and narrows it with every key and channel it checks: the
//! first one no remaining selector allows is refused. That is Redis's rule,
//! with Redis's own pattern matching, per selector.
//!
//! What is read is cached per user name and forgotten when the ACL may have
//! changed: the module's command filter ([`rules_changed`]) sees every
//! `ACL SETUSER`, `DELUSER` and `LOAD` (they cannot run in scripts) and
//! every `EXEC` that may apply one. Where the module cannot read or rebuild
//! a user's selectors, it refuses the user's key access (fail closed) with
//! a message that names the rule.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::CString;
use std::os::raw::c_int;
use std::ptr;
use std::rc::Rc;

use redis_module::raw;

use super::api::api;
use super::ctx::Ctx;
use super::module_state::PerLoad;
use super::string::OwnedString;

/// How many selectors (the root one included) a user may have for the
/// module to evaluate them; beyond, the module refuses (fail closed).
pub const MAX_SELECTORS: usize = 64;

/// What the module has read of the ACL rules: a part of the module state
/// (its probes freed with it).
#[derive(Default)]
struct State {
    /// Bumped whenever the ACL rules may have changed.
    generation: Cell<u64>,
    /// For user `default`, when last read: `generation + 1` in the upper
    /// bits and its [`Shape::OneSelector`] flags in the lowest two (0: not
    /// known, or it has selectors): the common case is answered with two
    /// loads.
    default_one_selector: Cell<u64>,
    cache: RefCell<Cache>,
}

/// User name → (generation read at, shape).
type Cache = HashMap<Vec<u8>, (u64, Rc<Shape>)>;

static STATE: PerLoad<State> = PerLoad::new();

/// What is known of user `default` since the ACL last changed, when it has
/// only its root selector: `(all_keys, all_channels)`. (Every call of the
/// default user asks.)
#[inline]
pub fn default_one_selector(name: &[u8]) -> Option<(bool, bool)> {
    if name != b"default" {
        return None;
    }
    let (known, generation) =
        STATE.with(|state| (state.default_one_selector.get(), state.generation.get().wrapping_add(1)));
    (known >> 2 == generation & (u64::MAX >> 2)).then_some((known & 1 != 0, known & 2 != 0))
}

/// The ACL rules may have changed (an `ACL SETUSER`/`DELUSER`/`LOAD`, or an
/// `EXEC` that may apply one): read every user's selectors again.
pub fn rules_changed() {
    STATE.with(|state| state.generation.set(state.generation.get().wrapping_add(1)));
}

/// What the module knows of one user's selectors.
pub enum Shape {
    /// Only the root selector: the server's any-selector key and channel
    /// checks are exact; with `all_keys` (`~*`) and `all_channels` (`&*`)
    /// every key, every channel passes without asking.
    OneSelector { all_keys: bool, all_channels: bool },
    /// Several: one probe per selector, the root one first.
    Selectors(Vec<Probe>),
    /// The module could not read or rebuild them: refuse (fail closed).
    Unreadable(String),
}

/// A module user holding one selector's rules (see the module doc).
pub struct Probe(*mut raw::RedisModuleUser);

impl Probe {
    /// The probe's user handle, for the ACL checks.
    pub fn user(&self) -> *mut raw::RedisModuleUser {
        self.0
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: made by RedisModule_CreateModuleUser, freed once here;
            // no client is authenticated with it.
            unsafe { api!(RedisModule_FreeModuleUser)(self.0) };
        }
    }
}

/// The shape of user `name`'s selectors, read with `ctx` when not known
/// since the ACL last changed.
pub fn shape(ctx: Ctx, name: &[u8]) -> Rc<Shape> {
    let (generation, cached) = STATE.with(|state| {
        let generation = state.generation.get();
        let cache = state.cache.borrow();
        let cached = cache.get(name).filter(|(at, _)| *at == generation).map(|(_, shape)| Rc::clone(shape));
        (generation, cached)
    });
    if let Some(shape) = cached {
        return shape;
    }
    // Read outside the state's borrow: reading calls the server.
    let shape = Rc::new(read_shape(ctx, name));
    STATE.with(|state| {
        if let (b"default", Shape::OneSelector { all_keys, all_channels }) = (name, shape.as_ref()) {
            let known = (generation.wrapping_add(1) << 2) | u64::from(*all_keys) | (u64::from(*all_channels) << 1);
            state.default_one_selector.set(known);
        }
        let mut cache = state.cache.borrow_mut();
        // A user the server no longer has leaves no probes behind: the map
        // is bounded by the users that ran a module command since the ACL
        // changed.
        if cache.len() > 4096 {
            cache.retain(|_, (at, _)| *at == generation);
        }
        cache.insert(name.to_vec(), (generation, Rc::clone(&shape)));
    });
    shape
}

/// Read user `name`'s selectors (`ACL GETUSER`) and build the probes.
fn read_shape(ctx: Ctx, name: &[u8]) -> Shape {
    let Some(user) = getuser(ctx, name) else {
        return Shape::Unreadable("ACL GETUSER did not describe the user".into());
    };
    if user.selectors.is_empty() {
        // `allkeys`/`~*` and `allchannels`/`&*` are described as these.
        return Shape::OneSelector { all_keys: user.root.keys == "~*", all_channels: user.root.channels == "&*" };
    }
    if user.selectors.len() + 1 > MAX_SELECTORS {
        return Shape::Unreadable(format!("the user has more than {MAX_SELECTORS} selectors"));
    }
    let mut probes = Vec::with_capacity(user.selectors.len() + 1);
    for selector in std::iter::once(&user.root).chain(&user.selectors) {
        match probe(selector) {
            Ok(probe) => probes.push(probe),
            Err(why) => return Shape::Unreadable(why),
        }
    }
    Shape::Selectors(probes)
}

/// One selector's rules as `ACL GETUSER` describes them.
#[derive(Default, Debug)]
struct Selector {
    commands: String,
    keys: String,
    channels: String,
}

/// A user's root selector and its other selectors.
#[derive(Default, Debug)]
struct User {
    root: Selector,
    selectors: Vec<Selector>,
}

/// A probe holding exactly `selector`'s rules.
fn probe(selector: &Selector) -> Result<Probe, String> {
    let name = CString::new("dreamtown-acl-probe").map_err(|_| "probe name".to_string())?;
    // SAFETY: a plain call with a valid C string; the user is freed by Probe's drop.
    let user = unsafe { api!(RedisModule_CreateModuleUser)(name.as_ptr()) };
    if user.is_null() {
        return Err("could not create a probe user".into());
    }
    let probe = Probe(user);
    // `reset` grants every channel where acl-pubsub-default says so: reset
    // them again before the selector's own.
    let rules = format!("reset resetchannels {} {} {}", selector.keys, selector.channels, selector.commands);
    let rules = CString::new(rules).map_err(|_| "a selector's rules hold a NUL byte".to_string())?;
    // SAFETY: the user handle is valid; no ctx (no automatic memory) and no error string asked for.
    let status =
        unsafe { api!(RedisModule_SetModuleUserACLString)(ptr::null_mut(), probe.0, rules.as_ptr(), ptr::null_mut()) };
    if status != raw::REDISMODULE_OK as c_int {
        return Err(format!("the selector '{}' could not be rebuilt", rules.to_string_lossy()));
    }
    Ok(probe)
}

/// `ACL GETUSER name`, read: the root selector's commands, keys and
/// channels and the other selectors'. `None` when the call fails or the
/// user does not exist.
fn getuser(ctx: Ctx, name: &[u8]) -> Option<User> {
    let name = OwnedString::new(name);
    // SAFETY: valid ctx and strings; the reply is freed below.
    let reply = unsafe {
        api!(RedisModule_Call)(ctx.raw(), c"ACL".as_ptr(), c"cs".as_ptr(), c"GETUSER".as_ptr(), name.as_ptr())
    };
    if reply.is_null() {
        return None;
    }
    let user = read_user(reply);
    // SAFETY: the reply came from RedisModule_Call and is freed once.
    unsafe { api!(RedisModule_FreeCallReply)(reply) };
    user
}

/// The reply of `ACL GETUSER`: alternating field names and values (a map
/// where the call replies RESP3).
fn read_user(reply: *mut raw::RedisModuleCallReply) -> Option<User> {
    let mut user = User::default();
    for (field, value) in pairs(reply)? {
        match field.as_slice() {
            b"commands" => user.root.commands = text(value)?,
            b"keys" => user.root.keys = text(value)?,
            b"channels" => user.root.channels = text(value)?,
            b"selectors" => {
                for index in 0..length(value) {
                    let selector = element(value, index)?;
                    let mut read = Selector::default();
                    for (field, value) in pairs(selector)? {
                        match field.as_slice() {
                            b"commands" => read.commands = text(value)?,
                            b"keys" => read.keys = text(value)?,
                            b"channels" => read.channels = text(value)?,
                            _ => {}
                        }
                    }
                    user.selectors.push(read);
                }
            }
            _ => {}
        }
    }
    Some(user)
}

fn reply_type(reply: *mut raw::RedisModuleCallReply) -> c_int {
    // SAFETY: a reply of RedisModule_Call, or an element of one.
    unsafe { api!(RedisModule_CallReplyType)(reply) }
}

fn length(reply: *mut raw::RedisModuleCallReply) -> usize {
    // SAFETY: as reply_type.
    unsafe { api!(RedisModule_CallReplyLength)(reply) }
}

fn element(reply: *mut raw::RedisModuleCallReply, index: usize) -> Option<*mut raw::RedisModuleCallReply> {
    // SAFETY: as reply_type; the index is checked by the server (NULL past the end).
    let element = unsafe { api!(RedisModule_CallReplyArrayElement)(reply, index) };
    (!element.is_null()).then_some(element)
}

/// The (name, value) pairs of a flat array reply.
fn pairs(reply: *mut raw::RedisModuleCallReply) -> Option<Vec<(Vec<u8>, *mut raw::RedisModuleCallReply)>> {
    if reply_type(reply) != raw::REDISMODULE_REPLY_ARRAY as c_int {
        return None;
    }
    let count = length(reply);
    let mut pairs = Vec::with_capacity(count / 2);
    for index in (0..count).step_by(2) {
        let name = text(element(reply, index)?)?;
        pairs.push((name.into_bytes(), element(reply, index + 1)?));
    }
    Some(pairs)
}

/// A string reply's text (a null reply: empty).
fn text(reply: *mut raw::RedisModuleCallReply) -> Option<String> {
    let kind = reply_type(reply);
    if kind == raw::REDISMODULE_REPLY_NULL as c_int {
        return Some(String::new());
    }
    if kind != raw::REDISMODULE_REPLY_STRING as c_int {
        return None;
    }
    let mut len = 0usize;
    // SAFETY: a string reply; the bytes live as long as the reply.
    let bytes = unsafe { api!(RedisModule_CallReplyStringPtr)(reply, &mut len) };
    if bytes.is_null() {
        return Some(String::new());
    }
    // SAFETY: `len` bytes at `bytes`, owned by the reply, copied here.
    let bytes = unsafe { std::slice::from_raw_parts(bytes.cast::<u8>(), len) };
    String::from_utf8(bytes.to_vec()).ok()
}

/// Does ACL user `name` exist, and may it run the call `words` (command
/// and subcommand names, then arguments) by Redis's own command check?
/// `None`: no such user.
pub fn user_may_run(name: &[u8], words: &[&[u8]]) -> Option<bool> {
    let name = OwnedString::new(name);
    // SAFETY: a valid string; the handle is freed below.
    let user = unsafe { api!(RedisModule_GetModuleUserFromUserName)(name.as_ptr()) };
    if user.is_null() {
        return None;
    }
    let strings: Vec<OwnedString> = words.iter().map(|word| OwnedString::new(word)).collect();
    let argv: Vec<*mut raw::RedisModuleString> = strings.iter().map(OwnedString::as_ptr).collect();
    let allowed = allows_command(user, &argv);
    // SAFETY: looked up above, freed once.
    unsafe { api!(RedisModule_FreeModuleUser)(user) };
    Some(allowed)
}

/// A selector set: bit `i` for probe `i`.
pub type Selectors = u64;

/// Every selector of `probes`.
pub fn all(probes: &[Probe]) -> Selectors {
    match probes.len() {
        0 => 0,
        n if n >= 64 => u64::MAX,
        n => (1u64 << n) - 1,
    }
}

/// The selectors among `among` whose probe passes `allows`.
pub fn narrow(probes: &[Probe], among: Selectors, allows: impl Fn(*mut raw::RedisModuleUser) -> bool) -> Selectors {
    let mut kept = 0;
    for (index, probe) in probes.iter().enumerate().take(64) {
        let bit = 1u64 << index;
        if among & bit != 0 && allows(probe.user()) {
            kept |= bit;
        }
    }
    kept
}

/// Does `user` (a probe, or a one-selector user) allow the command `argv`
/// (its name, a subcommand's, then arguments: only the name and the
/// first arguments matter, as for `+cmd|arg` rules)?
pub fn allows_command(user: *mut raw::RedisModuleUser, argv: &[*mut raw::RedisModuleString]) -> bool {
    let Ok(argc) = c_int::try_from(argv.len()) else { return false };
    // SAFETY: `argv` holds `argc` valid strings; the server only reads them.
    let status = unsafe { api!(RedisModule_ACLCheckCommandPermissions)(user, argv.as_ptr().cast_mut(), argc) };
    status == raw::REDISMODULE_OK as c_int
}

/// Does `user` allow `key` with the key-spec access `flags`?
pub fn allows_key(user: *mut raw::RedisModuleUser, key: &OwnedString, flags: c_int) -> bool {
    // SAFETY: valid user and string.
    unsafe { api!(RedisModule_ACLCheckKeyPermissions)(user, key.as_ptr(), flags) == raw::REDISMODULE_OK as c_int }
}

/// Does `user` allow publishing to `channel`?
pub fn allows_publish(user: *mut raw::RedisModuleUser, channel: &OwnedString) -> bool {
    // SAFETY: valid user and string.
    unsafe {
        api!(RedisModule_ACLCheckChannelPermissions)(
            user,
            channel.as_ptr(),
            raw::REDISMODULE_CMD_CHANNEL_PUBLISH as c_int,
        ) == raw::REDISMODULE_OK as c_int
    }
}
