//! A key opened through the module key API, with the operations the
//! commands need. Each write here also replicates its effect as the plain
//! Redis command that reproduces it, fires the keyspace event that command
//! would fire, and marks the key modified for WATCH; so the module's writes
//! look to replicas, the AOF and subscribers like ordinary commands.

use std::cell::Cell;
use std::ffi::CStr;
use std::marker::PhantomData;
use std::os::raw::{c_int, c_long, c_void};
use std::ptr;

use redis_module::raw;

use super::access::{Mode, ReadWrite, ReadsValues, Writes};
use super::api::api;
use super::ctx::Ctx;
use super::effects::{notify, replicate_strings, Event};
use super::reply::CommandError;
use super::string::{bytes_of, take_bytes, Argv, KeyName, OwnedString, StaticString};
use dreamtown_protocol::args::parse_signed;

/// The type of value at a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// No such key.
    Empty,
    /// A string.
    String,
    /// A list.
    List,
    /// A hash.
    Hash,
    /// A set.
    Set,
    /// A sorted set.
    ZSet,
    /// A stream, module value or anything newer.
    Other,
}

impl KeyKind {
    fn of(code: c_int) -> Self {
        match code as isize {
            raw::REDISMODULE_KEYTYPE_EMPTY => Self::Empty,
            raw::REDISMODULE_KEYTYPE_STRING => Self::String,
            raw::REDISMODULE_KEYTYPE_LIST => Self::List,
            raw::REDISMODULE_KEYTYPE_HASH => Self::Hash,
            raw::REDISMODULE_KEYTYPE_SET => Self::Set,
            raw::REDISMODULE_KEYTYPE_ZSET => Self::ZSet,
            _ => Self::Other,
        }
    }
}

/// A hash field's value in [`Key::hset_fields`].
#[derive(Clone, Copy, Debug)]
pub enum FieldValue<'a> {
    /// Bytes as they are.
    Bytes(&'a [u8]),
    /// An integer, written in decimal.
    Integer(i64),
    /// A clock reading in unix seconds, written in decimal (its string
    /// shared while the second lasts: [`Argv::new_second`]).
    Second(i64),
}

/// Which end of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The head (index 0, `LPUSH`/`LPOP`).
    Head,
    /// The tail (`RPUSH`/`RPOP`).
    Tail,
}

impl End {
    /// `LMOVE`'s word for this end.
    fn word(self) -> &'static StaticString {
        match self {
            Self::Head => &LEFT,
            Self::Tail => &RIGHT,
        }
    }

    fn code(self) -> c_int {
        match self {
            Self::Head => raw::REDISMODULE_LIST_HEAD as c_int,
            Self::Tail => raw::REDISMODULE_LIST_TAIL as c_int,
        }
    }
}

/// An element [`Key::take`] popped, its effect not yet replicated nor its
/// events fired.
pub struct Taken {
    value: OwnedString,
    end: End,
    /// The pop took the list's last element (the key is gone).
    emptied: bool,
}

impl Taken {
    /// The element.
    pub fn as_bytes(&self) -> &[u8] {
        self.value.as_bytes()
    }

    /// Was it the list's last element (the key deleted)?
    pub fn emptied(&self) -> bool {
        self.emptied
    }
}

/// `LMOVE`'s words for the head and the tail, made once.
static LEFT: StaticString = StaticString::new("LEFT");
static RIGHT: StaticString = StaticString::new("RIGHT");
/// `LREM`'s count of one, made once.
static ONE: StaticString = StaticString::new("1");

/// An open key; closed (and signalled modified, if written) on drop.
pub struct Key<M: Mode = ReadWrite> {
    ctx: Ctx,
    handle: Cell<*mut raw::RedisModuleKey>,
    mode: c_int,
    name: KeyName,
    modified: Cell<bool>,
    /// A list element was deleted through this handle: Redis 7.0 asserts
    /// in its list iterator (module.c moduleListIteratorSeek) when the
    /// same handle reads or deletes again, so the next list operation
    /// reopens the key first. Closing it, its type and length are safe.
    list_iterator_spent: Cell<bool>,
    /// Made with [`Key::unopened`] and not used since: the handle is
    /// opened by the first operation that needs it.
    unopened: Cell<bool>,
    /// What the command may do with the key (its ACL check's mode).
    access: PhantomData<M>,
}

/// The `RedisModule_OpenKey` mode: read, and write if `write`.
fn open_mode(write: bool) -> c_int {
    let mode = match write {
        true => raw::REDISMODULE_READ | raw::REDISMODULE_WRITE,
        false => raw::REDISMODULE_READ,
    };
    mode as c_int
}

impl<M: Mode> Key<M> {
    /// Open the key named by `name` in mode `M`: only a checked key
    /// (`session::Checked`) opens one.
    pub(super) fn open_name(ctx: Ctx, name: KeyName) -> Self {
        Self::open_name_as(ctx, name, M::WRITE)
    }

    /// [`Key::open_name`], opened for writing if `write` whatever `M`
    /// allows (see `session::Checked::open_beside_writes`).
    pub(super) fn open_name_as(ctx: Ctx, name: KeyName, write: bool) -> Self {
        let mode = open_mode(write);
        // SAFETY: `ctx` is the command's live context and `name` a live string; the handle (or
        // null) is closed once, by `Drop` or `reopen`.
        let handle = unsafe { api!(RedisModule_OpenKey)(ctx.raw(), name.as_ptr(), mode) };
        Self::with_handle(ctx, name, mode, handle)
    }

    /// A key named `name`, in mode `M`, that is opened only by the first
    /// operation that needs it: for a key a command touches on some paths
    /// only (checked all the same, as every key: `session::Checked`).
    pub(super) fn unopened(ctx: Ctx, name: KeyName) -> Self {
        let key = Self::with_handle(ctx, name, open_mode(M::WRITE), ptr::null_mut());
        key.unopened.set(true);
        key
    }

