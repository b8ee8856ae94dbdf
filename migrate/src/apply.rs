//! The target side of one batch: what to write, as a list of operations,
//! applied by one script in one atomic step together with the batch's id
//! (so a batch lands once, whatever re-runs follow). All target keys of a
//! tenant share its hash tag, and so does the applied-batch set: on a
//! cluster the script runs on the node of that slot.
//!
//! The script first checks every target key's type and every counter it
//! will merge, and writes nothing if one is wrong: it never stops halfway.

#[cfg(feature = "net")]
use redis::aio::ConnectionLike;

#[cfg(feature = "net")]
use super::Result;
use super::snapshot::{Group, StreamEntry};

/// The highest a Dreams counter goes (the seed's and the module's ceiling).
pub const COUNTER_MAX: u64 = 4_294_967_295;

/// The highest an agent's `rounds_completed`/`tasks_completed` goes on
/// dreamtown (`TOWN.AGENT INCR`, like tinytown's `HINCRBY`, refuses to
/// pass i64): the apply script refuses a merge whose sum is larger.
pub const RECORD_COUNTER_MAX: u64 = i64::MAX as u64;

/// One write to the target. `key` is always the target key; the other
/// fields are what the variant's line says.
#[allow(missing_docs)]
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Append to the tail of a list, in order.
    Append { key: String, items: Vec<Vec<u8>> },
    /// Put at the head of a list, keeping their order (the first ends up first).
    Prepend { key: String, items: Vec<Vec<u8>> },
    /// Add sorted-set members with their scores, keeping a member's score if present.
    ZAddNx { key: String, members: Vec<(Vec<u8>, String)> },
    /// Add set members.
    SAdd { key: String, members: Vec<Vec<u8>> },
    /// Set hash fields (fields not named are kept).
    HSet { key: String, fields: Vec<(Vec<u8>, Vec<u8>)> },
    /// An agent or task record. `replace`: the source wrote the whole
    /// record (tinytown's `set_agent_state`/`set_task` always write `id`),
    /// which becomes the record, fields it lacks removed as tinytown
    /// removed them. Otherwise a partial write since the last batch (a
    /// heartbeat `HSET`, an `HINCRBY` of `rounds_completed` or
    /// `tasks_completed` on a fresh hash): its fields overwrite, and those
    /// two counters add, exactly (decimal digits, not Lua's doubles); a
    /// sum above [`RECORD_COUNTER_MAX`] refuses the batch.
    Record { key: String, fields: Vec<(Vec<u8>, Vec<u8>)>, replace: bool },
    /// Set hash fields only where absent.
    HSetNx { key: String, fields: Vec<(Vec<u8>, Vec<u8>)> },
    /// Merge a Dreams region's counters: `memories` and `edges` add
    /// (saturating), `last_success` and `settled_generation` take the larger,
    /// `pending` is kept if the target has one (else taken), any other field
    /// is set where absent.
    Counters { key: String, fields: Vec<(Vec<u8>, Vec<u8>)> },
    /// Merge an activity log (newest first): these entries go to the head,
    /// the log is cut to 10, and its TTL becomes the longer of the two.
    Activity { key: String, items: Vec<Vec<u8>>, pttl: Option<i64> },
    /// A flag with a TTL: set unless the target's lasts longer.
    Flag { key: String, value: Vec<u8>, pttl: Option<i64> },
    /// A stream: restored exactly (ids, groups, pending entries) where the
    /// target has none; else entries are appended with their ids when
    /// above the target's last id (a new id otherwise) and missing groups
    /// are created at their last delivered id.
    Stream { key: String, dump: Vec<u8>, pttl: Option<i64>, entries: Vec<StreamEntry>, groups: Vec<Group> },
}

impl Op {
    /// Writes nothing.
    pub fn is_empty(&self) -> bool {
        match self {
            Self::Append { items, .. } | Self::Prepend { items, .. } | Self::Activity { items, .. } => items.is_empty(),
            Self::ZAddNx { members, .. } => members.is_empty(),
            Self::SAdd { members, .. } => members.is_empty(),
            Self::HSet { fields, .. }
            | Self::HSetNx { fields, .. }
            | Self::Record { fields, .. }
            | Self::Counters { fields, .. } => fields.is_empty(),
            Self::Flag { .. } | Self::Stream { .. } => false,
        }
    }

