//! Command registration and the guarded entry point every command runs in.
//!
//! Each command is registered with first/last/step 0 and then described
//! through `RedisModule_SetCommandInfo`: arity, summary, complexity, the
//! argument tree (for `COMMAND DOCS`) and one key spec that marks the first
//! argument, the tenant, `NOT_KEY`. Redis then routes the command by tenant
//! in a cluster while the module checks ACL on the real keys it opens.
//!
//! Every call runs under `catch_unwind`: a bug becomes an error reply
//! instead of a panic unwinding into redis-server and aborting it.

use std::ffi::CString;
use std::os::raw::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use redis_module::raw;

use super::api::api;
use super::migration_guard;
use super::reply::{self, CommandResult};
use super::session::Session;
use super::string::bytes_of;

/// A command handler: the session and the arguments after the name.
pub type Handler = fn(&Session, &[&[u8]]) -> CommandResult;

/// The C entry point Redis calls.
pub type RawCommand =
    unsafe extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// How a command uses its tenant's keys, for the key spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TenantUse {
    /// Reads only.
    Read,
    /// Reads and writes.
    Write,
}

/// The shape of one documented argument.
#[derive(Clone, Copy, Debug)]
pub enum ArgKind {
    /// The tenant (declared through the key spec).
    Tenant,
    /// A string.
    String,
    /// An integer.
    Integer,
    /// A decimal number.
    Double,
    /// A keyword with no value.
    Token,
    /// Exactly one of the sub-arguments.
    OneOf(&'static [Arg]),
    /// A group of sub-arguments.
    Block(&'static [Arg]),
}

/// One documented argument.
#[derive(Clone, Copy, Debug)]
pub struct Arg {
    /// Name shown in docs.
    pub name: &'static str,
    /// Shape.
    pub kind: ArgKind,
    /// Keyword that introduces it, if any.
    pub token: Option<&'static str>,
    /// May be left out.
    pub optional: bool,
    /// May repeat.
    pub multiple: bool,
}

impl Arg {
    /// A required argument.
    pub const fn new(name: &'static str, kind: ArgKind) -> Self {
        Self { name, kind, token: None, optional: false, multiple: false }
    }

    /// The tenant argument.
    pub const fn tenant(name: &'static str) -> Self {
        Self::new(name, ArgKind::Tenant)
    }

    /// A required pure keyword (a choice inside a one-of).
    pub const fn keyword(token: &'static str) -> Self {
        Self {
            name: token,
            kind: ArgKind::Token,
            token: Some(token),
            optional: false,
            multiple: false,
        }
    }

    /// An optional pure keyword.
    pub const fn flag(token: &'static str) -> Self {
        Self {
            name: token,
            kind: ArgKind::Token,
            token: Some(token),
            optional: true,
            multiple: false,
        }
    }

    /// Introduced by `token`.
    pub const fn token(mut self, token: &'static str) -> Self {
        self.token = Some(token);
        self
    }

    /// May be left out.
    pub const fn optional(mut self) -> Self {
        self.optional = true;
        self
    }

    /// May repeat.
    pub const fn multiple(mut self) -> Self {
        self.multiple = true;
        self
    }
}

/// Everything Redis needs to know about one command.
pub struct CommandSpec {
    /// Command name (`DREAMS.FIRE`).
    pub name: &'static str,
    /// The C entry point (see [`entry_point!`]).
    pub entry: RawCommand,
    /// Redis command flags (`write deny-oom fast` ...).
    pub flags: &'static str,
    /// How the tenant's keys are used.
    pub tenant: TenantUse,
    /// Arity as Redis counts it (negative: at least).
    pub arity: i32,
    /// One-line summary.
    pub summary: &'static str,
    /// Time complexity.
    pub complexity: &'static str,
    /// Arguments after the name.
    pub args: &'static [Arg],
}

/// Wrap a [`Handler`] as a C entry point.
macro_rules! entry_point {
    ($handler:path) => {{
        unsafe extern "C" fn __dreamtown_entry(
            ctx: *mut redis_module::raw::RedisModuleCtx,
            argv: *mut *mut redis_module::raw::RedisModuleString,
            argc: std::os::raw::c_int,
        ) -> std::os::raw::c_int {
            $crate::module::command::dispatch(ctx, argv, argc, $handler)
        }
        __dreamtown_entry as $crate::module::command::RawCommand
    }};
}
pub(crate) use entry_point;

const BUG: &str = "internal error: the command failed and changed nothing further; please report this as a dreamtown bug";

/// Run `run` with the arguments after the command name, as bytes: up to
/// 16 in a stack array (every call reads its arguments; most have a few,
/// the longest hot form, RECORD with every option, 16). The array is
/// filled whole before use, so its size is paid on every call: 32 slots
/// cost FIRE about 100 instructions more than 16.
fn with_arguments<R>(argv: *mut *mut raw::RedisModuleString, argc: c_int, run: impl FnOnce(&[&[u8]]) -> R) -> R {
    const INLINE: usize = 16;
    let count = usize::try_from(argc).unwrap_or(0);
    if argv.is_null() || count == 0 {
        return run(&[]);
    }
    let all = unsafe { std::slice::from_raw_parts(argv, count) };
    let after_name = all.get(1..).unwrap_or_default();
    if after_name.len() <= INLINE {
        let mut inline: [&[u8]; INLINE] = [&[]; INLINE];
        for (slot, arg) in inline.iter_mut().zip(after_name) {
            *slot = bytes_of(*arg);
        }
        run(inline.get(..after_name.len()).unwrap_or_default())
    } else {
        let args: Vec<&[u8]> = after_name.iter().map(|arg| bytes_of(*arg)).collect();
        run(&args)
    }
}

/// Run `handler` for one call and send its reply.
pub fn dispatch(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    handler: Handler,
) -> c_int {
    guarded(ctx, argv, argc, |session, args| Some(handler(session, args)))
}

/// Run `run` under `catch_unwind` and send what it answers. In a cluster,
/// a call whose tenant's slot this node may not touch now answers
/// `-TRYAGAIN` without running (`migration_guard`).
fn guarded(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    run: impl FnOnce(&Session, &[&[u8]]) -> Option<CommandResult>,
) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        with_arguments(argv, argc, |args| {
            // In a cluster, refuse before anything is opened while the
            // tenant's slot is moving (see migration_guard).
            // The context flags, read once for the guard and the session
            // (about 130 instructions a read).
            let flags = Session::context_flags(ctx);
            let tenant = args.first().copied().unwrap_or_default();
            if let Err(error) = migration_guard::check(ctx, flags, tenant) {
                reply::send(ctx, &Err(error));
                return true;
            }
            let session = Session::with_flags(ctx, flags).with_argv(argv, usize::try_from(argc).unwrap_or(0));
            let result = run(&session, args);
            if let Some(result) = &result {
                reply::send(ctx, result);
            }
            result.is_some()
        })
    }));
    match outcome {
        Ok(true) => raw::REDISMODULE_OK as c_int,
        Ok(false) => raw::REDISMODULE_ERR as c_int,
        Err(_) => {
            reply::send_error(ctx, BUG);
            raw::REDISMODULE_OK as c_int
        }
    }
}

