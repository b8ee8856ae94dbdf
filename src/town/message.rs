//! A tinytown message as the module sees it: a JSON object whose string
//! `to` names the recipient and whose optional string `priority` (any case)
//! decides its place in the inbox. Everything else is the sender's business
//! and is stored byte for byte; reclaim rewrites only `to`.

use std::borrow::Cow;

use super::checked::{check, Checked, MemberValue, Seen};
use super::json::{FieldProblem, NotAnObject, Object};
use super::priority::{Destination, Priority};

/// What the module reads from a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// The recipient agent id.
    pub to: String,
    /// The priority, if the message has one.
    pub priority: Option<Priority>,
}

/// Why bytes are not a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MessageError {
    /// Not UTF-8 or not valid JSON.
    NotJson,
    /// JSON, but not an object.
    NotObject,
    /// No `to` member.
    MissingTo,
    /// `to` is not a string, is repeated, or is empty.
    BadTo,
    /// `priority` is not a string or is repeated.
    BadPriority,
    /// `priority` is a string but not a known priority.
    UnknownPriority(String),
}

impl std::fmt::Display for MessageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotJson => f.write_str("message is not valid JSON"),
            Self::NotObject => f.write_str("message must be a JSON object"),
            Self::MissingTo => f.write_str("message has no \"to\" (the recipient agent id)"),
            Self::BadTo => f.write_str("message \"to\" must be one non-empty string"),
            Self::BadPriority => f.write_str("message \"priority\" must be one string"),
            Self::UnknownPriority(name) => {
                write!(f, "message priority {name:?} is not one of low, normal, high, urgent")
            }
        }
    }
}

fn object(bytes: &[u8]) -> Result<Object<'_>, MessageError> {
    Object::parse(bytes).map_err(|problem| match problem {
        NotAnObject::NotUtf8 | NotAnObject::Invalid => MessageError::NotJson,
        NotAnObject::OtherValue => MessageError::NotObject,
    })
}

fn envelope_of(object: &Object<'_>) -> Result<Envelope, MessageError> {
    let to = match object.string("to") {
        Ok(Some(to)) if !to.is_empty() => to,
        Ok(None) => return Err(MessageError::MissingTo),
        Ok(Some(_)) | Err(FieldProblem::Repeated | FieldProblem::NotAString) => return Err(MessageError::BadTo),
    };
    let priority = match object.string("priority") {
        Ok(None) => None,
        Ok(Some(name)) => Some(Priority::parse(&name).ok_or(MessageError::UnknownPriority(name))?),
        Err(_) => return Err(MessageError::BadPriority),
    };
    Ok(Envelope { to, priority })
}

/// `to` and `priority` as one pass of serde_json over a message saw them,
/// judged as [`envelope_of`] judges the same members of an [`Object`].
fn envelope_from_members(to: Seen<'_>, priority: Seen<'_>) -> Result<Envelope, MessageError> {
    let to = match (to.count, to.first) {
        (0, _) => return Err(MessageError::MissingTo),
        (1, Some(MemberValue::Str(to))) if !to.is_empty() => to.into_owned(),
        _ => return Err(MessageError::BadTo),
    };
    let priority = match (priority.count, priority.first) {
        (0, _) => None,
        (1, Some(MemberValue::Str(name))) => {
            Some(Priority::parse(&name).ok_or_else(|| MessageError::UnknownPriority(name.into_owned()))?)
        }
        _ => return Err(MessageError::BadPriority),
    };
    Ok(Envelope { to, priority })
}

impl Envelope {
    /// Validate `bytes` as a message. One pass of serde_json, reading `to`
    /// and `priority` on the way: the same verdict as [`Object::parse`]
    /// followed by `envelope_of` (a unit test compares them), without
    /// locating every member (the send path needs only these two).
    pub fn parse(bytes: &[u8]) -> Result<Self, MessageError> {
        let text = std::str::from_utf8(bytes).map_err(|_| MessageError::NotJson)?;
        match check(text, ["to", "priority"]).map_err(|_| MessageError::NotJson)? {
            Checked::Object([to, priority]) => envelope_from_members(to, priority),
            Checked::Other => Err(MessageError::NotObject),
        }
    }

    /// Where sending this message puts it (`urgent`: the `URGENT` option).
    pub fn destination(&self, urgent: bool) -> Destination {
        if urgent {
            return Destination::Urgent;
        }
        self.priority.unwrap_or(Priority::Normal).destination()
    }
}

