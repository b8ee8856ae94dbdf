//! The Town message envelope (`Envelope::parse`, one serde_json pass) and
//! the JSON object reader (`json::Object`, member spans) against
//! `serde_json::Value`: the same verdict on any bytes; the members found
//! are the object's (each value span is that member's JSON); the one-pass
//! envelope agrees with the member-span reading; readdressing changes
//! `to` and nothing else, and readdressing back restores the message.
#![no_main]

use std::collections::BTreeSet;

use dreamtown::town::json::{NotAnObject, Object};
use dreamtown::town::message::{is_object, message_id, readdressed, Envelope, MessageError};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const NEW_TO: &str = "fuzz \"agent\" \u{e9}\n\\";

fn without_to(value: &Value) -> Value {
    let mut value = value.clone();
    if let Some(map) = value.as_object_mut() {
        map.remove("to");
    }
    value
}

fuzz_target!(|data: &[u8]| {
    let value: Option<Value> = serde_json::from_slice(data).ok();
    let object = Object::parse(data);
    match (&value, &object) {
        (Some(Value::Object(map)), Ok(object)) => {
            let names: BTreeSet<&str> = object.members().iter().map(|m| m.name.as_str()).collect();
            let keys: BTreeSet<&str> = map.keys().map(String::as_str).collect();
            assert_eq!(names, keys, "member names differ from serde_json's keys");
            for (name, expected) in map {
                // serde_json keeps the last of repeated members.
                let last = object.named(name).last().expect("every key is a member");
                let text = object.value_text(last);
                let parsed: Value = serde_json::from_str(text).expect("a member's span is JSON");
                assert_eq!(&parsed, expected, "member {name:?} spans {text:?}");
            }
        }
        (Some(other), Err(NotAnObject::OtherValue)) => assert!(!other.is_object()),
        (None, Err(NotAnObject::Invalid)) => {}
        (None, Err(NotAnObject::NotUtf8)) => assert!(std::str::from_utf8(data).is_err()),
        (value, object) => panic!("serde_json says {value:?}, Object::parse says {object:?}"),
    }
    assert_eq!(is_object(data).is_ok(), matches!(value, Some(Value::Object(_))));

    let envelope = Envelope::parse(data);
    let readdressed = readdressed(data, NEW_TO);
    match (&envelope, &readdressed) {
        (Ok(envelope), Some((new, bytes))) => {
            let value = value.as_ref().expect("a message is JSON");
            assert_eq!(value.get("to").and_then(Value::as_str), Some(envelope.to.as_str()));
            match envelope.priority {
                Some(priority) => {
                    let name = value.get("priority").and_then(Value::as_str).expect("priority is a string");
                    assert!(name.eq_ignore_ascii_case(priority.as_str()));
                }
                None => assert!(value.get("priority").is_none()),
            }
            assert_eq!(new.to, NEW_TO);
            assert_eq!(new.priority, envelope.priority);
            let again = Envelope::parse(bytes).expect("a readdressed message is a message");
            assert_eq!(again, *new);
            let moved: Value = serde_json::from_slice(bytes).expect("JSON");
            assert_eq!(without_to(&moved), without_to(value), "readdressing changed another member");
            let (back_envelope, back) = dreamtown::town::message::readdressed(bytes, &envelope.to).expect("readdress back");
            assert_eq!(back_envelope, *envelope);
            let back: Value = serde_json::from_slice(&back).expect("JSON");
            assert_eq!(&back, value, "readdressing back did not restore the message");
        }
        (Err(_), None) => {}
        (envelope, readdressed) => panic!("Envelope::parse says {envelope:?}, readdressed says {readdressed:?}"),
    }
    if let Err(error) = &envelope {
        let expected = match &value {
            None => Some(MessageError::NotJson),
            Some(v) if !v.is_object() => Some(MessageError::NotObject),
            Some(v) if v.get("to").is_none() => Some(MessageError::MissingTo),
            _ => None,
        };
        if let Some(expected) = expected {
            assert_eq!(error, &expected);
        }
    }
    if let Some(id) = message_id(data) {
        let value = value.as_ref().expect("JSON");
        assert_eq!(value.get("id").and_then(Value::as_str), Some(id.as_str()));
    }
});