    /// The target key it writes.
    pub fn key(&self) -> &str {
        match self {
            Self::Append { key, .. }
            | Self::Prepend { key, .. }
            | Self::ZAddNx { key, .. }
            | Self::SAdd { key, .. }
            | Self::HSet { key, .. }
            | Self::HSetNx { key, .. }
            | Self::Record { key, .. }
            | Self::Counters { key, .. }
            | Self::Activity { key, .. }
            | Self::Flag { key, .. }
            | Self::Stream { key, .. } => key,
        }
    }

    /// The operation's name and arguments for the script.
    #[cfg(feature = "net")]
    fn encode(&self) -> (&'static str, Vec<Vec<u8>>) {
        fn pairs(fields: &[(Vec<u8>, Vec<u8>)]) -> Vec<Vec<u8>> {
            fields.iter().flat_map(|(f, v)| [f.clone(), v.clone()]).collect()
        }
        fn ttl(pttl: Option<i64>) -> Vec<u8> {
            pttl.unwrap_or(-1).to_string().into_bytes()
        }
        match self {
            Self::Append { items, .. } => ("append", items.clone()),
            Self::Prepend { items, .. } => ("prepend", items.clone()),
            Self::ZAddNx { members, .. } => {
                ("zaddnx", members.iter().flat_map(|(m, s)| [s.clone().into_bytes(), m.clone()]).collect())
            }
            Self::SAdd { members, .. } => ("sadd", members.clone()),
            Self::HSet { fields, .. } => ("hset", pairs(fields)),
            Self::HSetNx { fields, .. } => ("hsetnx", pairs(fields)),
            Self::Record { fields, replace, .. } => {
                let mut args = vec![if *replace { b"replace".to_vec() } else { b"merge".to_vec() }];
                args.extend(pairs(fields));
                ("record", args)
            }
            Self::Counters { fields, .. } => ("counters", pairs(fields)),
            Self::Activity { items, pttl, .. } => {
                let mut args = vec![ttl(*pttl)];
                args.extend(items.iter().cloned());
                ("activity", args)
            }
            Self::Flag { value, pttl, .. } => ("flag", vec![value.clone(), ttl(*pttl)]),
            Self::Stream { dump, pttl, entries, groups, .. } => {
                let mut args = vec![ttl(*pttl), dump.clone(), entries.len().to_string().into_bytes()];
                for (id, fields) in entries {
                    args.push(id.clone().into_bytes());
                    args.push(fields.len().to_string().into_bytes());
                    args.extend(pairs(fields));
                }
                args.push(groups.len().to_string().into_bytes());
                for group in groups {
                    args.push(group.name.clone().into_bytes());
                    args.push(group.last_delivered.clone().into_bytes());
                    args.push(group.pending.to_string().into_bytes());
                }
                ("stream", args)
            }
        }
    }
}

/// What the script did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// False when the batch had been applied before (nothing written now).
    pub now: bool,
    /// Regions where both sides held a pending fire (the target's was kept).
    pub pending_conflicts: u64,
    /// Stream entries that got a new id (theirs was not above the target's last).
    pub new_stream_ids: u64,
    /// Pending entries of consumer groups of streams merged into an
    /// existing stream (not restored): the entries moved, their delivery
    /// state did not.
    pub pending_not_carried: u64,
}

/// KEYS: the applied-batch set, then one key per op. ARGV: batch id, then
/// per op: name, key index, argument count, arguments.
#[cfg(feature = "net")]
const APPLY_LUA: &str = r#"
local applied = KEYS[1]
if redis.call('SISMEMBER', applied, ARGV[1]) == 1 then return {0, 0, 0, 0} end
local want = {append = 'list', prepend = 'list', activity = 'list', zaddnx = 'zset', sadd = 'set',
    hset = 'hash', hsetnx = 'hash', record = 'hash', counters = 'hash', flag = 'string', stream = 'stream'}
