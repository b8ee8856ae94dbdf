//! Agent and task records over the key API: a hash opened with ACL and
//! type checks, replaced whole by an update (absent fields removed, one
//! `HDEL` and one `HSET`, in one atomic command), read as field/value pairs.

use crate::glue::key::{Key, KeyKind};
use crate::glue::reply::{CommandError, Reply};
use crate::glue::session::{Access, Session};
use crate::town::fields::FieldSet;

/// Check ACL for the record `name`, open it and refuse a non-hash.
pub fn open(session: &Session, name: &str, access: Access) -> Result<Key, CommandError> {
    let record = session.open(name.as_bytes(), access)?;
    record.require(KeyKind::Hash)?;
    Ok(record)
}

/// Make the record hold exactly `fields`.
pub fn replace(record: &Key, fields: &FieldSet) {
    let stored: Vec<Vec<u8>> = record.hgetall().into_iter().map(|(field, _)| field).collect();
    let removed = fields.removed(&stored);
    if !removed.is_empty() {
        record.hdel(&removed);
    }
    let pairs: Vec<(&[u8], &[u8])> =
        fields.pairs().iter().map(|(field, value)| (field.as_slice(), value.as_slice())).collect();
    record.hset(&pairs);
}

/// The record's fields and values as `HGETALL` replies them: a map in
/// RESP3, a flat array in RESP2 (empty if the record does not exist).
pub fn reply(record: &Key) -> Reply {
    Reply::bulk_map(record.hgetall())
}