/// Register `spec` with the server; `module_category`: the server has the
/// module's own ACL category (`acl_category::add`), which every command joins.
pub fn register(ctx: *mut raw::RedisModuleCtx, spec: &CommandSpec, module_category: bool) -> Result<(), String> {
    let name = leak(spec.name);
    let flags = leak(spec.flags);
    let created =
        unsafe { api!(RedisModule_CreateCommand)(ctx, name, Some(spec.entry), flags, 0, 0, 0) };
    if created != raw::REDISMODULE_OK as c_int {
        return Err(format!("could not create command {}", spec.name));
    }
    let command = unsafe { api!(RedisModule_GetCommand)(ctx, name) };
    if command.is_null() {
        return Err(format!("could not find command {}", spec.name));
    }
    let info = Box::leak(Box::new(command_info(spec)));
    if unsafe { api!(RedisModule_SetCommandInfo)(command, info) } != raw::REDISMODULE_OK as c_int {
        return Err(format!("could not describe command {}", spec.name));
    }
    // Redis 7.0 puts module commands in no ACL category (so `+@write` does
    // not grant them) and has no API to change that; 7.2 and newer do, so
    // there the categories follow the flags as they do for core commands,
    // plus `@dreamtown` where the server let the module add it (7.4, Valkey 8).
    if let Some(set_categories) = unsafe { raw::RedisModule_SetCommandACLCategories } {
        let mut categories = acl_categories(spec.flags);
        if module_category {
            categories.push(' ');
            categories.push_str(super::acl_category::NAME);
        }
        let categories = leak(&categories);
        if unsafe { set_categories(command, categories) } != raw::REDISMODULE_OK as c_int {
            return Err(format!("could not set the ACL categories of command {}", spec.name));
        }
    }
    Ok(())
}

