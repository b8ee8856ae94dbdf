//! What a read of an inbox hands back: every stored message, parsed when it
//! is a tinytown [`Message`] and as its exact bytes when it is not, so a
//! message the client cannot read is surfaced, never dropped (tinytown's
//! `peek_inbox` and `drain_inbox` skipped those, and its `receive` lost
//! them with an error).

use super::message::Message;
use crate::error::Error;

/// One message as read from an inbox, urgent inbox or pending list.
///
/// ```
/// use dreamtown_client::town::{AgentId, Delivery, Message, MessageType};
///
/// let sent = Message::new(AgentId::new(), AgentId::new(), MessageType::Ping);
/// let stored = serde_json::to_vec(&sent).unwrap();
/// let delivery = Delivery::from_payload(stored.clone());
/// assert_eq!(delivery.message(), Some(&sent));
/// assert_eq!(delivery.payload(), stored.as_slice());
/// assert_eq!(delivery.ack_id(), Some(sent.id.to_string()));
///
/// let odd = Delivery::from_payload(br#"{"id":"job-7","to":"worker-1"}"#.to_vec());
/// assert!(matches!(odd, Delivery::Unparsed { .. }));
/// assert_eq!(odd.ack_id().as_deref(), Some("job-7"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// A tinytown message.
    Parsed {
        /// The message.
        message: Message,
        /// Its bytes as stored.
        payload: Vec<u8>,
    },
    /// A stored message that is not a tinytown message (written by another
    /// tool, or by hand): its exact bytes and why it does not parse.
    Unparsed {
        /// The bytes as stored.
        payload: Vec<u8>,
        /// Why it is not a [`Message`].
        reason: String,
    },
}

impl Delivery {
    /// Parse stored bytes.
    ///
    /// ```
    /// use dreamtown_client::town::Delivery;
    /// let delivery = Delivery::from_payload(b"not json".to_vec());
    /// assert!(delivery.message().is_none());
    /// assert_eq!(delivery.payload(), b"not json");
    /// ```
    #[must_use]
    pub fn from_payload(payload: Vec<u8>) -> Self {
        match serde_json::from_slice::<Message>(&payload) {
            Ok(message) => Self::Parsed { message, payload },
            Err(error) => Self::Unparsed { payload, reason: error.to_string() },
        }
    }

    /// The message, if it parsed.
    ///
    /// ```
    /// use dreamtown_client::town::Delivery;
    /// assert_eq!(Delivery::from_payload(b"{}".to_vec()).message(), None);
    /// ```
    #[must_use]
    pub fn message(&self) -> Option<&Message> {
        match self {
            Self::Parsed { message, .. } => Some(message),
            Self::Unparsed { .. } => None,
        }
    }

    /// The stored bytes, parsed or not.
    ///
    /// ```
    /// use dreamtown_client::town::Delivery;
    /// assert_eq!(Delivery::from_payload(b"{}".to_vec()).payload(), b"{}");
    /// ```
    #[must_use]
    pub fn payload(&self) -> &[u8] {
        match self {
            Self::Parsed { payload, .. } | Self::Unparsed { payload, .. } => payload,
        }
    }

    /// The id `TOWN.ACK` matches for this message: the stored JSON's
    /// top-level string `id`, as written (also for messages that are not
    /// tinytown messages but carry one). `None` when there is none: such a
    /// message cannot be acknowledged and stays pending until requeued or
    /// reclaimed.
    ///
    /// ```
    /// use dreamtown_client::town::Delivery;
    /// assert_eq!(Delivery::from_payload(br#"{"id":7}"#.to_vec()).ack_id(), None);
    /// assert_eq!(Delivery::from_payload(br#"{"id":"x"}"#.to_vec()).ack_id().as_deref(), Some("x"));
    /// ```
    #[must_use]
    pub fn ack_id(&self) -> Option<String> {
        #[derive(serde::Deserialize)]
        struct Id {
            id: serde_json::Value,
        }
        match serde_json::from_slice::<Id>(self.payload()).ok()?.id {
            serde_json::Value::String(id) => Some(id),
            _ => None,
        }
    }

    /// The message, or [`Error::UnparsedMessage`] carrying the bytes.
    ///
    /// ```
    /// use dreamtown_client::{Error, town::Delivery};
    /// let error = Delivery::from_payload(b"[]".to_vec()).into_message().unwrap_err();
    /// assert!(matches!(error, Error::UnparsedMessage { ref payload, .. } if payload == b"[]"));
    /// ```
    pub fn into_message(self) -> Result<Message, Error> {
        self.into_message_of("TOWN.RECV")
    }

    pub(crate) fn into_message_of(self, command: &'static str) -> Result<Message, Error> {
        match self {
            Self::Parsed { message, .. } => Ok(message),
            Self::Unparsed { payload, reason } => Err(Error::UnparsedMessage { command, payload, reason }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unparsed_messages_keep_every_byte() {
        let bytes = vec![b'{', 0xff, b'}'];
        let delivery = Delivery::from_payload(bytes.clone());
        assert!(matches!(&delivery, Delivery::Unparsed { payload, reason } if *payload == bytes && !reason.is_empty()));
        assert_eq!(delivery.ack_id(), None);
        match delivery.into_message_of("TOWN.PEEK") {
            Err(Error::UnparsedMessage { command, payload, .. }) => {
                assert_eq!(command, "TOWN.PEEK");
                assert_eq!(payload, bytes);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_ack_id_is_the_stored_text() {
        // An uppercase UUID parses, but TOWN.ACK compares the stored text.
        let json = br#"{"id":"4F1C9A6E-0B7D-4A43-9D7E-2B8F0C1D5E11","from":"00000000-0000-0000-0000-000000000001","to":"00000000-0000-0000-0000-000000000001","type":"ping","priority":"normal","created_at":"2025-01-01T09:00:00Z","correlation_id":null}"#;
        let delivery = Delivery::from_payload(json.to_vec());
        assert!(delivery.message().is_some());
        assert_eq!(delivery.ack_id().as_deref(), Some("4F1C9A6E-0B7D-4A43-9D7E-2B8F0C1D5E11"));
    }
}
