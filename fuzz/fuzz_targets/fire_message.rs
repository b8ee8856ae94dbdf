//! The fire message reader (`dreams::canonical::view`, `ReadFire`) against
//! serde_json, differentially: on any bytes the in-place reader answers
//! what serde_json answers or leaves the payload to it; it accepts only
//! the canonical layout (exactly what the writer makes of what it read);
//! every message read round-trips through the writer, byte for byte what
//! `serde_json::to_string` writes. Input starting with 0xff (never JSON)
//! instead builds a message from NUL-separated fields, so that the writer's
//! escapes are explored too.
#![no_main]

use dreamtown::dreams::canonical::view;
use dreamtown::dreams::message::{FireMessage, ReadFire, RegionWriteCounters};
use dreamtown::dreams::region::RegionKey;
use libfuzzer_sys::fuzz_target;

fn plain(text: &str) -> bool {
    text.bytes().all(|b| b != b'"' && b != b'\\' && b >= 0x20)
}

/// Write `message`, read it back both ways, and compare.
fn round_trip(message: &FireMessage) {
    let payload = message.to_payload();
    assert_eq!(payload, serde_json::to_string(message).expect("serializable"), "writer differs from serde_json");
    let canonical = plain(&message.region.org)
        && plain(&message.region.project)
        && plain(&message.fired_by)
        && message.fire_id.as_deref().is_none_or(plain);
    let fast = view(payload.as_bytes()).map(|view| view.to_message());
    assert_eq!(fast.is_some(), canonical, "in-place reader refused its own layout: {payload}");
    if let Some(fast) = fast {
        assert_eq!(&fast, message, "in-place read of {payload}");
    }
    assert_eq!(FireMessage::parse(payload.as_bytes()).as_ref(), Some(message), "parse of {payload}");
}

fn built(data: &[u8]) -> FireMessage {
    let mut fields = data.split(|&b| b == 0);
    let mut text = || String::from_utf8_lossy(fields.next().unwrap_or_default()).into_owned();
    let (org, project, fired_by, fire_id, numbers) = (text(), text(), text(), text(), text());
    let mut bytes = numbers.bytes().chain(std::iter::repeat(0));
    let mut number = || u64::from_le_bytes(std::array::from_fn(|_| bytes.next().unwrap_or(0)));
    let flags = number();
    FireMessage {
        region: RegionKey::new(org, project, number() as u32),
        fired_by,
        fired_at: (flags & 1 != 0).then(|| RegionWriteCounters {
            memories_since_last_cycle: number() as u32,
            edges_since_last_cycle: number() as u32,
            seconds_since_last_cycle: number(),
        }),
        fire_id: (flags & 2 != 0).then_some(fire_id),
        queued_payload: None,
        quiet_deferred: flags & 4 != 0,
    }
}

fuzz_target!(|data: &[u8]| {
    if let Some(rest) = data.strip_prefix(&[0xff]) {
        round_trip(&built(rest));
        return;
    }
    let by_serde: Option<FireMessage> = serde_json::from_slice(data).ok();
    if let Some(fast) = view(data) {
        let fast = fast.to_message();
        assert_eq!(Some(&fast), by_serde.as_ref(), "in-place reader and serde_json differ");
        // Only the canonical layout is read in place.
        assert_eq!(fast.to_payload().as_bytes(), data, "in-place reader accepted a non-canonical layout");
    }
    let read = ReadFire::read(data).map(|read| read.get().to_message());
    assert_eq!(read, by_serde, "ReadFire and serde_json differ");
    assert_eq!(FireMessage::parse(data), by_serde, "FireMessage::parse and serde_json differ");
    if let Some(message) = by_serde {
        round_trip(&message);
    }
});