/// The ACL categories Redis derives from a core command's flags.
fn acl_categories(flags: &str) -> String {
    let has = |flag: &str| flags.split_whitespace().any(|f| f == flag);
    let mut categories = Vec::new();
    if has("write") {
        categories.push("write");
    }
    if has("readonly") {
        categories.push("read");
    }
    if has("admin") {
        categories.extend(["admin", "dangerous"]);
    }
    if has("pubsub") {
        categories.push("pubsub");
    }
    categories.push(if has("fast") { "fast" } else { "slow" });
    if has("blocking") {
        categories.push("blocking");
    }
    categories.join(" ")
}

/// A C string that lives as long as the server (command metadata must).
fn leak(text: &str) -> *const c_char {
    let clean: String = text.chars().filter(|c| *c != '\0').collect();
    CString::new(clean).unwrap_or_default().into_raw()
}

fn leak_opt(text: Option<&str>) -> *const c_char {
    text.map_or(ptr::null(), leak)
}

static INFO_VERSION: raw::RedisModuleCommandInfoVersion = raw::RedisModuleCommandInfoVersion {
    version: 1,
    sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
    sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
    sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
};

fn command_info(spec: &CommandSpec) -> raw::RedisModuleCommandInfo {
    let access = match spec.tenant {
        TenantUse::Read => raw::REDISMODULE_CMD_KEY_RO,
        TenantUse::Write => raw::REDISMODULE_CMD_KEY_RW,
    };
    // One spec for the tenant and the zeroed terminator.
    let mut key_specs: Vec<raw::RedisModuleCommandKeySpec> = vec![unsafe { std::mem::zeroed() }; 2];
    if let Some(tenant) = key_specs.first_mut() {
        tenant.notes = leak("the tenant: keys are derived from it with it as hash tag");
        tenant.flags = u64::from(raw::REDISMODULE_CMD_KEY_NOT_KEY | access);
        tenant.begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
        tenant.bs.index.pos = 1;
        tenant.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
        tenant.fk.range.lastkey = 0;
        tenant.fk.range.keystep = 1;
        tenant.fk.range.limit = 0;
    }
    raw::RedisModuleCommandInfo {
        version: &INFO_VERSION,
        summary: leak(spec.summary),
        complexity: leak(spec.complexity),
        since: leak(env!("CARGO_PKG_VERSION")),
        history: ptr::null_mut(),
        tips: ptr::null(),
        arity: spec.arity,
        key_specs: key_specs.leak().as_mut_ptr(),
        args: arg_tree(spec.args),
    }
}

fn arg_tree(args: &[Arg]) -> *mut raw::RedisModuleCommandArg {
    let mut tree: Vec<raw::RedisModuleCommandArg> = args.iter().map(arg_node).collect();
    tree.push(unsafe { std::mem::zeroed() });
    tree.leak().as_mut_ptr()
}

fn arg_node(arg: &Arg) -> raw::RedisModuleCommandArg {
    use raw::RedisModuleCommandArgType as T;
    let (type_, key_spec_index, subargs): (T, c_int, *mut raw::RedisModuleCommandArg) = match arg.kind {
        ArgKind::Tenant => (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY, 0, ptr::null_mut()),
        ArgKind::String => (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING, -1, ptr::null_mut()),
        ArgKind::Integer => (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER, -1, ptr::null_mut()),
        ArgKind::Double => (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_DOUBLE, -1, ptr::null_mut()),
        ArgKind::Token => (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN, -1, ptr::null_mut()),
        ArgKind::OneOf(sub) => (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF, -1, arg_tree(sub)),
        ArgKind::Block(sub) => (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK, -1, arg_tree(sub)),
    };
    let mut flags = raw::REDISMODULE_CMD_ARG_NONE;
    if arg.optional {
        flags |= raw::REDISMODULE_CMD_ARG_OPTIONAL;
    }
    if arg.multiple {
        flags |= raw::REDISMODULE_CMD_ARG_MULTIPLE;
    }
    let mut node: raw::RedisModuleCommandArg = unsafe { std::mem::zeroed() };
    node.name = leak(arg.name);
    node.type_ = type_;
    node.key_spec_index = key_spec_index;
    node.token = leak_opt(arg.token);
    node.flags = flags as c_int;
    node.subargs = subargs;
    node
}

#[cfg(test)]
mod tests {
    use super::acl_categories;

    #[test]
    fn categories_follow_the_flags_as_for_core_commands() {
        assert_eq!(acl_categories("write deny-oom fast"), "write fast");
        assert_eq!(acl_categories("write deny-oom blocking"), "write slow blocking");
        assert_eq!(acl_categories("readonly fast"), "read fast");
        assert_eq!(acl_categories("readonly"), "read slow");
        assert_eq!(acl_categories("admin"), "admin dangerous slow");
        assert_eq!(acl_categories("pubsub fast"), "pubsub fast");
    }
}
