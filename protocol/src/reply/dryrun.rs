//! `DREAMTOWN.DRYRUN`'s reply (and so `ACL DRYRUN`'s for a module command),
//! as `ACL DRYRUN` answers: `OK`, or a bulk string saying what the user
//! may not do (a refusal is not an error).

use super::{Reply, Unexpected, Value, Wire};

/// What the real call's ACL checks would decide.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DryRun {
    /// Every check passes: `OK`.
    Allowed,
    /// A check refuses: `This user has no permissions to run the '<command>'
    /// command` (or `... to access the '<name>' key`, or `channel`).
    Denied(String),
}

impl Reply<Vec<u8>> for DryRun {
    fn encode<W: Wire<Vec<u8>>>(self) -> W {
        match self {
            Self::Allowed => W::status(c"OK"),
            Self::Denied(text) => W::bulk(text.into_bytes()),
        }
    }

    fn decode(value: &Value<Vec<u8>>) -> Result<Self, Unexpected> {
        const DRYRUN: &str = "OK or a refusal";
        match value {
            Value::Status(word) if word == "OK" => Ok(Self::Allowed),
            Value::Bulk(text) => String::from_utf8(text.clone()).map(Self::Denied).map_err(|_| Unexpected(DRYRUN)),
            _ => Err(Unexpected(DRYRUN)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reply::law::holds;

    #[test]
    fn both_answers_decode_to_what_was_encoded() {
        holds(DryRun::Allowed);
        holds(DryRun::Denied("This user has no permissions to access the 'acme:dreams:ready' key".into()));
        assert!(DryRun::decode(&Value::Status("QUEUED".into())).is_err());
        assert!(DryRun::decode(&Value::Integer(1)).is_err());
    }
}
