//! Command registration: what the server is told about each command.
//!
//! Each command is registered with first/last/step 0 and then described
//! through `RedisModule_SetCommandInfo`: arity, summary, complexity, the
//! argument tree (for `COMMAND DOCS`) and one key spec that marks the
//! tenant (the first argument after the command's name) `NOT_KEY`. Redis
//! then routes the command by tenant in a cluster while the module checks
//! ACL on the real keys it opens.
//!
//! A command with subcommands (`TOWN.AGENT GET <town> <agent>`) is a
//! container ([`ContainerSpec`]) registered as Redis registers `XINFO`:
//! the container has no handler and each subcommand is a command of its
//! own (`RedisModule_CreateSubcommand`) with its own flags, key spec (the
//! tenant after the subcommand's name), ACL categories and docs, so Redis
//! itself decides `OOM` (`deny-oom`) and `READONLY` on a replica for each
//! subcommand, as for its native analogue, and `+TOWN.AGENT|GET` is an ACL
//! rule. Every container also gets `HELP`, answered as `XINFO HELP` is.
//!
//! Redis (7.0 and newer) and Valkey copy every string and array of the
//! metadata they are given (`RM_CreateCommand`, `RM_SetCommandInfo`,
//! `moduleCopyCommandArgs`, `RM_SetCommandACLCategories`), so it is built
//! in an [`Arena`] freed once the command is registered: a `MODULE UNLOAD`
//! followed by `MODULE LOAD` leaves none of it behind.
//!
//! The entry point every call runs through is `crate::entry`.

use std::cell::RefCell;
use std::ffi::CString;
use std::os::raw::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use redis_module::raw;

use super::api::api;
use super::ctx::Ctx;
use super::module_state::PerLoad;
use super::reply::{self, CommandResult};
use super::session::Session;
use super::string::bytes_of;

/// A command handler: the session and the arguments after the name.
pub type Handler = fn(&Session, &[&[u8]]) -> CommandResult;

/// How a command is run: its C entry point (what Redis calls) and, for a
/// dry run (`ACL DRYRUN`), its handler on a session of the module's own.
#[derive(Clone, Copy)]
pub struct Entry {
    /// The C entry point (see `entry::entry_point!`).
    pub raw: RawCommand,
    /// The handler, its arguments starting at the tenant; `None` for a
    /// command that touches no key (`HELP`).
    pub handler: Option<Handler>,
}

