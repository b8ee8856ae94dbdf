//! Message priority and where a message goes when it is sent: urgent and
//! high priority jump the queue (inbox head), normal and low wait their
//! turn (inbox tail), and an urgent send uses the urgent inbox.

/// A tinytown message priority (`low|normal|high|urgent`, any case).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    /// `low`.
    Low,
    /// `normal` (also what a message without a priority gets).
    Normal,
    /// `high`.
    High,
    /// `urgent`.
    Urgent,
}

impl Priority {
    /// Parse a priority name, ignoring case.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Low, Self::Normal, Self::High, Self::Urgent]
            .into_iter()
            .find(|priority| priority.as_str().eq_ignore_ascii_case(name))
    }

    /// The name as tinytown writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Normal => "normal",
            Self::High => "high",
            Self::Urgent => "urgent",
        }
    }

    /// Where a normal (not `URGENT`) send puts a message of this priority.
    pub fn destination(self) -> Destination {
        match self {
            Self::Urgent | Self::High => Destination::InboxHead,
            Self::Normal | Self::Low => Destination::InboxTail,
        }
    }
}

/// Where a message is put.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Destination {
    /// The head of the urgent inbox (`LPUSH`).
    Urgent,
    /// The head of the inbox (`LPUSH`).
    InboxHead,
    /// The tail of the inbox (`RPUSH`).
    InboxTail,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_case_insensitive() {
        assert_eq!(Priority::parse("urgent"), Some(Priority::Urgent));
        assert_eq!(Priority::parse("HIGH"), Some(Priority::High));
        assert_eq!(Priority::parse("Normal"), Some(Priority::Normal));
        assert_eq!(Priority::parse("lOw"), Some(Priority::Low));
        assert_eq!(Priority::parse("critical"), None);
        assert_eq!(Priority::parse(""), None);
        assert_eq!(Priority::parse("normal "), None);
    }

    #[test]
    fn urgent_and_high_jump_the_queue() {
        assert_eq!(Priority::Urgent.destination(), Destination::InboxHead);
        assert_eq!(Priority::High.destination(), Destination::InboxHead);
        assert_eq!(Priority::Normal.destination(), Destination::InboxTail);
        assert_eq!(Priority::Low.destination(), Destination::InboxTail);
    }
}