    fn with_handle(ctx: Ctx, name: KeyName, mode: c_int, handle: *mut raw::RedisModuleKey) -> Self {
        Self {
            ctx,
            handle: Cell::new(handle),
            mode,
            name,
            modified: Cell::new(false),
            list_iterator_spent: Cell::new(false),
            unopened: Cell::new(false),
            access: PhantomData,
        }
    }

    /// Made with [`Key::unopened`] and not opened since (nothing has read
    /// or written it through this handle).
    pub fn is_unopened(&self) -> bool {
        self.unopened.get()
    }

    /// The key name.
    pub fn name(&self) -> &[u8] {
        self.name.as_bytes()
    }

    /// The type of the value at the key.
    #[inline]
    pub fn kind(&self) -> KeyKind {
        if self.handle().is_null() {
            return KeyKind::Empty;
        }
        // SAFETY: the key's handle, opened in the command's live context, stays open until `Drop`
        // or `reopen` closes it (not null here).
        KeyKind::of(unsafe { api!(RedisModule_KeyType)(self.handle()) })
    }

    /// Fail with `WRONGTYPE` unless the key is empty or holds `kind`.
    #[inline]
    pub fn require(&self, kind: KeyKind) -> Result<(), CommandError> {
        match self.kind() {
            KeyKind::Empty => Ok(()),
            actual if actual == kind => Ok(()),
            _ => Err(CommandError::wrong_type(self.name())),
        }
    }

    /// Does the key exist?
    pub fn exists(&self) -> bool {
        self.kind() != KeyKind::Empty
    }

    /// Elements of the value (list length, hash fields, set members ...).
    pub fn len(&self) -> u64 {
        // No type test first: `RedisModule_ValueLength` answers 0 for an
        // empty key itself ("If the key pointer is NULL or the key is
        // empty, zero is returned", module.c, every version), so the
        // `RedisModule_KeyType` call `exists` makes would be paid twice.
        let handle = self.handle();
        if handle.is_null() {
            return 0;
        }
        // SAFETY: the key's handle, opened in the command's live context, stays open until `Drop`
        // or `reopen` closes it (not null here).
        unsafe { api!(RedisModule_ValueLength)(handle) as u64 }
    }

    /// Is the value absent or empty?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The arguments of a write's effect, starting with the key's name.
    fn argv(&self) -> Argv {
        let mut argv = Argv::new();
        argv.borrowed(self.name.as_ptr());
        argv
    }

    fn effect(&self, command: &CStr, args: &[&[u8]], event: Event) {
        let mut argv = self.argv();
        for arg in args {
            argv.new_string(arg);
        }
        self.effect_argv(command, &argv, event);
    }

    /// The effect of a write whose Redis strings (made for the write
    /// itself) are in `argv`: replicated as they are, no copies.
    fn effect_argv(&self, command: &CStr, argv: &Argv, event: Event) {
        self.effect_strings(command, argv.as_slice(), event);
    }

    /// [`Key::effect_argv`] of arguments already in a slice.
    fn effect_strings(&self, command: &CStr, argv: &[*mut raw::RedisModuleString], event: Event) {
        replicate_strings(self.ctx, command, argv);
        notify(self.ctx, event, self.name.as_ptr());
        self.modified.set(true);
    }

    /// A removal's effect. The key API deletes a list, set, hash or sorted
    /// set its last element left, as Redis's own commands do; those then
    /// fire `del` after their event, so this does too.
    fn removal_effect(&self, command: &CStr, argv: &Argv, event: Event) {
        self.effect_argv(command, argv, event);
        if !self.exists() {
            notify(self.ctx, Event::Generic(c"del"), self.name.as_ptr());
        }
    }

    // ---- lists ----

    /// Push `values` at `end`, in order (as one `LPUSH`/`RPUSH`).
    pub fn push(&self, end: End, values: &[&[u8]])
    where
        M: Writes,
    {
        if values.is_empty() {
            return;
        }
        let push = api!(RedisModule_ListPush);
        if let [value] = values {
            // One value (every queue push): its string and the key's name
            // are the whole effect, without building an `Argv`.
            let element = OwnedString::new(value);
            // SAFETY: the key's handle, opened in the command's live context, stays open until
            // `Drop` or `reopen` closes it (write mode: never null); `element` is live and the
            // server takes its own reference.
            unsafe { push(self.list_handle(), end.code(), element.as_ptr()) };
            let argv = [self.name.as_ptr(), element.as_ptr()];
            match end {
                End::Head => self.effect_strings(c"LPUSH", &argv, Event::List(c"lpush")),
                End::Tail => self.effect_strings(c"RPUSH", &argv, Event::List(c"rpush")),
            }
            return;
        }
        let mut argv = self.argv();
        for value in values {
            let element = argv.new_string(value);
            // SAFETY: the key's handle, opened in the command's live context, stays open until
            // `Drop` or `reopen` closes it (write mode: never null); `element` is a live string of
            // `argv`.
            unsafe { push(self.end_handle(), end.code(), element) };
        }
        match end {
            End::Head => self.effect_argv(c"LPUSH", &argv, Event::List(c"lpush")),
            End::Tail => self.effect_argv(c"RPUSH", &argv, Event::List(c"rpush")),
        }
    }

    /// [`Key::push`] of Redis strings already made (elements popped from
    /// another list): pushed and replicated as they are, not copied again.
    pub fn push_strings(&self, end: End, values: &[OwnedString])
    where
        M: Writes,
    {
        if values.is_empty() {
            return;
        }
        let push = api!(RedisModule_ListPush);
        let mut argv = self.argv();
        for value in values {
            argv.borrowed(value.as_ptr());
            // SAFETY: the key's handle, opened in the command's live context, stays open until
            // `Drop` or `reopen` closes it (write mode: never null); `value` is live.
            unsafe { push(self.end_handle(), end.code(), value.as_ptr()) };
        }
        match end {
            End::Head => self.effect_argv(c"LPUSH", &argv, Event::List(c"lpush")),
            End::Tail => self.effect_argv(c"RPUSH", &argv, Event::List(c"rpush")),
        }
    }

