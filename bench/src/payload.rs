//! What the loops write and read inside values: UUID-shaped ids from a
//! fixed seed (so every run writes the same data; bench/workloads.py
//! mirrors [`fake_uuid`] and [`town_message`] for bench/instructions.py),
//! tinytown's messages and agent records, and the two JSON fields the
//! loops look up in a reply without parsing it whole.

/// A fresh UUID-v4-shaped id (xorshift; the seed uses `uuid::new_v4`, whose
/// cost is client-side and not what is measured).
pub fn fake_uuid(state: &mut u64) -> String {
    let mut next = || {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    };
    let (a, b) = (next(), next());
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

/// The seed of the fire ids a Dreams prefill writes (the same every run).
pub const PREFILL_FIRE_IDS: u64 = 0x9e37_79b9_7f4a_7c15;
/// The seed of the ids of the messages an agent loop's prefill sends.
pub const AGENT_MESSAGE_IDS: u64 = 0x5851_f42d_4c95_7f2d;

/// The number after `"name":` in a JSON payload (the seed's Lua cjson writes
/// keys in no fixed order, so look the field up by name).
pub fn json_number(payload: &str, name: &str) -> Option<u64> {
    let at = payload.find(&format!("\"{name}\":"))? + name.len() + 3;
    let digits: String = payload.get(at..)?.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The string after `"name":"` in a JSON payload.
pub fn json_string<'a>(payload: &'a str, name: &str) -> Option<&'a str> {
    let at = payload.find(&format!("\"{name}\":\""))? + name.len() + 4;
    let rest = payload.get(at..)?;
    rest.get(..rest.find('"')?)
}

/// Message `i` of a dead agent's inbox, as tinytown serializes a `Message`:
/// one in five high priority (re-sent to the head), one in ten low, the
/// rest normal.
pub fn town_message(i: u64, to: &str, ids: &mut u64) -> String {
    let priority = match i % 10 {
        0 | 5 => "high",
        3 => "low",
        _ => "normal",
    };
    format!(
        "{{\"id\":\"{}\",\"from\":\"lead\",\"to\":\"{to}\",\"type\":\"task\",\"description\":\"Task {i}: write the parser for section {i}\",\"priority\":\"{priority}\",\"created_at\":\"2025-01-01T09:00:00Z\",\"correlation_id\":null}}",
        fake_uuid(ids)
    )
}

/// The id of a message made by [`town_message`].
pub fn message_id(message: &[u8]) -> Result<String, String> {
    let text = std::str::from_utf8(message).map_err(|e| e.to_string())?;
    json_string(text, "id").map(str::to_owned).ok_or_else(|| format!("a message without id: {text}"))
}

/// The seed's `move_message_to_inbox`: the message with `to` replaced
/// (tinytown re-serializes the parsed `Message`; a string replace does the
/// same client-side job, cheaper, so the seed's loop is if anything
/// flattered), and whether its priority sends it to the head.
pub fn readdress(message: &str, from: &str, to: &str) -> Option<(String, bool)> {
    let old_to = format!("\"to\":\"{from}\"");
    if !message.contains(&old_to) {
        return None;
    }
    let head = message.contains("\"priority\":\"high\"") || message.contains("\"priority\":\"urgent\"");
    Some((message.replacen(&old_to, &format!("\"to\":\"{to}\""), 1), head))
}

/// The fields of agent `i`'s record, as the seed's `set_agent_state` writes them.
pub fn agent_fields(i: u64, id: &str) -> Vec<(String, String)> {
    [
        ("id", id.to_owned()),
        ("name", format!("worker-{i}")),
        ("agent_type", "worker".into()),
        ("state", if i.is_multiple_of(3) { "working" } else { "idle" }.into()),
        ("cli", "claude".into()),
        ("created_at", "2025-01-01T09:00:00+00:00".into()),
        ("last_heartbeat", "2025-01-01T09:05:00.123+00:00".into()),
        ("tasks_completed", (i % 17).to_string()),
        ("rounds_completed", (i % 29).to_string()),
        ("last_active_at", "2025-01-01T09:05:00+00:00".into()),
        ("spawn_mode", "background".into()),
        ("nickname", format!("bee-{i}")),
    ]
    .into_iter()
    .map(|(field, value)| (field.to_owned(), value))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_messages_are_the_ones_workloads_py_mirrors() {
        // bench/workloads.py's _fake_uuid and agent_messages compute the
        // same (bench/instructions.py replays the agent loops with them).
        let mut state = PREFILL_FIRE_IDS;
        assert_eq!(fake_uuid(&mut state), "dc1b77ae-0bf3-4dad-864f-eeb9026e6076");
        assert_ne!(fake_uuid(&mut state), "dc1b77ae-0bf3-4dad-864f-eeb9026e6076");
        let mut ids = AGENT_MESSAGE_IDS;
        assert_eq!(
            town_message(0, "worker-1", &mut ids),
            r#"{"id":"8c10cc68-e190-4e93-8434-4ce7e7d2da2e","from":"lead","to":"worker-1","type":"task","description":"Task 0: write the parser for section 0","priority":"high","created_at":"2025-01-01T09:00:00Z","correlation_id":null}"#
        );
    }

    #[test]
    fn messages_carry_their_id_and_priority() {
        let mut ids = 1;
        let message = town_message(5, "a", &mut ids);
        let id = message_id(message.as_bytes()).unwrap();
        assert_eq!(id.len(), 36);
        let (moved, head) = readdress(&message, "a", "b").unwrap();
        assert!(head, "message 5 is high priority");
        assert!(moved.contains("\"to\":\"b\"") && !moved.contains("\"to\":\"a\""));
        assert_eq!(readdress(&moved, "a", "c"), None);
        assert!(!readdress(&town_message(1, "a", &mut ids), "a", "b").unwrap().1);
    }

    #[test]
    fn json_fields_are_found_by_name() {
        let payload = r#"{"fired_at":{"edges_since_last_cycle":0,"memories_since_last_cycle":12},"fire_id":"f-1"}"#;
        assert_eq!(json_number(payload, "memories_since_last_cycle"), Some(12));
        assert_eq!(json_number(payload, "edges_since_last_cycle"), Some(0));
        assert_eq!(json_string(payload, "fire_id"), Some("f-1"));
        assert_eq!(json_string(payload, "project"), None);
        assert_eq!(json_number(r#"{"n":"#, "n"), None);
    }

    #[test]
    fn agent_records_have_twelve_fields() {
        assert_eq!(agent_fields(3, "x").len(), 12);
    }
}