local ops = {}
local i = 2
while i <= #ARGV do
    local n = tonumber(ARGV[i + 2])
    local op = {name = ARGV[i], key = KEYS[tonumber(ARGV[i + 1])], args = {}}
    for j = 1, n do op.args[j] = ARGV[i + 2 + j] end
    ops[#ops + 1] = op
    i = i + 3 + n
end
local function integer(v) return v == false or v == nil or string.match(v, '^%d+$') ~= nil end
local numeric_fields = {memories = true, edges = true, last_success = true, settled_generation = true}
-- The exact sum of two decimals (digit strings), without leading zeros:
-- Lua's numbers are doubles, exact only up to 2^53.
local function decimal_sum(a, b)
    local digits, carry, i, j = {}, 0, #a, #b
    while i > 0 or j > 0 or carry > 0 do
        local d = carry
        if i > 0 then d = d + string.byte(a, i) - 48; i = i - 1 end
        if j > 0 then d = d + string.byte(b, j) - 48; j = j - 1 end
        digits[#digits + 1] = string.char(48 + d % 10)
        carry = d >= 10 and 1 or 0
    end
    local sum = string.gsub(string.reverse(table.concat(digits)), '^0+', '')
    if sum == '' then return '0' end
    return sum
end
-- The most an agent's rounds_completed/tasks_completed can count to on
-- dreamtown (TOWN.AGENT INCR, like HINCRBY, refuses to pass i64).
local record_counter_max = '9223372036854775807'
local record_counters = {rounds_completed = true, tasks_completed = true}
for _, op in ipairs(ops) do
    local t = redis.call('TYPE', op.key)['ok']
    if t ~= 'none' and t ~= want[op.name] then
        return redis.error_reply('WRONGTYPE target key ' .. op.key .. ' holds a ' .. t .. ', not a ' .. want[op.name] .. ': nothing was written')
    end
    if op.name == 'record' and op.args[1] == 'merge' then
        -- A partial record's two counters add to the target's: each sum is
        -- made (and refused past the ceiling) here, before any write.
        op.sums = {}
        for j = 2, #op.args, 2 do
            local f, v = op.args[j], op.args[j + 1]
            local cur = record_counters[f] and redis.call('HGET', op.key, f)
            if cur and string.match(cur, '^%d+$') and string.match(v, '^%d+$') then
                local sum = decimal_sum(cur, v)
                if #sum > #record_counter_max or (#sum == #record_counter_max and sum > record_counter_max) then
                    return redis.error_reply('ERR counter ' .. f .. ' of ' .. op.key .. ' would be ' .. sum
                        .. ' (' .. cur .. ' + ' .. v .. '), above ' .. record_counter_max
                        .. ', the most dreamtown counts to: nothing was written')
                end
                op.sums[f] = sum
            end
        end
    end
    if op.name == 'counters' then
        for j = 1, #op.args, 2 do
            local f = op.args[j]
            if numeric_fields[f] and not (integer(op.args[j + 1]) and integer(redis.call('HGET', op.key, f))) then
                return redis.error_reply('ERR counter ' .. f .. ' of ' .. op.key .. ' is not an integer: nothing was written')
            end
        end
    end
end
local function larger(a, b)
    if #a ~= #b then if #a > #b then return a else return b end end
    if a > b then return a else return b end
end
local function id_parts(id)
    local ms, seq = string.match(id, '^(%d+)-(%d+)$')
    return tonumber(ms or '0'), tonumber(seq or '0')
end
local function id_above(a, b)
    local am, as = id_parts(a)
    local bm, bs = id_parts(b)
    return am > bm or (am == bm and as > bs)
end
local conflicts, reids, unclaimed = 0, 0, 0
for _, op in ipairs(ops) do
    local k, a = op.key, op.args
    if op.name == 'append' then
        for j = 1, #a do redis.call('RPUSH', k, a[j]) end
    elseif op.name == 'prepend' then
        for j = #a, 1, -1 do redis.call('LPUSH', k, a[j]) end
    elseif op.name == 'zaddnx' then
        for j = 1, #a, 2 do redis.call('ZADD', k, 'NX', a[j], a[j + 1]) end
    elseif op.name == 'sadd' then
        for j = 1, #a do redis.call('SADD', k, a[j]) end
    elseif op.name == 'hset' then
        for j = 1, #a, 2 do redis.call('HSET', k, a[j], a[j + 1]) end
    elseif op.name == 'record' then
        if a[1] == 'replace' then redis.call('DEL', k) end
        for j = 2, #a, 2 do
            local f = a[j]
            redis.call('HSET', k, f, op.sums and op.sums[f] or a[j + 1])
        end
    elseif op.name == 'hsetnx' then
        for j = 1, #a, 2 do redis.call('HSETNX', k, a[j], a[j + 1]) end
    elseif op.name == 'counters' then
        for j = 1, #a, 2 do
            local f, v = a[j], a[j + 1]
            local cur = redis.call('HGET', k, f)
            if f == 'memories' or f == 'edges' then
                -- Doubles are exact enough here: both are digit strings
                -- (checked above); a sum at most 4294967295 has addends
                -- below 2^53, so it is exact, and a larger true sum rounds
                -- to a double no smaller than the cap (rounding keeps
                -- order; a value too long for a double reads as inf), so
                -- min() gives the cap either way.
                redis.call('HSET', k, f, string.format('%d', math.min(4294967295, tonumber(cur or '0') + tonumber(v))))
            elseif f == 'last_success' or f == 'settled_generation' then
                redis.call('HSET', k, f, cur and larger(cur, v) or v)
            elseif f == 'pending' then
                if cur then
                    if cur ~= v then conflicts = conflicts + 1 end
                else
                    redis.call('HSET', k, f, v)
                end
            else
                redis.call('HSETNX', k, f, v)
            end
        end
    elseif op.name == 'activity' then
        local ttl = tonumber(a[1])
        for j = #a, 2, -1 do redis.call('LPUSH', k, a[j]) end
        redis.call('LTRIM', k, 0, 9)
        local cur = redis.call('PTTL', k)
        if ttl > 0 and cur < ttl then redis.call('PEXPIRE', k, ttl) end
    elseif op.name == 'flag' then
        local ttl = tonumber(a[2])
        local cur = redis.call('PTTL', k)
        if cur == -2 or (ttl < 0 and cur >= 0) or (ttl > 0 and cur >= 0 and cur < ttl) then
            if ttl > 0 then redis.call('SET', k, a[1], 'PX', ttl) else redis.call('SET', k, a[1]) end
        end
    elseif op.name == 'stream' then
        local ttl = tonumber(a[1])
        local restored = false
        if redis.call('EXISTS', k) == 0 then
            local reply = redis.pcall('RESTORE', k, 0, a[2])
            restored = type(reply) ~= 'table' or reply.err == nil
            if restored and ttl > 0 then redis.call('PEXPIRE', k, ttl) end
        end
        if not restored then
            local top = nil
            if redis.call('EXISTS', k) == 1 then
                local info = redis.call('XINFO', 'STREAM', k)
                for j = 1, #info, 2 do if info[j] == 'last-generated-id' then top = info[j + 1] end end
            end
            local j = 4
            for _ = 1, tonumber(a[3]) do
                local id, nf = a[j], tonumber(a[j + 1])
                local args = {}
                for f = 1, nf * 2 do args[f] = a[j + 1 + f] end
                if top == nil or id_above(id, top) then
                    redis.call('XADD', k, id, unpack(args))
                    top = id
                else
                    top = redis.call('XADD', k, '*', unpack(args))
                    reids = reids + 1
                end
                j = j + 2 + nf * 2
            end
            local groups = {}
            if redis.call('EXISTS', k) == 1 then
                for _, g in ipairs(redis.call('XINFO', 'GROUPS', k)) do
                    for f = 1, #g, 2 do if g[f] == 'name' then groups[g[f + 1]] = true end end
                end
            end
            for _ = 1, tonumber(a[j]) do
                local name, last = a[j + 1], a[j + 2]
                if not groups[name] then redis.call('XGROUP', 'CREATE', k, name, last, 'MKSTREAM') end
                unclaimed = unclaimed + tonumber(a[j + 3])
                j = j + 3
            end
        end
    end
end
redis.call('SADD', applied, ARGV[1])
return {1, conflicts, reids, unclaimed}
"#;

/// Apply `ops` as batch `batch` on the target, once.
#[cfg(feature = "net")]
pub async fn apply<C: ConnectionLike + Send>(
    con: &mut C,
    applied_set: &str,
    batch: &str,
    ops: &[Op],
) -> Result<Applied> {
    let mut call = redis::cmd("EVAL");
    call.arg(APPLY_LUA).arg(1 + ops.len()).arg(applied_set);
    for op in ops {
        call.arg(op.key());
    }
    call.arg(batch);
    for (index, op) in ops.iter().enumerate() {
        let (name, args) = op.encode();
        call.arg(name).arg(index + 2).arg(args.len());
        for arg in args {
            call.arg(arg);
        }
    }
    let (now, pending_conflicts, new_stream_ids, pending_not_carried): (i64, u64, u64, u64) =
        call.query_async(con).await?;
    Ok(Applied { now: now == 1, pending_conflicts, new_stream_ids, pending_not_carried })
}

/// Whether `batch` is recorded as applied on the target (the verification
/// before the source's copy is deleted: the script wrote it in the same
/// atomic step as the data).
#[cfg(feature = "net")]
pub async fn verify<C: ConnectionLike + Send>(con: &mut C, applied_set: &str, batch: &str) -> Result<bool> {
    let member: bool = redis::cmd("SISMEMBER").arg(applied_set).arg(batch).query_async(con).await?;
    Ok(member)
}
