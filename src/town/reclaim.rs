//! Reclaiming a dead agent's messages for another agent: everything in its
//! urgent inbox, pending list and inbox is re-sent, in that order and head
//! first within each list, to the new agent with `to` rewritten. Urgent
//! messages stay urgent; the others go by priority as a send would place
//! them. A stored message that is no longer a valid message is never
//! dropped: it moves unchanged (urgent to urgent, anything else to the
//! inbox tail).

use super::message::readdressed;
use super::priority::Destination;

/// One message to deliver to the new agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    /// Where it goes.
    pub destination: Destination,
    /// The bytes to store.
    pub message: Vec<u8>,
    /// Was `to` rewritten (false: moved unchanged because it does not parse)?
    pub readdressed: bool,
}

/// The old agent's lists, each head first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OldMail {
    /// Urgent inbox.
    pub urgent: Vec<Vec<u8>>,
    /// Pending (received, unacknowledged) messages.
    pub pending: Vec<Vec<u8>>,
    /// Normal inbox.
    pub inbox: Vec<Vec<u8>>,
}

fn resend(message: Vec<u8>, to: &str, urgent: bool) -> Move {
    match readdressed(&message, to) {
        Some((envelope, moved)) => {
            Move { destination: envelope.destination(urgent), message: moved, readdressed: true }
        }
        None => Move {
            destination: if urgent { Destination::Urgent } else { Destination::InboxTail },
            message,
            readdressed: false,
        },
    }
}

/// The deliveries, in the order they must be applied.
pub fn reclaim(old: OldMail, to: &str) -> Vec<Move> {
    let urgent = old.urgent.into_iter().map(|m| resend(m, to, true));
    let others = old.pending.into_iter().chain(old.inbox).map(|m| resend(m, to, false));
    urgent.chain(others).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(moves: &[Move]) -> Vec<(Destination, String, bool)> {
        moves.iter().map(|m| (m.destination, String::from_utf8_lossy(&m.message).into_owned(), m.readdressed)).collect()
    }

    #[test]
    fn moves_everything_in_order_with_to_rewritten() {
        let old = OldMail {
            urgent: vec![br#"{"id":"u","to":"old"}"#.to_vec(), b"broken urgent".to_vec()],
            pending: vec![br#"{"id":"p","to":"old","priority":"low"}"#.to_vec()],
            inbox: vec![
                br#"{"id":"h","to":"old","priority":"high"}"#.to_vec(),
                br#"{"id":"n","to":"old"}"#.to_vec(),
                b"{not json".to_vec(),
            ],
        };
        use Destination::*;
        assert_eq!(
            text(&reclaim(old, "new")),
            vec![
                (Urgent, r#"{"id":"u","to":"new"}"#.into(), true),
                (Urgent, "broken urgent".into(), false),
                (InboxTail, r#"{"id":"p","to":"new","priority":"low"}"#.into(), true),
                (InboxHead, r#"{"id":"h","to":"new","priority":"high"}"#.into(), true),
                (InboxTail, r#"{"id":"n","to":"new"}"#.into(), true),
                (InboxTail, "{not json".into(), false),
            ]
        );
    }

    #[test]
    fn nothing_to_move() {
        assert!(reclaim(OldMail::default(), "new").is_empty());
    }
}
