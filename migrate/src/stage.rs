//! The source side of one batch: the tenant's keys are renamed, in one
//! atomic script, to staging names beside a manifest; they stay there
//! (invisible to the old code, nothing deleted) until the target holds
//! their contents, then one `UNLINK` removes them. A run that finds a
//! manifest finishes that batch first, so a tool killed anywhere leaves
//! either the keys where they were, or a staged batch the next run
//! completes.
//!
//! Staging names are `dreamtown-migrate:{<tenant>}:<family>:stage:<n>`
//! and the manifest `...:manifest`: the tenant is their hash tag, the same
//! one as dreamtown's keys of the tenant, so on a dreamtown cluster (the
//! source of `--reverse`) a batch is one slot and the script may touch all
//! of it. On a seed server (one node, keys of many slots) that does not
//! matter: a script may touch any key of a server that is not a cluster.

#[cfg(feature = "net")]
use redis::aio::ConnectionLike;

use super::Family;
#[cfg(feature = "net")]
use super::Result;

/// A staged batch: its id and each (original name, staging name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    /// Unique id of the batch (the target records it once applied).
    pub id: String,
    /// Original key name and where it is staged.
    pub keys: Vec<(Vec<u8>, Vec<u8>)>,
}

/// The manifest's name for `tenant`.
pub fn manifest(family: Family, tenant: &str) -> String {
    format!("dreamtown-migrate:{{{tenant}}}:{}:manifest", family.name())
}

/// The staging name of the `n`th key of a batch.
#[cfg(feature = "net")]
fn staging(family: Family, tenant: &str, n: usize) -> String {
    format!("dreamtown-migrate:{{{tenant}}}:{}:stage:{n}", family.name())
}

/// The set, on the target, of batch ids already applied there.
pub fn applied(family: Family, tenant: &str) -> String {
    format!("dreamtown-migrate:{{{tenant}}}:{}:applied", family.name())
}

impl Batch {
    /// Read a manifest's items (the batch id, then each original and
    /// staging name); `None` for an empty manifest (no batch staged).
    pub fn from_manifest(items: Vec<Vec<u8>>) -> Option<Self> {
        let mut items = items.into_iter();
        let id = items.next()?;
        let mut keys = Vec::new();
        while let (Some(original), Some(staged)) = (items.next(), items.next()) {
            keys.push((original, staged));
        }
        Some(Batch { id: String::from_utf8_lossy(&id).into_owned(), keys })
    }
}

/// The batch an earlier run staged and did not finish, if any.
#[cfg(feature = "net")]
pub async fn pending<C: ConnectionLike + Send>(con: &mut C, family: Family, tenant: &str) -> Result<Option<Batch>> {
    let items: Vec<Vec<u8>> =
        redis::cmd("LRANGE").arg(manifest(family, tenant)).arg(0).arg(-1).query_async(con).await?;
    Ok(Batch::from_manifest(items))
}

/// KEYS: manifest, then n originals, then n staging names; ARGV: batch id,
/// n, `new` or `extend`. Renames the originals that exist and lists them in
/// the manifest: as a new batch unless a manifest exists (an unfinished
/// batch: nothing is done), or added to the staged batch with this id.
#[cfg(feature = "net")]
const STAGE_LUA: &str = r"
local extend = ARGV[3] == 'extend'
if extend then
    if redis.call('LINDEX', KEYS[1], 0) ~= ARGV[1] then return -1 end
elseif redis.call('EXISTS', KEYS[1]) == 1 then
    return -1
end
local n = tonumber(ARGV[2])
local moved = 0
for i = 1, n do
    local original = KEYS[1 + i]
    local staged = KEYS[1 + n + i]
    if redis.call('EXISTS', original) == 1 then
        if moved == 0 and not extend then redis.call('RPUSH', KEYS[1], ARGV[1]) end
        redis.call('RENAME', original, staged)
        redis.call('RPUSH', KEYS[1], original, staged)
        moved = moved + 1
    end
end
return moved
";