/// The C entry point Redis calls (a [`Ctx`] in the context pointer's
/// place: `Ctx` is `repr(transparent)` over it).
pub type RawCommand = unsafe extern "C" fn(Ctx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// The module API's command function type.
type ServerCommand = unsafe extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// `entry` as the module API takes it.
fn server_command(entry: RawCommand) -> ServerCommand {
    // SAFETY: the two function types differ only in the first argument,
    // `Ctx` against the pointer it wraps (`repr(transparent)`): one ABI,
    // and every pointer the server passes is a valid `Ctx`.
    unsafe { std::mem::transmute::<RawCommand, ServerCommand>(entry) }
}

/// How a command uses its tenant's keys, for the key spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TenantUse {
    /// Reads only.
    Read,
    /// Reads and writes.
    Write,
    /// No tenant: a server command (`DREAMTOWN.DRYRUN`), no key spec.
    None,
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
        Self { name: token, kind: ArgKind::Token, token: Some(token), optional: false, multiple: false }
    }

    /// An optional pure keyword.
    pub const fn flag(token: &'static str) -> Self {
        Self { name: token, kind: ArgKind::Token, token: Some(token), optional: true, multiple: false }
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

/// Everything Redis needs to know about one command (or one subcommand
/// of a [`ContainerSpec`]).
pub struct CommandSpec {
    /// Command name (`DREAMS.FIRE`), or a subcommand's (`GET`).
    pub name: &'static str,
    /// How it runs (see `entry::entry_point!`, `entry::subcommand_entry_point!`).
    pub entry: Entry,
    /// Redis command flags (`write deny-oom fast` ...).
    pub flags: &'static str,
    /// How the tenant's keys are used.
    pub tenant: TenantUse,
    /// Arity as Redis counts it, with the name (and, for a subcommand,
    /// its container's name); negative: at least.
    pub arity: i32,
    /// One-line summary.
    pub summary: &'static str,
    /// Time complexity.
    pub complexity: &'static str,
    /// Arguments after the name (a subcommand's: after its own name).
    pub args: &'static [Arg],
}

/// A command whose first argument names a subcommand
/// (`TOWN.AGENT GET <town> <agent>`), each a [`CommandSpec`] of its own.
pub struct ContainerSpec {
    /// Command name (`TOWN.AGENT`).
    pub name: &'static str,
    /// One-line summary.
    pub summary: &'static str,
    /// The subcommands (`HELP` is added).
    pub subcommands: &'static [CommandSpec],
}

/// The reply of a call that panicked (caught): nothing further changed.
pub const BUG: &str =
    "internal error: the command failed and changed nothing further; please report this as a dreamtown bug";

/// What this load registered: a part of the module state.
#[derive(Default)]
struct Registered {
    /// The containers registered (for their `HELP`).
    containers: RefCell<Vec<&'static ContainerSpec>>,
    /// Every registered command's full name in lower case (`dreams.fire`,
    /// `town.agent|get`) with its entry and arity: for a dry run by name.
    commands: RefCell<Vec<(String, Entry, i32)>>,
}

static REGISTERED: PerLoad<Registered> = PerLoad::new();

fn with_commands<R>(run: impl FnOnce(&mut Vec<(String, Entry, i32)>) -> R) -> R {
    REGISTERED.with(|registered| run(&mut registered.commands.borrow_mut()))
}

fn with_containers<R>(run: impl FnOnce(&mut Vec<&'static ContainerSpec>) -> R) -> R {
    REGISTERED.with(|registered| run(&mut registered.containers.borrow_mut()))
}

/// Is `name` (any case) a command this module registered, or a container
/// of its subcommands?
pub fn is_registered(name: &[u8]) -> bool {
    let Ok(name) = std::str::from_utf8(name) else { return false };
    let name = name.to_ascii_lowercase();
    with_commands(|registered| {
        registered
            .iter()
            .any(|(full, _, _)| *full == name || full.split_once('|').is_some_and(|(container, _)| container == name))
    })
}

/// The registered command that the call `words` (its name, then for a
/// container the subcommand's, then arguments) runs: its full name and
/// entry, and how many words name it (1 or 2).
pub fn find(words: &[&[u8]]) -> Option<(String, Entry, usize)> {
    let first = std::str::from_utf8(words.first()?).ok()?.to_ascii_lowercase();
    let second = words.get(1).and_then(|word| std::str::from_utf8(word).ok()).map(str::to_ascii_lowercase);
    with_commands(|registered| {
        if let Some((full, entry, _)) = registered.iter().find(|(full, _, _)| *full == first) {
            return Some((full.clone(), *entry, 1));
        }
        let second = second?;
        let full = format!("{first}|{second}");
        registered.iter().find(|(name, _, _)| *name == full).map(|(full, entry, _)| (full.clone(), *entry, 2))
    })
}

/// Does registered command `full_name` take `argc` words (its name and
/// its container's included), as Redis counts arity?
pub fn arity_allows(full_name: &str, argc: usize) -> bool {
    let arity = with_commands(|registered| {
        registered.iter().find(|(name, _, _)| name == full_name).map(|(_, _, arity)| *arity)
    });
    let Some(arity) = arity else {
        return false;
    };
    let argc = i64::try_from(argc).unwrap_or(i64::MAX);
    match arity {
        fixed if fixed > 0 => argc == i64::from(fixed),
        at_least => argc >= -i64::from(at_least),
    }
}

/// Register `spec` with the server; `module_category`: the server has the
/// module's own ACL category (`acl_category::add`), which every command joins.
pub fn register(ctx: Ctx, spec: &CommandSpec, module_category: bool) -> Result<(), String> {
    let mut arena = Arena::default();
    let name = arena.text(spec.name);
    let flags = arena.text(spec.flags);
    // SAFETY: `ctx` is the load's live context; `name` and `flags` are NUL-terminated strings of
    // the arena, which outlives the registration (the server copies them).
    let created = unsafe {
        api!(RedisModule_CreateCommand)(ctx.raw(), name, Some(server_command(spec.entry.raw)), flags, 0, 0, 0)
    };
    if created != raw::REDISMODULE_OK as c_int {
        return Err(format!("could not create command {}", spec.name));
    }
    // SAFETY: `ctx` is live and `name` NUL-terminated.
    let command = unsafe { api!(RedisModule_GetCommand)(ctx.raw(), name) };
    if command.is_null() {
        return Err(format!("could not find command {}", spec.name));
    }
    let tenant_at = match spec.tenant {
        TenantUse::None => 0,
        TenantUse::Read | TenantUse::Write => 1,
    };
    describe(&mut arena, command, spec, spec.name, tenant_at, module_category)?;
    with_commands(|registered| registered.push((spec.name.to_ascii_lowercase(), spec.entry, spec.arity)));
    Ok(())
}

/// Register the container `spec`, its subcommands and its `HELP`.
pub fn register_container(ctx: Ctx, spec: &'static ContainerSpec, module_category: bool) -> Result<(), String> {
    let mut arena = Arena::default();
    // Lower case, as Redis names its own containers and subcommands:
    // clients match `COMMAND`'s subcommand names (`town.agent|get`) in
    // lower case (redis-py's cluster routing does).
    let name = arena.text(&spec.name.to_ascii_lowercase());
    // No handler: a pure container, as Redis requires of a parent. Redis
    // answers a bare `TOWN.AGENT` (arity) and an unknown subcommand ("unknown
    // subcommand '...'. Try TOWN.AGENT HELP.") itself.
    // SAFETY: as above, for a container command (no entry point).
    let created = unsafe { api!(RedisModule_CreateCommand)(ctx.raw(), name, None, arena.text(""), 0, 0, 0) };
    if created != raw::REDISMODULE_OK as c_int {
        return Err(format!("could not create command {}", spec.name));
    }
    // SAFETY: `ctx` is live and `name` NUL-terminated.
    let parent = unsafe { api!(RedisModule_GetCommand)(ctx.raw(), name) };
    if parent.is_null() {
        return Err(format!("could not find command {}", spec.name));
    }
    // SAFETY: a C struct of pointers and integers, for which all zeros is the documented "unset"
    // value.
    let mut info: raw::RedisModuleCommandInfo = unsafe { std::mem::zeroed() };
    info.version = &INFO_VERSION;
    info.summary = arena.text(spec.summary);
    info.complexity = arena.text("Depends on subcommand.");
    info.since = arena.text(env!("CARGO_PKG_VERSION"));
    info.arity = -2;
    // SAFETY: `parent` is the command just made; `info` and every string it points at live in the
    // arena until the server has copied them.
    if unsafe { api!(RedisModule_SetCommandInfo)(parent, &info) } != raw::REDISMODULE_OK as c_int {
        return Err(format!("could not describe command {}", spec.name));
    }
    // The container's own categories: only `@dreamtown` (granting a
    // container grants its subcommands; `@read`/`@write` are the
    // subcommands' own, so `+@read` grants `TOWN.AGENT|GET` alone).
    if module_category {
        set_categories(&mut arena, parent, super::acl_category::NAME, spec.name)?;
    }
    let create = api!(RedisModule_CreateSubcommand);
    // Each subcommand's tenant follows its name (argv[2]); HELP has none.
    let subcommands = spec.subcommands.iter().map(|sub| (sub, 2)).chain([(&HELP, 0)]);
    for (sub, tenant_at) in subcommands {
        let full = format!("{}|{}", spec.name, sub.name).to_ascii_lowercase();
        let sub_name = arena.text(&sub.name.to_ascii_lowercase());
        // SAFETY: `parent` is a live command; the strings are the arena's, NUL-terminated.
        let created =
            unsafe { create(parent, sub_name, Some(server_command(sub.entry.raw)), arena.text(sub.flags), 0, 0, 0) };
        if created != raw::REDISMODULE_OK as c_int {
            return Err(format!("could not create subcommand {full}"));
        }
        // SAFETY: `ctx` is live and the name NUL-terminated.
        let command = unsafe { api!(RedisModule_GetCommand)(ctx.raw(), arena.text(&full)) };
        if command.is_null() {
            return Err(format!("could not find subcommand {full}"));
        }
        describe(&mut arena, command, sub, &full, tenant_at, module_category)?;
        with_commands(|registered| registered.push((full, sub.entry, sub.arity)));
    }
    with_containers(|containers| containers.push(spec));
    Ok(())
}

/// Set `command`'s info and ACL categories from `spec`; `tenant_at`: the
/// tenant's position in argv (0: no tenant, no key spec).
fn describe(
    arena: &mut Arena,
    command: *mut raw::RedisModuleCommand,
    spec: &CommandSpec,
    full_name: &str,
    tenant_at: c_int,
    module_category: bool,
) -> Result<(), String> {
    let info = command_info(arena, spec, tenant_at);
    // SAFETY: `command` is live; `info` and its strings live in the arena until the server has
    // copied them.
    if unsafe { api!(RedisModule_SetCommandInfo)(command, &info) } != raw::REDISMODULE_OK as c_int {
        return Err(format!("could not describe command {full_name}"));
    }
    // Redis 7.0 puts module commands in no ACL category (so `+@write` does
    // not grant them) and has no API to change that; 7.2 and newer do, so
    // there the categories follow the flags as they do for core commands,
    // plus `@dreamtown` where the server let the module add it (7.4, Valkey 8).
    let mut categories = acl_categories(spec.flags);
    if module_category {
        categories.push(' ');
        categories.push_str(super::acl_category::NAME);
    }
    set_categories(arena, command, &categories, full_name)
}

/// `RedisModule_SetCommandACLCategories`, where the server has it.
fn set_categories(
    arena: &mut Arena,
    command: *mut raw::RedisModuleCommand,
    categories: &str,
    full_name: &str,
) -> Result<(), String> {
    // SAFETY: reads the API table's entry, filled once at load.
    let Some(set) = (unsafe { raw::RedisModule_SetCommandACLCategories }) else {
        return Ok(());
    };
    // SAFETY: `command` is live and the categories NUL-terminated.
    if unsafe { set(command, arena.text(categories)) } != raw::REDISMODULE_OK as c_int {
        return Err(format!("could not set the ACL categories of command {full_name}"));
    }
    Ok(())
}

/// Every container's `HELP`, as Redis's `XINFO HELP` (`loading stale`, no
/// key, `@slow`).
const HELP: CommandSpec = CommandSpec {
    name: "HELP",
    entry: Entry { raw: help_entry, handler: None },
    flags: "allow-loading allow-stale",
    tenant: TenantUse::Read,
    arity: 2,
    summary: "Show helpful text about the different subcommands",
    complexity: "O(1)",
    args: &[],
};

/// `<CONTAINER> HELP`: the container's subcommands with their arguments
/// and summaries, one status line each, as Redis's own `HELP` subcommands
/// answer.
unsafe extern "C" fn help_entry(ctx: Ctx, argv: *mut *mut raw::RedisModuleString, argc: c_int) -> c_int {
    let lines = catch_unwind(AssertUnwindSafe(|| {
        let count = usize::try_from(argc).unwrap_or(0);
        if argv.is_null() || count == 0 {
            return None;
        }
        // SAFETY: the server passes `argc` (> 0 here) live strings at `argv` (not null here).
        let all = unsafe { std::slice::from_raw_parts(argv, count) };
        let name = bytes_of(*all.first()?);
        let container = with_containers(|containers| {
            containers.iter().copied().find(|container| container.name.as_bytes().eq_ignore_ascii_case(name))
        })?;
        Some(help_lines(container))
    }));
    match lines {
        Ok(Some(lines)) => {
            // SAFETY: `ctx` is the running command's live context.
            unsafe { api!(RedisModule_ReplyWithArray)(ctx.raw(), lines.len() as std::os::raw::c_long) };
            for line in &lines {
                // SAFETY: `ctx` is live and `line` NUL-terminated.
                unsafe { api!(RedisModule_ReplyWithSimpleString)(ctx.raw(), line.as_ptr()) };
            }
        }
        _ => reply::send_error(ctx, BUG),
    }
    raw::REDISMODULE_OK as c_int
}

/// The lines of `container`'s `HELP`, as `XINFO HELP` words them.
pub fn help_lines(container: &ContainerSpec) -> Vec<CString> {
    let mut lines = vec![format!("{} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", container.name)];
    for sub in container.subcommands {
        let usage: Vec<String> = sub.args.iter().map(usage).collect();
        lines.push(format!("{} {}", sub.name, usage.join(" ")).trim_end().to_owned());
        lines.push(format!("    {}.", sub.summary.trim_end_matches('.')));
    }
    lines.push("HELP".to_owned());
    lines.push("    Print this help.".to_owned());
    lines.into_iter().map(|line| clean(&line)).collect()
}

/// One argument as a usage line shows it: `<name>`, `TOKEN <name>`,
/// `[optional]`, `a|b`, `x [x ...]`.
fn usage(arg: &Arg) -> String {
    let body = match arg.kind {
        ArgKind::Token => arg.token.unwrap_or(arg.name).to_owned(),
        ArgKind::OneOf(choices) => choices.iter().map(usage).collect::<Vec<_>>().join("|"),
        ArgKind::Block(parts) => parts.iter().map(usage).collect::<Vec<_>>().join(" "),
        _ => format!("<{}>", arg.name),
    };
    let body = match (arg.kind, arg.token) {
        (ArgKind::Token, _) | (_, None) => body,
        (_, Some(token)) => format!("{token} {body}"),
    };
    let body = if arg.multiple { format!("{body} [{body} ...]") } else { body };
    if arg.optional {
        format!("[{body}]")
    } else {
        body
    }
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

/// `text` as a C string, any NUL dropped.
fn clean(text: &str) -> CString {
    let clean: String = text.chars().filter(|c| *c != '\0').collect();
    CString::new(clean).unwrap_or_default()
}

/// The strings and arrays of one registration: the server copies what it
/// keeps (see the module doc), so all of it is dropped once the command
/// is registered. A `CString`'s and a `Vec`'s heap buffer does not move
/// when the arena's own vectors grow, so the pointers handed out stay
/// valid as long as the arena.
#[derive(Default)]
struct Arena {
    texts: Vec<CString>,
    args: Vec<Vec<raw::RedisModuleCommandArg>>,
    key_specs: Vec<Vec<raw::RedisModuleCommandKeySpec>>,
}

impl Arena {
    /// `text` as a C string that lives as long as the arena.
    fn text(&mut self, text: &str) -> *const c_char {
        let text = clean(text);
        let pointer = text.as_ptr();
        self.texts.push(text);
        pointer
    }

    fn text_opt(&mut self, text: Option<&str>) -> *const c_char {
        text.map_or(ptr::null(), |text| self.text(text))
    }
}

static INFO_VERSION: raw::RedisModuleCommandInfoVersion = raw::RedisModuleCommandInfoVersion {
    version: 1,
    sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
    sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
    sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
};

/// `spec`'s info, its strings and arrays in `arena`; `tenant_at`: the
/// tenant's position in argv (1 for a command, 2 for a subcommand; 0: no
/// tenant, no key spec).
fn command_info(arena: &mut Arena, spec: &CommandSpec, tenant_at: c_int) -> raw::RedisModuleCommandInfo {
    let access = match spec.tenant {
        TenantUse::Read | TenantUse::None => raw::REDISMODULE_CMD_KEY_RO,
        TenantUse::Write => raw::REDISMODULE_CMD_KEY_RW,
    };
    let key_specs = if tenant_at > 0 {
        // One spec for the tenant and the zeroed terminator.
        // SAFETY: a C struct of integers, pointers and unions, all zeros being its "unset" value;
        // the second one ends the list.
        let mut key_specs: Vec<raw::RedisModuleCommandKeySpec> = vec![unsafe { std::mem::zeroed() }; 2];
        let notes = arena.text("the tenant: keys are derived from it with it as hash tag");
        if let Some(tenant) = key_specs.first_mut() {
            tenant.notes = notes;
            tenant.flags = u64::from(raw::REDISMODULE_CMD_KEY_NOT_KEY | access);
            tenant.begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
            tenant.bs.index.pos = tenant_at;
            tenant.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
            tenant.fk.range.lastkey = 0;
            tenant.fk.range.keystep = 1;
            tenant.fk.range.limit = 0;
        }
        let pointer = key_specs.as_mut_ptr();
        arena.key_specs.push(key_specs);
        pointer
    } else {
        ptr::null_mut()
    };
    raw::RedisModuleCommandInfo {
        version: &INFO_VERSION,
        summary: arena.text(spec.summary),
        complexity: arena.text(spec.complexity),
        since: arena.text(env!("CARGO_PKG_VERSION")),
        history: ptr::null_mut(),
        tips: ptr::null(),
        arity: spec.arity,
        key_specs,
        args: if spec.args.is_empty() { ptr::null_mut() } else { arg_tree(arena, spec.args) },
    }
}

fn arg_tree(arena: &mut Arena, args: &[Arg]) -> *mut raw::RedisModuleCommandArg {
    let mut tree: Vec<raw::RedisModuleCommandArg> = args.iter().map(|arg| arg_node(arena, arg)).collect();
    // SAFETY: an all-zeros `RedisModuleCommandArg` is the list's terminator.
    tree.push(unsafe { std::mem::zeroed() });
    let pointer = tree.as_mut_ptr();
    arena.args.push(tree);
    pointer
}

fn arg_node(arena: &mut Arena, arg: &Arg) -> raw::RedisModuleCommandArg {
    use raw::RedisModuleCommandArgType as T;
    let (type_, key_spec_index, subargs): (T, c_int, *mut raw::RedisModuleCommandArg) = match arg.kind {
        ArgKind::Tenant => (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY, 0, ptr::null_mut()),
        ArgKind::String => (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING, -1, ptr::null_mut()),
        ArgKind::Integer => (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER, -1, ptr::null_mut()),
        ArgKind::Double => (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_DOUBLE, -1, ptr::null_mut()),
        ArgKind::Token => (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN, -1, ptr::null_mut()),
        ArgKind::OneOf(sub) => (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF, -1, arg_tree(arena, sub)),
        ArgKind::Block(sub) => (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK, -1, arg_tree(arena, sub)),
    };
    let mut flags = raw::REDISMODULE_CMD_ARG_NONE;
    if arg.optional {
        flags |= raw::REDISMODULE_CMD_ARG_OPTIONAL;
    }
    if arg.multiple {
        flags |= raw::REDISMODULE_CMD_ARG_MULTIPLE;
    }
    // SAFETY: a C struct of pointers and integers, all zeros being "unset".
    let mut node: raw::RedisModuleCommandArg = unsafe { std::mem::zeroed() };
    node.name = arena.text(arg.name);
    node.type_ = type_;
    node.key_spec_index = key_spec_index;
    node.token = arena.text_opt(arg.token);
    node.flags = flags as c_int;
    node.subargs = subargs;
    node
}

#[cfg(test)]
mod tests {
    use super::acl_categories;
    use super::{usage, Arg, ArgKind};

    #[test]
    fn usage_lines_read_as_rediss_help() {
        let ttl = Arg::new("seconds", ArgKind::Integer).token("TTL").optional();
        assert_eq!(usage(&ttl), "[TTL <seconds>]");
        const PAIR: &[Arg] = &[Arg::new("field", ArgKind::String), Arg::new("value", ArgKind::String)];
        const COUNTERS: &[Arg] = &[Arg::keyword("ROUNDS"), Arg::keyword("TASKS")];
        let pairs = Arg::new("data", ArgKind::Block(PAIR)).multiple();
        assert_eq!(usage(&pairs), "<field> <value> [<field> <value> ...]");
        let counter = Arg::new("counter", ArgKind::OneOf(COUNTERS));
        assert_eq!(usage(&counter), "ROUNDS|TASKS");
        assert_eq!(usage(&Arg::tenant("town")), "<town>");
    }

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
