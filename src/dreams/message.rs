//! The fire message: the JSON payload that travels through the queue, byte
//! for byte as the seed's serde writes it (fields in struct order, optional
//! fields omitted when empty).

use serde::{Deserialize, Serialize};

use super::region::RegionKey;

/// A shared counter snapshot owned by one fire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionWriteCounters {
    /// Memories written since the last successful cycle.
    pub memories_since_last_cycle: u32,
    /// Edges written since the last successful cycle.
    pub edges_since_last_cycle: u32,
    /// Seconds since the last successful cycle.
    pub seconds_since_last_cycle: u64,
}

/// One queued region payload: region coordinates and who fired.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FireMessage {
    /// The region to consolidate.
    pub region: RegionKey,
    /// Firing node id (diagnostics).
    pub fired_by: String,
    /// Counter snapshot owned by this fire; absent on explicit fires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fired_at: Option<RegionWriteCounters>,
    /// Unique pending token that rejects stale acknowledgements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fire_id: Option<String>,
    /// The exact queue member this message was read from (never serialized):
    /// acknowledgement removes exactly this payload.
    #[serde(skip)]
    pub queued_payload: Option<String>,
    /// One-pass quiet-hours reorder marker; marked work runs next time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quiet_deferred: bool,
}

impl FireMessage {
    /// Parse a queue member. `None` if it is not a fire message.
    pub fn parse(payload: &[u8]) -> Option<Self> {
        serde_json::from_slice(payload).ok()
    }

    /// The payload bytes as stored in the queue.
    pub fn to_payload(&self) -> String {
        // Serializing plain strings and integers cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_fire_keeps_the_seed_shape() {
        let message = FireMessage {
            region: RegionKey::new("o", "p", 3),
            fired_by: "node-a".into(),
            fired_at: None,
            fire_id: None,
            queued_payload: None,
            quiet_deferred: false,
        };
        let encoded = message.to_payload();
        assert_eq!(
            encoded,
            r#"{"region":{"org":"o","project":"p","memory_type":3},"fired_by":"node-a"}"#
        );
        assert_eq!(FireMessage::parse(encoded.as_bytes()), Some(message));
    }

    #[test]
    fn counted_fire_writes_fields_in_struct_order() {
        let message = FireMessage {
            region: RegionKey::new("o", "p", 3),
            fired_by: "node-a".into(),
            fired_at: Some(RegionWriteCounters {
                memories_since_last_cycle: 5,
                edges_since_last_cycle: 0,
                seconds_since_last_cycle: 0,
            }),
            fire_id: Some("f".into()),
            queued_payload: Some("ignored".into()),
            quiet_deferred: true,
        };
        assert_eq!(
            message.to_payload(),
            r#"{"region":{"org":"o","project":"p","memory_type":3},"fired_by":"node-a","fired_at":{"memories_since_last_cycle":5,"edges_since_last_cycle":0,"seconds_since_last_cycle":0},"fire_id":"f","quiet_deferred":true}"#
        );
    }

    #[test]
    fn garbage_is_not_a_message() {
        assert_eq!(FireMessage::parse(b"not json"), None);
        assert_eq!(FireMessage::parse(b"{\"region\":1}"), None);
        assert_eq!(FireMessage::parse(&[0xff, 0xfe]), None);
    }
}
