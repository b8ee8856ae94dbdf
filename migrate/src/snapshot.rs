//! What one key holds, read in full with plain commands (so the same reader
//! serves a seed server without the module and a dreamtown server): its
//! type's contents and its remaining time to live.

#[cfg(feature = "net")]
use std::collections::HashMap;

#[cfg(feature = "net")]
use redis::aio::ConnectionLike;

#[cfg(feature = "net")]
use super::Result;

/// A stream entry: its id and field/value pairs.
pub type StreamEntry = (String, Vec<(Vec<u8>, Vec<u8>)>);

/// A consumer group of a stream: name, last delivered id, pending count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// The group's name.
    pub name: String,
    /// Its last delivered id.
    pub last_delivered: String,
    /// Entries delivered to it and not yet acknowledged.
    pub pending: u64,
}

/// The contents of a key.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A list, head first.
    List(Vec<Vec<u8>>),
    /// A sorted set: (member, score as the server prints it), lowest first.
    ZSet(Vec<(Vec<u8>, String)>),
    /// A hash.
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
    /// A set.
    Set(Vec<Vec<u8>>),
    /// A string.
    Str(Vec<u8>),
    /// A stream: its `DUMP` (restores ids, groups and pending entries exactly),
    /// its entries and groups (to merge into a stream that already exists).
    Stream {
        /// `DUMP` of the key.
        dump: Vec<u8>,
        /// Every entry, oldest first.
        entries: Vec<StreamEntry>,
        /// Its consumer groups.
        groups: Vec<Group>,
    },
    /// A type this tool does not move.
    Other(String),
}

/// A key read in full.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// The contents.
    pub value: Value,
    /// Remaining time to live in milliseconds, or `None` without one.
    pub pttl: Option<i64>,
}

impl Value {
    /// How many items it holds (list and set members, hash fields, stream entries; 1 for a string).
    pub fn len(&self) -> usize {
        match self {
            Self::List(items) | Self::Set(items) => items.len(),
            Self::ZSet(items) => items.len(),
            Self::Hash(fields) => fields.len(),
            Self::Str(_) | Self::Other(_) => 1,
            Self::Stream { entries, .. } => entries.len(),
        }
    }

    /// The Redis type's name.
    pub fn kind(&self) -> &str {
        match self {
            Self::List(_) => "list",
            Self::ZSet(_) => "zset",
            Self::Hash(_) => "hash",
            Self::Set(_) => "set",
            Self::Str(_) => "string",
            Self::Stream { .. } => "stream",
            Self::Other(kind) => kind,
        }
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Read `key`; `None` if it does not exist.
#[cfg(feature = "net")]
pub async fn read<C: ConnectionLike + Send>(con: &mut C, key: &[u8]) -> Result<Option<Snapshot>> {
    let kind: String = redis::cmd("TYPE").arg(key).query_async(con).await?;
    let value = match kind.as_str() {
        "none" => return Ok(None),
        "list" => Value::List(redis::cmd("LRANGE").arg(key).arg(0).arg(-1).query_async(con).await?),
        "set" => {
            let mut members: Vec<Vec<u8>> = redis::cmd("SMEMBERS").arg(key).query_async(con).await?;
            members.sort();
            Value::Set(members)
        }
        "hash" => Value::Hash(redis::cmd("HGETALL").arg(key).query_async(con).await?),
        "string" => Value::Str(redis::cmd("GET").arg(key).query_async(con).await?),
        "zset" => Value::ZSet(redis::cmd("ZRANGE").arg(key).arg(0).arg(-1).arg("WITHSCORES").query_async(con).await?),
        "stream" => {
            let dump: Vec<u8> = redis::cmd("DUMP").arg(key).query_async(con).await?;
            let raw: Vec<StreamEntry> = redis::cmd("XRANGE").arg(key).arg("-").arg("+").query_async(con).await?;
            let infos: Vec<HashMap<String, redis::Value>> =
                redis::cmd("XINFO").arg("GROUPS").arg(key).query_async(con).await?;
            let groups = infos
                .iter()
                .map(|info| Group {
                    name: text(info.get("name")),
                    last_delivered: text(info.get("last-delivered-id")),
                    pending: text(info.get("pending")).parse().unwrap_or(0),
                })
                .collect();
            Value::Stream { dump, entries: raw, groups }
        }
        other => Value::Other(other.to_owned()),
    };
    let pttl: i64 = redis::cmd("PTTL").arg(key).query_async(con).await?;
    Ok(Some(Snapshot { value, pttl: (pttl >= 0).then_some(pttl) }))
}

#[cfg(feature = "net")]
fn text(value: Option<&redis::Value>) -> String {
    match value {
        Some(redis::Value::BulkString(bytes)) => String::from_utf8_lossy(bytes).into_owned(),
        Some(redis::Value::SimpleString(text)) => text.clone(),
        Some(redis::Value::Int(number)) => number.to_string(),
        _ => String::new(),
    }
}
