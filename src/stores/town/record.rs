//! Agent and task records over the key API: a hash checked (ACL) in the
//! mode its command needs, then opened and type-checked; replaced whole by
//! an update (absent fields removed, one `HDEL` and one `HSET`, in one
//! atomic command), read as field/value pairs.

use crate::glue::access::{Mode, ReadsValues, Writes};
use crate::glue::key::{Key, KeyKind};
use crate::glue::reply::CommandError;
use crate::glue::session::{Checked, Session};
use crate::glue::string::OwnedString;
use crate::town::fields::FieldSet;
use dreamtown_protocol::reply::town as reply;

/// Check the record `name` for mode `M`.
pub fn check<M: Mode>(session: &Session, name: &str) -> Result<Checked<M>, CommandError> {
    session.check(OwnedString::new(name.as_bytes()))
}

/// Open a checked record, refusing a non-hash.
pub fn open<M: Mode>(session: &Session, checked: Checked<M>) -> Result<Key<M>, CommandError> {
    let record = checked.open(session)?;
    record.require(KeyKind::Hash)?;
    Ok(record)
}

/// Make the record hold exactly `fields`.
pub fn replace<M: Writes>(record: &Key<M>, fields: &FieldSet) {
    let stored = record.hash_field_names();
    let removed = fields.removed(&stored);
    if !removed.is_empty() {
        record.hdel(&removed);
    }
    let pairs: Vec<(&[u8], &[u8])> =
        fields.pairs().iter().map(|(field, value)| (field.as_slice(), value.as_slice())).collect();
    record.hset(&pairs);
}

/// The record's fields and values, as its reply carries them (`HGETALL`'s
/// shape; empty if the record does not exist).
pub fn read<M: ReadsValues>(record: &Key<M>) -> reply::Record<Vec<u8>> {
    reply::Record { fields: record.hgetall() }
}