    /// Pop one element from `end`.
    pub fn pop(&self, end: End) -> Option<Vec<u8>>
    where
        M: ReadsValues + Writes,
    {
        let taken = self.take(end)?;
        self.replicate_taken(&taken);
        Some(taken.as_bytes().to_vec())
    }

    /// Pop one element from `end` for a move: its effect is replicated,
    /// and its events fired, by what the caller does with it next:
    /// [`Key::push_taken`] onto another list replicates the pair as one
    /// `LMOVE` and fires what `LMOVE` fires (the push first, then the pop
    /// and `del` if the list emptied: t_list.c `lmoveGenericCommand`, every
    /// version), [`Key::replicate_taken`] as the plain pop (`lpop`, then
    /// `del`). The caller must do one of the two before any other write,
    /// so the effects keep their order.
    pub fn take(&self, end: End) -> Option<Taken>
    where
        M: ReadsValues + Writes,
    {
        if self.is_empty() {
            return None;
        }
        // SAFETY: the key's handle, opened in the command's live context, stays open until `Drop`
        // or `reopen` closes it; the server checks the type and hands back a new string we own.
        let value = OwnedString::from_raw(unsafe { api!(RedisModule_ListPop)(self.end_handle(), end.code()) })?;
        self.modified.set(true);
        Some(Taken { value, end, emptied: !self.exists() })
    }

    /// Fire a [`Key::take`]'s events, as `LPOP`/`RPOP` fire them: the
    /// pop's, then `del` if it emptied the list.
    fn notify_taken(&self, taken: &Taken) {
        let event = match taken.end {
            End::Head => c"lpop",
            End::Tail => c"rpop",
        };
        notify(self.ctx, Event::List(event), self.name.as_ptr());
        if taken.emptied {
            notify(self.ctx, Event::Generic(c"del"), self.name.as_ptr());
        }
    }

    /// Replicate a [`Key::take`] that went nowhere else as the pop it was,
    /// and fire its events.
    pub fn replicate_taken(&self, taken: &Taken)
    where
        M: ReadsValues + Writes,
    {
        let command = match taken.end {
            End::Head => c"LPOP",
            End::Tail => c"RPOP",
        };
        replicate_strings(self.ctx, command, self.argv().as_slice());
        self.notify_taken(taken);
    }

    /// Push an element [`Key::take`] popped from `source` onto `end` of this
    /// list (the same Redis string, no copy), replicating pop and push as
    /// one `LMOVE source this <from> <to>` and firing what `LMOVE` fires:
    /// this key's push event, then the source's pop (and `del`).
    pub fn push_taken<S>(&self, source: &Key<S>, taken: &Taken, end: End)
    where
        M: Writes,
        S: ReadsValues + Writes,
    {
        // SAFETY: the key's handle, opened in the command's live context, stays open until `Drop`
        // or `reopen` closes it (write mode); `taken.value` is live.
        unsafe { api!(RedisModule_ListPush)(self.end_handle(), end.code(), taken.value.as_ptr()) };
        let mut argv = source.argv();
        argv.borrowed(self.name.as_ptr());
        argv.borrowed(taken.end.word().as_ptr());
        argv.borrowed(end.word().as_ptr());
        let event = match end {
            End::Head => c"lpush",
            End::Tail => c"rpush",
        };
        self.effect_argv(c"LMOVE", &argv, Event::List(event));
        source.notify_taken(taken);
    }

    /// Pop up to `count` elements from `end` (as one `LPOP key count` /
    /// `RPOP key count`), in the order they were popped, each in the Redis
    /// string the API returned (for a caller that pushes or replies with
    /// it: no copy).
    pub fn pop_many_strings(&self, end: End, count: u64) -> Vec<OwnedString>
    where
        M: ReadsValues + Writes,
    {
        let length = self.len();
        let wanted = count.min(length);
        let pop = api!(RedisModule_ListPop);
        let mut values = Vec::new();
        for _ in 0..wanted {
            // SAFETY: the key's handle, opened in the command's live context, stays open until
            // `Drop` or `reopen` closes it; a popped element is a new string we own.
            match OwnedString::from_raw(unsafe { pop(self.end_handle(), end.code()) }) {
                Some(value) => values.push(value),
                None => break,
            }
        }
        if values.is_empty() {
            return values;
        }
        let mut argv = self.argv();
        argv.new_integer(i64::try_from(values.len()).unwrap_or(i64::MAX));
        let (command, event) = match end {
            End::Head => (c"LPOP", Event::List(c"lpop")),
            End::Tail => (c"RPOP", Event::List(c"rpop")),
        };
        self.effect_argv(command, &argv, event);
        // The API deleted a list its last element left, as `LPOP` does; so
        // `del` follows, as `LPOP` fires it. Known from the length read
        // above, without asking the key again.
        if values.len() as u64 == length {
            notify(self.ctx, Event::Generic(c"del"), self.name.as_ptr());
        }
        values
    }

    /// The element at `index` (0 = head).
    pub fn get(&self, index: u64) -> Option<Vec<u8>>
    where
        M: ReadsValues,
    {
        if index >= self.len() {
            return None;
        }
        self.element(index).map(|element| element.as_bytes().to_vec())
    }