/// The message `bytes` addressed to `to` instead, every other member kept
/// byte for byte and in place; `None` if `bytes` is not a valid message.
pub fn readdressed(bytes: &[u8], to: &str) -> Option<(Envelope, Vec<u8>)> {
    let object = object(bytes).ok()?;
    let envelope = envelope_of(&object).ok()?;
    let recipient = serde_json::to_string(to).ok()?;
    let text = object.replace("to", &recipient);
    Some((Envelope { to: to.to_owned(), ..envelope }, text.into_bytes()))
}

/// The string `id` of a stored message, if it is a JSON object with one.
pub fn message_id(bytes: &[u8]) -> Option<String> {
    id_member(bytes).map(Cow::into_owned)
}

/// Is `id` the string `id` of the stored message `bytes` (as
/// [`message_id`] reads it)? Nothing allocated unless the id has escapes.
pub fn has_id(bytes: &[u8], id: &[u8]) -> bool {
    id_member(bytes).is_some_and(|found| found.as_bytes() == id)
}

/// The one `id` member of a JSON object, when it is a string: one pass of
/// serde_json reading that member on the way, the same verdict as
/// [`Object::parse`] then [`Object::string`] (a unit test compares them)
/// at a third of the cost (no member table, no second parse of the id).
pub(crate) fn id_member(bytes: &[u8]) -> Option<Cow<'_, str>> {
    let text = std::str::from_utf8(bytes).ok()?;
    match check(text, ["id"]).ok()? {
        Checked::Object([Seen { count: 1, first: Some(MemberValue::Str(id)) }]) => Some(id),
        _ => None,
    }
}

