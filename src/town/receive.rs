//! How many messages a receive takes from each inbox: the urgent inbox is
//! drained first, then the normal inbox, up to the requested count. A
//! receive of urgent messages only reads the urgent inbox and by default
//! takes all of them, as tinytown's `receive_urgent` does.

/// What a receive asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReceiveRequest {
    /// `COUNT`, if given (at least 1).
    pub count: Option<u64>,
    /// `URGENT`: read only the urgent inbox.
    pub urgent_only: bool,
}

/// How many messages to take from the head of each inbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Take {
    /// From the urgent inbox.
    pub urgent: u64,
    /// From the normal inbox.
    pub inbox: u64,
}

impl Take {
    /// Nothing to take?
    pub fn is_empty(&self) -> bool {
        self.urgent == 0 && self.inbox == 0
    }
}

impl ReceiveRequest {
    /// The default count: all urgent messages, or one message.
    pub fn limit(&self) -> u64 {
        match (self.count, self.urgent_only) {
            (Some(count), _) => count,
            (None, true) => u64::MAX,
            (None, false) => 1,
        }
    }

    /// What to take given the inboxes' current lengths.
    pub fn take(&self, urgent_len: u64, inbox_len: u64) -> Take {
        let limit = self.limit();
        let urgent = urgent_len.min(limit);
        let inbox = if self.urgent_only { 0 } else { inbox_len.min(limit - urgent) };
        Take { urgent, inbox }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(count: Option<u64>, urgent_only: bool) -> ReceiveRequest {
        ReceiveRequest { count, urgent_only }
    }

    #[test]
    fn urgent_messages_come_first() {
        assert_eq!(request(None, false).take(2, 5), Take { urgent: 1, inbox: 0 });
        assert_eq!(request(Some(3), false).take(2, 5), Take { urgent: 2, inbox: 1 });
        assert_eq!(request(Some(10), false).take(2, 5), Take { urgent: 2, inbox: 5 });
        assert_eq!(request(None, false).take(0, 5), Take { urgent: 0, inbox: 1 });
        assert!(request(None, false).take(0, 0).is_empty());
    }

    #[test]
    fn urgent_only_reads_all_urgent_by_default() {
        assert_eq!(request(None, true).take(7, 5), Take { urgent: 7, inbox: 0 });
        assert_eq!(request(Some(2), true).take(7, 5), Take { urgent: 2, inbox: 0 });
        assert!(request(None, true).take(0, 5).is_empty());
    }

    #[test]
    fn huge_counts_are_bounded_by_what_is_there() {
        assert_eq!(request(Some(u64::MAX), false).take(u64::MAX, 3), Take { urgent: u64::MAX, inbox: 0 });
        assert_eq!(request(Some(u64::MAX), false).take(1, 3), Take { urgent: 1, inbox: 3 });
    }
}