    /// The element at `index`, as the Redis string the API returns (a copy
    /// of the list's own, so it outlives a delete).
    fn element(&self, index: u64) -> Option<OwnedString> {
        let at = c_long::try_from(index).ok()?;
        // SAFETY: the key's handle, opened in the command's live context, stays open until `Drop`
        // or `reopen` closes it; the server checks the type and `at`, and hands back a new string
        // we own.
        OwnedString::from_raw(unsafe { api!(RedisModule_ListGet)(self.list_handle(), at) })
    }

    /// Up to `count` elements from `start`, head first.
    pub fn range(&self, start: u64, count: u64) -> Vec<Vec<u8>>
    where
        M: ReadsValues,
    {
        let end = self.len().min(start.saturating_add(count));
        (start..end).filter_map(|index| self.get(index)).collect()
    }

    /// Every element, head first.
    pub fn all(&self) -> Vec<Vec<u8>>
    where
        M: ReadsValues,
    {
        self.range(0, u64::MAX)
    }

    /// Remove the first element equal to `value` (`LREM key 1 value`).
    pub fn remove_first(&self, value: &[u8]) -> bool
    where
        M: Writes,
    {
        self.remove_first_matching(|element| element == value)
    }

    /// Remove the first element (head first) that `matches` accepts,
    /// reading no further, replicated as `LREM key 1 <element>` (which
    /// removes that very element: any equal one before it would have
    /// matched first). Each element is read in the Redis string the API
    /// returns, not copied again. Whether one was removed.
    pub fn remove_first_where(&self, matches: impl FnMut(&[u8]) -> bool) -> bool
    where
        M: ReadsValues + Writes,
    {
        self.remove_first_matching(matches)
    }

    /// [`Key::remove_first_where`] without its bound: for [`Key::remove_first`],
    /// whose caller matches by a value it already has (`LREM` needs only `%W`).
    fn remove_first_matching(&self, mut matches: impl FnMut(&[u8]) -> bool) -> bool {
        let len = self.len();
        let found =
            (0..len).find_map(|i| Some((i, self.element(i)?)).filter(|(_, element)| matches(element.as_bytes())));
        let Some((index, element)) = found else {
            return false;
        };
        let Ok(at) = c_long::try_from(index) else {
            return false;
        };
        // SAFETY: the key's handle, opened in the command's live context, stays open until `Drop`
        // or `reopen` closes it (write mode); the server checks `at`.
        unsafe { api!(RedisModule_ListDelete)(self.list_handle(), at) };
        // A lease expiry removes many items from one list: the next list
        // operation starts afresh (see `list_iterator_spent`). Unless that
        // removed the last one: the API then deleted the key, and its
        // iterator with it (module.c `moduleDelKeyIfEmpty`), and the next
        // push makes a new list through the same handle.
        self.list_iterator_spent.set(self.exists());
        let mut argv = self.argv();
        argv.borrowed(ONE.as_ptr());
        argv.borrowed(element.as_ptr());
        self.removal_effect(c"LREM", &argv, Event::List(c"lrem"));
        true
    }

    /// Visit the elements head first with their indexes, each read in the
    /// Redis string the API returns (one forward pass of the key's list
    /// iterator), until `visit` answers false.
    pub fn scan_list(&self, mut visit: impl FnMut(u64, &[u8]) -> bool)
    where
        M: ReadsValues,
    {
        for index in 0..self.len() {
            let Some(element) = self.element(index) else { return };
            if !visit(index, element.as_bytes()) {
                return;
            }
        }
    }

    /// Remove the element at `index`, which is `value` and the first
    /// element equal to it (the caller knows), replicated as `LREM key 1
    /// <value>`. Whether one was removed.
    pub fn remove_at(&self, index: u64, value: &[u8]) -> bool
    where
        M: Writes,
    {
        let Ok(at) = c_long::try_from(index) else {
            return false;
        };
        if index >= self.len() {
            return false;
        }
        // SAFETY: the key's handle, opened in the command's live context, stays open until `Drop`
        // or `reopen` closes it (write mode); the server checks `at`.
        unsafe { api!(RedisModule_ListDelete)(self.list_handle(), at) };
        // As in `remove_first_where`: the next list operation starts afresh.
        self.list_iterator_spent.set(self.exists());
        let mut argv = self.argv();
        argv.borrowed(ONE.as_ptr());
        argv.new_string(value);
        self.removal_effect(c"LREM", &argv, Event::List(c"lrem"));
        true
    }

    /// Keep only the elements `0..keep` (`LTRIM key 0 keep-1`). With
    /// nothing to trim, nothing is replicated (Redis propagates a write
    /// only when it changed something) but the `ltrim` event fires, as a
    /// native `LTRIM` of an existing list fires it whatever it removed.
    pub fn trim_to(&self, keep: u64)
    where
        M: Writes,
    {
        let len = self.len();
        if len <= keep {
            if self.exists() {
                notify(self.ctx, Event::List(c"ltrim"), self.name.as_ptr());
            }
            return;
        }
        let delete = api!(RedisModule_ListDelete);
        let handle = self.list_handle();
        for _ in keep..len {
            // SAFETY: the key's handle, opened in the command's live context, stays open until
            // `Drop` or `reopen` closes it (write mode), a list of at least `len` elements.
            unsafe { delete(handle, -1) };
        }
        self.list_iterator_spent.set(true);
        let mut argv = self.argv();
        argv.new_integer(0);
        argv.new_integer(i64::try_from(keep).unwrap_or(i64::MAX) - 1);
        self.removal_effect(c"LTRIM", &argv, Event::List(c"ltrim"));
    }

    // ---- sorted sets ----