/// Is `bytes` a JSON object (what a broadcast must be)?
pub fn is_object(bytes: &[u8]) -> Result<(), MessageError> {
    object(bytes).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = r#"{"id":"6f1c","from":"a","to":"b","type":"task","description":"d","priority":"normal","created_at":"2025-01-01T00:00:00Z","correlation_id":null}"#;

    #[test]
    fn reads_recipient_and_priority() {
        assert_eq!(Envelope::parse(SEED.as_bytes()), Ok(Envelope { to: "b".into(), priority: Some(Priority::Normal) }));
        assert_eq!(
            Envelope::parse(br#"{"to":"b","priority":"URGENT"}"#),
            Ok(Envelope { to: "b".into(), priority: Some(Priority::Urgent) })
        );
        assert_eq!(Envelope::parse(br#"{"to":"b"}"#), Ok(Envelope { to: "b".into(), priority: None }));
    }

    #[test]
    fn destinations() {
        let parse = |text: &str| Envelope::parse(text.as_bytes()).unwrap();
        assert_eq!(parse(r#"{"to":"b"}"#).destination(false), Destination::InboxTail);
        assert_eq!(parse(r#"{"to":"b","priority":"low"}"#).destination(false), Destination::InboxTail);
        assert_eq!(parse(r#"{"to":"b","priority":"High"}"#).destination(false), Destination::InboxHead);
        assert_eq!(parse(r#"{"to":"b","priority":"urgent"}"#).destination(false), Destination::InboxHead);
        assert_eq!(parse(r#"{"to":"b","priority":"low"}"#).destination(true), Destination::Urgent);
    }

    #[test]
    fn rejects_bad_messages() {
        let error = |text: &[u8]| Envelope::parse(text).unwrap_err();
        assert_eq!(error(b"not json"), MessageError::NotJson);
        assert_eq!(error(b"{\"to\":\"b\"\0}"), MessageError::NotJson);
        assert_eq!(error(&[0xc3, 0x28]), MessageError::NotJson);
        assert_eq!(error(b"[\"to\"]"), MessageError::NotObject);
        assert_eq!(error(b"{}"), MessageError::MissingTo);
        assert_eq!(error(br#"{"to":7}"#), MessageError::BadTo);
        assert_eq!(error(br#"{"to":""}"#), MessageError::BadTo);
        assert_eq!(error(br#"{"to":"a","to":"b"}"#), MessageError::BadTo);
        assert_eq!(error(br#"{"to":"a","priority":1}"#), MessageError::BadPriority);
        // Issue 25's corner: a priority given twice, once under an escaped name.
        assert_eq!(error(br#"{"to":"a","priority":"low","pri\u006frity":"low"}"#), MessageError::BadPriority);
        assert_eq!(error(br#"{"to":"a","priority":"asap"}"#), MessageError::UnknownPriority("asap".into()));
    }

    #[test]
    fn one_pass_parse_agrees_with_the_member_scan() {
        let inputs = crate::town::checked::corpus::inputs();
        let mut verdicts = std::collections::HashMap::new();
        for bytes in &inputs {
            let by_scan = object(bytes).and_then(|object| envelope_of(&object));
            let one_pass = Envelope::parse(bytes);
            assert_eq!(one_pass, by_scan, "{:?}", String::from_utf8_lossy(bytes));
            let verdict = match one_pass {
                Ok(envelope) => format!("ok {:?}", envelope.priority),
                Err(MessageError::UnknownPriority(_)) => "unknown priority".into(),
                Err(error) => format!("{error:?}"),
            };
            *verdicts.entry(verdict).or_insert(0) += 1;
        }
        // Every verdict occurs, so the comparison covers every path.
        for verdict in [
            "NotJson",
            "NotObject",
            "MissingTo",
            "BadTo",
            "BadPriority",
            "unknown priority",
            "ok None",
            "ok Some(High)",
            "ok Some(Low)",
        ] {
            assert!(verdicts.get(verdict).copied().unwrap_or(0) > 20, "{verdict}: {verdicts:?}");
        }
    }

    #[test]
    fn readdressing_rewrites_only_to() {
        let (envelope, moved) = readdressed(SEED.as_bytes(), "c").unwrap();
        assert_eq!(envelope, Envelope { to: "c".into(), priority: Some(Priority::Normal) });
        assert_eq!(String::from_utf8(moved).unwrap(), SEED.replace(r#""to":"b""#, r#""to":"c""#));
        let (_, quoted) = readdressed(br#"{ "to" : "b" , "x" : 1e2 }"#, "we\"ird").unwrap();
        assert_eq!(quoted, br#"{ "to" : "we\"ird" , "x" : 1e2 }"#.to_vec());
        assert_eq!(readdressed(b"{\"no\":1}", "c"), None);
        assert_eq!(readdressed(b"garbage", "c"), None);
    }

    #[test]
    fn ids_of_stored_messages() {
        assert_eq!(message_id(SEED.as_bytes()), Some("6f1c".into()));
        assert_eq!(message_id(br#"{"id":1}"#), None);
        assert_eq!(message_id(br#"{"id":"x"}"#), Some("x".into()));
        assert_eq!(message_id(b"nope"), None);
    }

    #[test]
    fn one_pass_id_agrees_with_the_member_scan() {
        // The reading before the one-pass parse, kept as the reference.
        let by_scan = |bytes: &[u8]| Object::parse(bytes).ok()?.string("id").ok()?;
        let mut inputs = crate::town::checked::corpus::inputs();
        for text in [
            r#"{"id":"a","id":"a"}"#,
            r#"{"i\u0064":"a"}"#,
            r#"{"id":"\u0061"}"#,
            r#"{"id":"a","i\u0064":"b"}"#,
            r#"{"x":{"id":"a"}}"#,
            r#"{"id":["a"]}"#,
            r#"{"id":"a"} x"#,
            r#"{"id":"\ud800"}"#,
            r#"["id","a"]"#,
        ] {
            inputs.push(text.as_bytes().to_vec());
        }
        inputs.push(SEED.as_bytes().to_vec());
        inputs.push(b"{\"id\":\"\xff\"}".to_vec());
        let mut found = 0;
        for bytes in &inputs {
            let expected = by_scan(bytes);
            assert_eq!(message_id(bytes), expected, "{:?}", String::from_utf8_lossy(bytes));
            if let Some(id) = &expected {
                found += 1;
                assert!(has_id(bytes, id.as_bytes()));
                let mut other = id.clone().into_bytes();
                other.push(b'x');
                assert!(!has_id(bytes, &other));
            }
        }
        assert!(found > 20, "the corpus has messages with ids: {found}");
    }

    #[test]
    fn broadcasts_must_be_objects() {
        assert_eq!(is_object(br#"{"type":"hello"}"#), Ok(()));
        assert_eq!(is_object(b"1"), Err(MessageError::NotObject));
        assert_eq!(is_object(b"{"), Err(MessageError::NotJson));
    }
}