/// Run STAGE_LUA for `keys`, staged from index `first` on; the number renamed.
#[cfg(feature = "net")]
async fn rename<C: ConnectionLike + Send>(
    con: &mut C,
    family: Family,
    tenant: &str,
    id: &str,
    first: usize,
    keys: &[Vec<u8>],
    mode: &str,
) -> Result<i64> {
    let mut call = redis::cmd("EVAL");
    call.arg(STAGE_LUA).arg(1 + 2 * keys.len()).arg(manifest(family, tenant));
    for key in keys {
        call.arg(key.as_slice());
    }
    for n in first..first + keys.len() {
        call.arg(staging(family, tenant, n));
    }
    call.arg(id).arg(keys.len()).arg(mode);
    Ok(call.query_async(con).await?)
}

/// Stage `keys` (those that still exist) as a new batch; `None` if none did
/// or another run staged a batch in between (the caller looks again).
#[cfg(feature = "net")]
pub async fn stage<C: ConnectionLike + Send>(
    con: &mut C,
    family: Family,
    tenant: &str,
    keys: &[Vec<u8>],
) -> Result<Option<Batch>> {
    if keys.is_empty() {
        return Ok(None);
    }
    let id = uuid::Uuid::new_v4().to_string();
    if rename(con, family, tenant, &id, 0, keys, "new").await? <= 0 {
        return Ok(None);
    }
    pending(con, family, tenant).await
}

/// Add `keys` (those that exist) to the staged `batch`, which the target
/// has not applied yet; the batch as it is now.
#[cfg(feature = "net")]
pub async fn extend<C: ConnectionLike + Send>(
    con: &mut C,
    family: Family,
    tenant: &str,
    batch: &Batch,
    keys: &[Vec<u8>],
) -> Result<Batch> {
    rename(con, family, tenant, &batch.id, batch.keys.len(), keys, "extend").await?;
    Ok(pending(con, family, tenant).await?.unwrap_or_else(|| batch.clone()))
}

/// KEYS: manifest, then n staging names, then their n originals; ARGV:
/// batch id, n. Puts staged keys back under their names where nothing took
/// their place since; the manifest keeps the rest (none: it goes). Returns
/// how many stay staged.
#[cfg(feature = "net")]
const RESTORE_LUA: &str = r"
if redis.call('LINDEX', KEYS[1], 0) ~= ARGV[1] then return -1 end
local n = tonumber(ARGV[2])
local kept = {}
for i = 1, n do
    local staged, original = KEYS[1 + i], KEYS[1 + n + i]
    if redis.call('EXISTS', staged) == 1 then
        if redis.call('EXISTS', original) == 0 then
            redis.call('RENAME', staged, original)
        else
            kept[#kept + 1] = original
            kept[#kept + 1] = staged
        end
    end
end
redis.call('DEL', KEYS[1])
if #kept > 0 then redis.call('RPUSH', KEYS[1], ARGV[1], unpack(kept)) end
return #kept / 2
";

/// Give a batch the target refused back to the old code: staged keys
/// return to their names (one atomic step); the number that stay staged
/// because the old code has written a key of that name since.
#[cfg(feature = "net")]
pub async fn restore<C: ConnectionLike + Send>(
    con: &mut C,
    family: Family,
    tenant: &str,
    batch: &Batch,
) -> Result<i64> {
    let mut call = redis::cmd("EVAL");
    call.arg(RESTORE_LUA).arg(1 + 2 * batch.keys.len()).arg(manifest(family, tenant));
    for (_, staged) in &batch.keys {
        call.arg(staged.as_slice());
    }
    for (original, _) in &batch.keys {
        call.arg(original.as_slice());
    }
    call.arg(&batch.id).arg(batch.keys.len());
    Ok(call.query_async(con).await?)
}

/// Delete a batch's staged keys and its manifest, in one `UNLINK` (one
/// atomic step; large values are freed off the main thread).
#[cfg(feature = "net")]
pub async fn finish<C: ConnectionLike + Send>(con: &mut C, family: Family, tenant: &str, batch: &Batch) -> Result<()> {
    let mut call = redis::cmd("UNLINK");
    for (_, staged) in &batch.keys {
        call.arg(staged.as_slice());
    }
    call.arg(manifest(family, tenant));
    let _: i64 = call.query_async(con).await?;
    Ok(())
}