    /// Add `member` with `score`, or rescore it (`ZADD`).
    pub fn zadd(&self, score: f64, member: &[u8])
    where
        M: Writes,
    {
        let mut argv = self.argv();
        // A score as Redis prints one, exact for every integer a command writes.
        if score.fract() == 0.0 && score.abs() < 1e17 {
            argv.new_integer(score as i64);
        } else {
            argv.new_string(format!("{score}").as_bytes());
        }
        let element = argv.new_string(member);
        let mut flags: c_int = 0;
        // SAFETY: the key's handle, opened in the command's live context, stays open until `Drop`
        // or `reopen` closes it (write mode); `element` is live and `flags` writable.
        unsafe { api!(RedisModule_ZsetAdd)(self.handle(), score, element, &mut flags) };
        self.effect_argv(c"ZADD", &argv, Event::ZSet(c"zadd"));
    }

    /// Remove `members` (one `ZREM`); how many were present.
    pub fn zrem(&self, members: &[&[u8]]) -> u64
    where
        M: Writes,
    {
        if self.kind() != KeyKind::ZSet {
            return 0;
        }
        let remove = api!(RedisModule_ZsetRem);
        let mut removed = 0;
        let mut argv = self.argv();
        for member in members {
            let element = argv.new_string(member);
            let mut deleted: c_int = 0;
            // SAFETY: the key's handle, opened in the command's live context, stays open until
            // `Drop` or `reopen` closes it (write mode); `element` is live.
            unsafe { remove(self.handle(), element, &mut deleted) };
            removed += u64::from(deleted != 0);
        }
        if removed > 0 {
            self.removal_effect(c"ZREM", &argv, Event::ZSet(c"zrem"));
        }
        removed
    }

    /// Up to `limit` members with `min <= score <= max`, lowest first.
    pub fn zrange_by_score(&self, min: f64, max: f64, limit: u64) -> Vec<(Vec<u8>, f64)>
    where
        M: ReadsValues,
    {
        let mut found = Vec::new();
        if self.kind() != KeyKind::ZSet || limit == 0 {
            return found;
        }
        let first = api!(RedisModule_ZsetFirstInScoreRange);
        // SAFETY: the key's handle, opened in the command's live context, stays open until `Drop`
        // or `reopen` closes it and holds a sorted set (checked above).
        if unsafe { first(self.handle(), min, max, 0, 0) } != raw::REDISMODULE_OK as c_int {
            return found;
        }
        let ended = api!(RedisModule_ZsetRangeEndReached);
        let current = api!(RedisModule_ZsetRangeCurrentElement);
        let next = api!(RedisModule_ZsetRangeNext);
        // SAFETY: the key's handle, opened in the command's live context, stays open until `Drop`
        // or `reopen` closes it; its range was started above.
        while (found.len() as u64) < limit && unsafe { ended(self.handle()) } == 0 {
            let mut score = 0f64;
            // SAFETY: the key's handle, opened in the command's live context, stays open until
            // `Drop` or `reopen` closes it; `score` is writable; the member is a new string
            // `take_bytes` frees.
            if let Some(member) = take_bytes(unsafe { current(self.handle(), &mut score) }) {
                found.push((member, score));
            }
            // SAFETY: the key's handle, opened in the command's live context, stays open until
            // `Drop` or `reopen` closes it; its range is under way.
            if unsafe { next(self.handle()) } == 0 {
                break;
            }
        }
        // SAFETY: the key's handle, opened in the command's live context, stays open until `Drop`
        // or `reopen` closes it; ends the range started above.
        unsafe { api!(RedisModule_ZsetRangeStop)(self.handle()) };
        found
    }

    /// Every member, lowest score first.
    pub fn zmembers(&self) -> Vec<Vec<u8>>
    where
        M: ReadsValues,
    {
        self.zrange_by_score(f64::NEG_INFINITY, f64::INFINITY, u64::MAX).into_iter().map(|(member, _)| member).collect()
    }

    /// The score of `member`, if it is in the sorted set.
    pub fn zscore(&self, member: &[u8]) -> Option<f64>
    where
        M: ReadsValues,
    {
        if self.kind() != KeyKind::ZSet {
            return None;
        }
        let element = OwnedString::new(member);
        let mut score = 0f64;
        // SAFETY: the key's handle, opened in the command's live context, stays open until `Drop`
        // or `reopen` closes it; the server checks the type; `element` is live and `score`
        // writable.
        let found = unsafe { api!(RedisModule_ZsetScore)(self.handle(), element.as_ptr(), &mut score) };
        (found == raw::REDISMODULE_OK as c_int).then_some(score)
    }

    /// Add `member` with `score` unless it is already in the set: `ZADD
    /// NX`, a write that reads the set only to skip a no-op (so `%W`, as
    /// `ZADD`). Whether it was added.
    pub fn zadd_absent(&self, score: f64, member: &[u8]) -> bool
    where
        M: Writes,
    {
        if self.zscore_of(member).is_some() {
            return false;
        }
        self.zadd(score, member);
        true
    }

    /// The score of `member` (no bound: see the callers).
    fn zscore_of(&self, member: &[u8]) -> Option<f64> {
        if self.kind() != KeyKind::ZSet {
            return None;
        }
        let element = OwnedString::new(member);
        let mut score = 0f64;
        // SAFETY: the key's handle, opened in the command's live context, stays open until `Drop`
        // or `reopen` closes it; the server checks the type; `element` is live and `score`
        // writable.
        let found = unsafe { api!(RedisModule_ZsetScore)(self.handle(), element.as_ptr(), &mut score) };
        (found == raw::REDISMODULE_OK as c_int).then_some(score)
    }

    // ---- hashes ----

    /// The value of hash `field`.
    pub fn hget(&self, field: &[u8]) -> Option<Vec<u8>>
    where
        M: ReadsValues,
    {
        self.hget_of(field)
    }

    /// The values of the hash fields `fields`, read with as few
    /// `RM_HashGet` calls as its variadic form allows (up to five fields a
    /// call): each value in its own Redis string, read in place.
    pub fn hget_fields<const N: usize>(&self, fields: [&'static StaticString; N]) -> [Option<OwnedString>; N]
    where
        M: ReadsValues,
    {
        let mut values = [ptr::null_mut::<raw::RedisModuleString>(); N];
        if self.kind() == KeyKind::Hash {
            let get = api!(RedisModule_HashGet);
            let (key, none, end) = (self.handle(), raw::REDISMODULE_HASH_NONE as c_int, ptr::null_mut::<c_void>());
            for (names, slots) in fields.chunks(5).zip(values.chunks_mut(5)) {
                // SAFETY: the key's handle, opened in the command's live context, stays open until
                // `Drop` or `reopen` closes it and holds a hash; each field name is a live string,
                // each out-slot writable, and the list ends with the null marker the variadic call
                // expects.
                unsafe {
                    match (names, slots) {
                        ([a], [va]) => get(key, none, a.as_ptr(), va as *mut _, end),
                        ([a, b], [va, vb]) => get(key, none, a.as_ptr(), va as *mut _, b.as_ptr(), vb as *mut _, end),
                        ([a, b, c], [va, vb, vc]) => get(
                            key,
                            none,
                            a.as_ptr(),
                            va as *mut _,
                            b.as_ptr(),
                            vb as *mut _,
                            c.as_ptr(),
                            vc as *mut _,
                            end,
                        ),
                        ([a, b, c, d], [va, vb, vc, vd]) => get(
                            key,
                            none,
                            a.as_ptr(),
                            va as *mut _,
                            b.as_ptr(),
                            vb as *mut _,
                            c.as_ptr(),
                            vc as *mut _,
                            d.as_ptr(),
                            vd as *mut _,
                            end,
                        ),
                        ([a, b, c, d, e], [va, vb, vc, vd, ve]) => get(
                            key,
                            none,
                            a.as_ptr(),
                            va as *mut _,
                            b.as_ptr(),
                            vb as *mut _,
                            c.as_ptr(),
                            vc as *mut _,
                            d.as_ptr(),
                            vd as *mut _,
                            e.as_ptr(),
                            ve as *mut _,
                            end,
                        ),
                        _ => 0,
                    }
                };
            }
        }
        values.map(OwnedString::from_raw)
    }

    /// Set the (field, value) pairs laid out one after the other in
    /// `pairs`, with as few `RM_HashSet` calls as its variadic form allows
    /// (up to three pairs a call).
    fn hash_set_pairs(&self, pairs: &[*mut raw::RedisModuleString]) {
        let set = api!(RedisModule_HashSet);
        let (key, none, end) = (self.handle(), raw::REDISMODULE_HASH_NONE as c_int, ptr::null_mut::<c_void>());
        for chunk in pairs.chunks(6) {
            // SAFETY: the key's handle, opened in the command's live context, stays open until
            // `Drop` or `reopen` closes it (write mode); fields and values are live strings, and
            // the list ends with the null marker the variadic call expects.
            unsafe {
                match *chunk {
                    [f1, v1] => set(key, none, f1, v1, end),
                    [f1, v1, f2, v2] => set(key, none, f1, v1, f2, v2, end),
                    [f1, v1, f2, v2, f3, v3] => set(key, none, f1, v1, f2, v2, f3, v3, end),
                    _ => 0,
                }
            };
        }
    }

    /// Set hash fields (one `HSET`).
    pub fn hset(&self, pairs: &[(&[u8], &[u8])])
    where
        M: Writes,
    {
        if pairs.is_empty() {
            return;
        }
        let mut argv = self.argv();
        for (field, value) in pairs {
            argv.new_string(field);
            argv.new_string(value);
        }
        self.hash_set_pairs(argv.as_slice().get(1..).unwrap_or_default());
        self.effect_argv(c"HSET", &argv, Event::Hash(c"hset"));
    }

    /// [`Key::hset`] of fields with fixed names (made once) and values
    /// given as bytes or integers.
    pub fn hset_fields(&self, pairs: &[(&'static StaticString, FieldValue<'_>)])
    where
        M: Writes,
    {
        if pairs.is_empty() {
            return;
        }
        let mut argv = self.argv();
        for (field, value) in pairs {
            argv.borrowed(field.as_ptr());
            match value {
                FieldValue::Bytes(bytes) => argv.new_string(bytes),
                FieldValue::Integer(number) => argv.new_integer(*number),
                FieldValue::Second(secs) => argv.new_second(*secs),
            };
        }
        self.hash_set_pairs(argv.as_slice().get(1..).unwrap_or_default());
        self.effect_argv(c"HSET", &argv, Event::Hash(c"hset"));
    }

    /// Add `by` to the integer in hash `field` (absent: 0), as `HINCRBY`
    /// does; fails without writing when the value is not an integer or the
    /// sum overflows. Replicated as the `HSET` of the result, so a replica
    /// never re-parses the old value.
    pub fn hincrby(&self, field: &[u8], by: i64) -> Result<i64, CommandError>
    where
        M: ReadsValues + Writes,
    {
        let current = match self.hget(field) {
            None => 0,
            Some(value) => parse_signed(&value).ok_or_else(|| CommandError::err("hash value is not an integer"))?,
        };
        let next = current.checked_add(by).ok_or_else(|| CommandError::err("increment or decrement would overflow"))?;
        let mut argv = self.argv();
        argv.new_string(field);
        argv.new_integer(next);
        self.hash_set_pairs(argv.as_slice().get(1..).unwrap_or_default());
        self.effect_argv(c"HSET", &argv, Event::Hash(c"hincrby"));
        Ok(next)
    }

    /// Delete hash fields (one `HDEL`); how many existed.
    pub fn hdel(&self, fields: &[&[u8]]) -> u64
    where
        M: Writes,
    {
        if self.kind() != KeyKind::Hash {
            return 0;
        }
        let mut argv = self.argv();
        for field in fields {
            argv.new_string(field);
        }
        self.hdel_argv(&argv)
    }

    /// [`Key::hdel`] of fields with fixed names (made once).
    pub fn hdel_fields(&self, fields: &[&'static StaticString]) -> u64
    where
        M: Writes,
    {
        if self.kind() != KeyKind::Hash {
            return 0;
        }
        let mut argv = self.argv();
        for field in fields {
            argv.borrowed(field.as_ptr());
        }
        self.hdel_argv(&argv)
    }

    /// Delete the fields named in `argv` after the key's name.
    fn hdel_argv(&self, argv: &Argv) -> u64 {
        let mut deleted = 0u64;
        for &name in argv.as_slice().iter().skip(1) {
            // REDISMODULE_HASH_DELETE is the pointer value 1: a marker,
            // never dereferenced, so an address without provenance.
            let delete_marker = ptr::without_provenance_mut::<raw::RedisModuleString>(1);
            // SAFETY: the key's handle, opened in the command's live context, stays open until
            // `Drop` or `reopen` closes it (write mode); `name` is live, `REDISMODULE_HASH_DELETE`
            // is the server's own marker (never dereferenced), and the list is null-terminated.
            let count = unsafe {
                api!(RedisModule_HashSet)(
                    self.handle(),
                    raw::REDISMODULE_HASH_NONE as c_int,
                    name,
                    delete_marker,
                    ptr::null_mut::<c_void>(),
                )
            };
            deleted += u64::from(count > 0);
        }
        if deleted > 0 {
            self.removal_effect(c"HDEL", argv, Event::Hash(c"hdel"));
        }
        deleted
    }

    /// Set hash `field` to `value` unless it already holds it: a write
    /// that reads the field only to skip a no-op (so `%W`, as `HSET`).
    pub fn hset_changed(&self, field: &[u8], value: &[u8])
    where
        M: Writes,
    {
        if self.hget_of(field).as_deref() != Some(value) {
            self.hset(&[(field, value)]);
        }
    }

    /// The names of the hash's fields, for a write that removes the fields
    /// it does not set (as `HDEL` reads the hash it deletes from; `%W`):
    /// not for a reply.
    pub fn hash_field_names(&self) -> Vec<Vec<u8>>
    where
        M: Writes,
    {
        let mut names = Vec::new();
        if self.kind() == KeyKind::Hash {
            self.scan(|field, _| names.push(field.to_vec()));
        }
        names
    }

    /// The value of hash `field` (no bound: see the callers).
    fn hget_of(&self, field: &[u8]) -> Option<Vec<u8>> {
        if self.kind() != KeyKind::Hash {
            return None;
        }
        let name = OwnedString::new(field);
        let mut value: *mut raw::RedisModuleString = ptr::null_mut();
        let get = api!(RedisModule_HashGet);
        // SAFETY: the key's handle, opened in the command's live context, stays open until `Drop`
        // or `reopen` closes it and holds a hash; `name` is live, `value` writable, and the list
        // null-terminated.
        unsafe {
            get(
                self.handle(),
                raw::REDISMODULE_HASH_NONE as c_int,
                name.as_ptr(),
                &mut value as *mut *mut raw::RedisModuleString,
                ptr::null_mut::<c_void>(),
            )
        };
        take_bytes(value)
    }

    /// Every field and value of the hash.
    pub fn hgetall(&self) -> Vec<(Vec<u8>, Vec<u8>)>
    where
        M: ReadsValues,
    {
        let mut pairs = Vec::new();
        if self.kind() != KeyKind::Hash {
            return pairs;
        }
        self.scan(|field, value| pairs.push((field.to_vec(), value.map(<[u8]>::to_vec).unwrap_or_default())));
        pairs
    }

    fn scan<F: FnMut(&[u8], Option<&[u8]>)>(&self, mut visit: F) {
        unsafe extern "C" fn each<F: FnMut(&[u8], Option<&[u8]>)>(
            _key: *mut raw::RedisModuleKey,
            field: *mut raw::RedisModuleString,
            value: *mut raw::RedisModuleString,
            privdata: *mut c_void,
        ) {
            // SAFETY: `scan` passes a pointer to its `F`, alive and not otherwise borrowed during
            // the `ScanKey` call that runs this.
            let visit = unsafe { &mut *privdata.cast::<F>() };
            let value = if value.is_null() { None } else { Some(bytes_of(value)) };
            visit(bytes_of(field), value);
        }
        // SAFETY: no argument; the cursor is destroyed below.
        let cursor = unsafe { api!(RedisModule_ScanCursorCreate)() };
        let scan = api!(RedisModule_ScanKey);
        let privdata = (&mut visit as *mut F).cast::<c_void>();
        // SAFETY: the key's handle, opened in the command's live context, stays open until `Drop`
        // or `reopen` closes it; `cursor` is live and `privdata` points at `visit`, of type `F`, as
        // `each::<F>` reads it.
        while unsafe { scan(self.handle(), cursor, Some(each::<F>), privdata) } != 0 {}
        // SAFETY: made above, destroyed once.
        unsafe { api!(RedisModule_ScanCursorDestroy)(cursor) };
    }

    // ---- strings and keys ----

    /// Run `read` on the string value at the key, in place (no copy), if
    /// the key holds a string.
    pub fn with_string<R>(&self, read: impl FnOnce(&[u8]) -> R) -> Option<R> {
        if self.kind() != KeyKind::String {
            return None;
        }
        let mut len: usize = 0;
        // SAFETY: the key's handle, opened in the command's live context, stays open until `Drop`
        // or `reopen` closes it and holds a string; `len` is writable.
        let start = unsafe { api!(RedisModule_StringDMA)(self.handle(), &mut len, raw::REDISMODULE_READ as c_int) };
        if start.is_null() {
            return Some(read(&[]));
        }
        // Valid while the key is open and unwritten: `read` runs before
        // anything else can use this handle.
        // SAFETY: the server's buffer of `len` bytes, valid while the key is open and unwritten:
        // `read` runs before anything else can use this handle.
        Some(read(unsafe { std::slice::from_raw_parts(start.cast::<u8>(), len) }))
    }

    /// Set the key to the string `value` (as `SET`: any TTL goes).
    pub fn set_string(&self, value: &[u8]) {
        let mut argv = self.argv();
        let content = argv.new_string(value);
        // SAFETY: the key's handle, opened in the command's live context, stays open until `Drop`
        // or `reopen` closes it (write mode); `content` is a live string.
        unsafe { api!(RedisModule_StringSet)(self.handle(), content) };
        self.effect_argv(c"SET", &argv, Event::String(c"set"));
    }

    /// Set a string value expiring at `expire_at_ms` (unix ms), replicated
    /// with the absolute time so replicas expire it at the same instant.
    pub fn set_string_expiring(&self, value: &[u8], expire_at_ms: i64)
    where
        M: Writes,
    {
        let mut argv = self.argv();
        let content = argv.new_string(value);
        // SAFETY: the key's handle, opened in the command's live context, stays open until `Drop`
        // or `reopen` closes it (write mode); `content` is a live string.
        unsafe { api!(RedisModule_StringSet)(self.handle(), content) };
        // SAFETY: as above, on the key just written.
        unsafe { api!(RedisModule_SetAbsExpire)(self.handle(), expire_at_ms) };
        argv.new_string(b"PXAT");
        argv.new_integer(expire_at_ms);
        self.effect_argv(c"SET", &argv, Event::String(c"set"));
        // `SET ... PX` fires `expire` after `set` (t_string.c
        // setGenericCommand): so does this.
        notify(self.ctx, Event::Generic(c"expire"), self.name.as_ptr());
    }

    /// Expire the key at `expire_at_ms` (unix ms).
    pub fn expire_at(&self, expire_at_ms: i64)
    where
        M: Writes,
    {
        if !self.exists() {
            return;
        }
        // SAFETY: the key's handle, opened in the command's live context, stays open until `Drop`
        // or `reopen` closes it (write mode).
        unsafe { api!(RedisModule_SetAbsExpire)(self.handle(), expire_at_ms) };
        let mut argv = self.argv();
        argv.new_integer(expire_at_ms);
        self.effect_argv(c"PEXPIREAT", &argv, Event::Generic(c"expire"));
    }

    /// Delete the key; whether it existed.
    pub fn delete(&self) -> bool
    where
        M: Writes,
    {
        if !self.exists() {
            return false;
        }
        // RM_DeleteKey leaves a list iterator (left by `get`) dangling, which
        // trips an assertion when the key closes on Redis 7.0: start afresh.
        self.reopen();
        // SAFETY: the key's handle, opened in the command's live context, stays open until `Drop`
        // or `reopen` closes it (write mode).
        unsafe { api!(RedisModule_DeleteKey)(self.handle()) };
        self.effect(c"DEL", &[], Event::Generic(c"del"));
        true
    }
}

impl<M: Mode> Key<M> {
    /// Signal the key modified now, as closing it would (`WATCH`,
    /// client-side caching), and at close only if written again: for a
    /// handle kept open past the point where the command used to close it.
    pub fn signal_modified_now(&self) {
        if self.modified.get() && !self.handle.get().is_null() {
            // SAFETY: `self.ctx` is the command's live context and the name a live string.
            unsafe { api!(RedisModule_SignalModifiedKey)(self.ctx.raw(), self.name.as_ptr()) };
            self.modified.set(false);
        }
    }

    fn reopen(&self) {
        if !self.handle.get().is_null() {
            // SAFETY: a non-null handle of this key, closed once here and replaced below.
            unsafe { api!(RedisModule_CloseKey)(self.handle.get()) };
        }
        // SAFETY: `self.ctx` is live and the name a live string; the new handle is closed once, by
        // `Drop` or another `reopen`.
        let handle = unsafe { api!(RedisModule_OpenKey)(self.ctx.raw(), self.name.as_ptr(), self.mode) };
        self.handle.set(handle);
        self.list_iterator_spent.set(false);
        self.unopened.set(false);
    }

    /// The handle, opened first if the key was made [`Key::unopened`].
    fn handle(&self) -> *mut raw::RedisModuleKey {
        if self.unopened.get() {
            self.reopen();
        }
        self.handle.get()
    }

    /// The handle for a list operation, (re)opened first if the key was
    /// made unopened or an earlier delete spent its list iterator.
    fn list_handle(&self) -> *mut raw::RedisModuleKey {
        if self.unopened.get() || self.list_iterator_spent.get() {
            self.reopen();
        }
        self.handle.get()
    }

    /// The handle for a push or a pop at either end, opened first if the
    /// key was made unopened. A spent list iterator needs no reopening
    /// here: `RM_ListPush` and `RM_ListPop` free the key's iterator before
    /// anything else (module.c, Redis 7.0 on), so after one the handle is
    /// fresh again for reads and deletes too.
    fn end_handle(&self) -> *mut raw::RedisModuleKey {
        if self.unopened.get() {
            self.reopen();
        }
        self.list_iterator_spent.set(false);
        self.handle.get()
    }
}

impl<M: Mode> Drop for Key<M> {
    fn drop(&mut self) {
        if self.handle.get().is_null() {
            return;
        }
        if self.modified.get() {
            // SAFETY: `self.ctx` is live and the name a live string.
            unsafe { api!(RedisModule_SignalModifiedKey)(self.ctx.raw(), self.name.as_ptr()) };
        }
        // SAFETY: the key's non-null handle, closed once: the key is being dropped.
        unsafe { api!(RedisModule_CloseKey)(self.handle.get()) };
    }
}
