//! Leases on reliably received Town messages: `TOWN.RECV ... RELIABLE
//! LEASE <secs>` leases each message by id; when a lease runs out without
//! `TOWN.ACK`, that message leaves the agent's pending list for the head of
//! its inbox (received again next) and nothing else moves. The lease set
//! (one sorted set per agent, member = message id, score = deadline ms)
//! works as Dreams' does ([`crate::dreams::lease`]): after an expiry the id
//! stays with the score [`EXPIRED`], so a late `TOWN.ACK` still finds the
//! message in the inbox and removes it.

use crate::dreams::lease::{LeaseStore, EXPIRED};

use super::message::{has_id, message_id};

/// One agent's mail as leases see it.
pub trait AgentMail {
    /// The pending list, oldest first.
    fn pending(&self) -> Vec<Vec<u8>>;
    /// Remove the first pending message equal to `message`.
    fn remove_pending(&mut self, message: &[u8]) -> bool;
    /// Remove the first pending message (oldest first) that `matches`
    /// accepts, reading no further; whether one was removed.
    fn remove_first_pending(&mut self, matches: &mut dyn FnMut(&[u8]) -> bool) -> bool;
    /// Remove the first inbox message (head first) that `matches`
    /// accepts, reading no further; whether one was removed.
    fn remove_first_inbox(&mut self, matches: &mut dyn FnMut(&[u8]) -> bool) -> bool;
    /// Put `messages` at the head of the inbox, the first at the very head.
    fn push_inbox_head(&mut self, messages: &[Vec<u8>]);
}

/// Expire up to `limit` leases due at `now_ms`: the pending messages with
/// those ids go to the head of the inbox, in the order they were received,
/// and keep an [`EXPIRED`] marker; an id no longer pending just loses its
/// lease. How many messages went back.
pub fn expire_due(mail: &mut impl AgentMail, leases: &mut impl LeaseStore, now_ms: i64, limit: u64) -> u64 {
    let due = leases.due(now_ms, limit);
    if due.is_empty() {
        return 0;
    }
    // Sets, not lists: one pass over pending costs O(pending + due), not
    // O(pending x due) (up to 1,000 due ids per pass).
    let wanted: std::collections::HashSet<&[u8]> = due.iter().map(Vec::as_slice).collect();
    let mut back = Vec::new();
    let mut found: std::collections::HashSet<Vec<u8>> = std::collections::HashSet::new();
    for message in mail.pending() {
        let Some(id) = message_id(&message) else { continue };
        if wanted.contains(id.as_bytes()) && found.insert(id.as_bytes().to_vec()) {
            back.push(message);
        }
    }
    for message in &back {
        mail.remove_pending(message);
    }
    mail.push_inbox_head(&back);
    for id in &due {
        if found.contains(id.as_slice()) {
            leases.set(id, EXPIRED);
        } else {
            leases.remove(id);
        }
    }
    back.len() as u64
}

/// Acknowledge message `id`: the first pending message with it, or, when
/// its lease ran out and it went back, the first inbox message with it.
/// The id's lease entry goes in any case. Whether a message was removed.
/// Each list is read only as far as the message (with one consumer, the
/// pending list holds just it).
pub fn acknowledge(mail: &mut impl AgentMail, leases: &mut impl LeaseStore, id: &[u8]) -> bool {
    let expired = leases.score(id) == Some(EXPIRED);
    leases.remove(id);
    let mut carries_id = |message: &[u8]| may_carry_id(message, id) && has_id(message, id);
    if mail.remove_first_pending(&mut carries_id) {
        return true;
    }
    expired && mail.remove_first_inbox(&mut carries_id)
}

/// Can `message`'s `id` be `id`? A message without a backslash has no JSON
/// escape, so its id, if `id`, appears in it byte for byte: the others are
/// passed over without parsing them (each parse costs about a microsecond,
/// and an agent with several consumers has several messages pending).
fn may_carry_id(message: &[u8], id: &[u8]) -> bool {
    memchr::memchr(b'\\', message).is_some() || contains(message, id)
}

/// Does `needle` occur in `haystack`? For a needle met once, in a message
/// of a few hundred bytes: each place its first byte occurs is compared
/// (`memchr::memmem::find` first builds a searcher, which costs more than
/// the whole search here).
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    let mut from = 0;
    while let Some(found) = haystack.get(from..).and_then(|tail| memchr::memchr(first, tail)) {
        let after = from + found + 1;
        if haystack.get(after..after + rest.len()) == Some(rest) {
            return true;
        }
        from = after;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dreams::lease::grant;
    use crate::dreams::memory::MemoryLeases;

    #[derive(Default)]
    struct Mail {
        pending: Vec<Vec<u8>>,
        inbox: Vec<Vec<u8>>,
    }

    impl AgentMail for Mail {
        fn pending(&self) -> Vec<Vec<u8>> {
            self.pending.clone()
        }
        fn remove_pending(&mut self, message: &[u8]) -> bool {
            match self.pending.iter().position(|m| m == message) {
                Some(at) => {
                    self.pending.remove(at);
                    true
                }
                None => false,
            }
        }
        fn remove_first_pending(&mut self, matches: &mut dyn FnMut(&[u8]) -> bool) -> bool {
            remove_first(&mut self.pending, matches)
        }
        fn remove_first_inbox(&mut self, matches: &mut dyn FnMut(&[u8]) -> bool) -> bool {
            remove_first(&mut self.inbox, matches)
        }
        fn push_inbox_head(&mut self, messages: &[Vec<u8>]) {
            let mut head = messages.to_vec();
            head.append(&mut self.inbox);
            self.inbox = head;
        }
    }

    fn remove_first(list: &mut Vec<Vec<u8>>, matches: &mut dyn FnMut(&[u8]) -> bool) -> bool {
        match list.iter().position(|m| matches(m)) {
            Some(at) => {
                list.remove(at);
                true
            }
            None => false,
        }
    }

    fn msg(id: &str) -> Vec<u8> {
        format!("{{\"id\":\"{id}\",\"body\":1}}").into_bytes()
    }

    #[test]
    fn due_messages_go_to_the_inbox_head_in_received_order() {
        let mut mail = Mail { pending: vec![msg("a"), msg("b"), msg("c")], inbox: vec![msg("x")] };
        let mut leases = MemoryLeases::default();
        grant(&mut leases, b"a", 10);
        grant(&mut leases, b"c", 10);
        grant(&mut leases, b"b", 99);
        assert_eq!(expire_due(&mut mail, &mut leases, 10, 100), 2);
        assert_eq!(mail.inbox, vec![msg("a"), msg("c"), msg("x")]);
        assert_eq!(mail.pending, vec![msg("b")]);
        assert_eq!(leases.score(b"a"), Some(EXPIRED));
        assert_eq!(leases.earliest(), Some(99));
    }

    #[test]
    fn an_id_no_longer_pending_just_loses_its_lease() {
        let mut mail = Mail::default();
        let mut leases = MemoryLeases::default();
        grant(&mut leases, b"gone", 1);
        assert_eq!(expire_due(&mut mail, &mut leases, 5, 100), 0);
        assert_eq!(leases.score(b"gone"), None);
    }

    #[test]
    fn ack_finds_an_id_written_with_escapes_and_skips_messages_that_cannot_carry_it() {
        let escaped = br#"{"id":"\u0061b","body":1}"#.to_vec();
        assert!(!may_carry_id(&msg("zz"), b"ab"));
        assert!(may_carry_id(&msg("ab"), b"ab"));
        assert!(may_carry_id(&escaped, b"ab"), "an escape may spell it");
        // "ab" appears in another message's body only: parsed, not matched.
        let mut mail = Mail { pending: vec![msg("zz"), br#"{"id":"x","b":"ab"}"#.to_vec(), escaped.clone()], inbox: vec![] };
        let mut leases = MemoryLeases::default();
        assert!(acknowledge(&mut mail, &mut leases, b"ab"));
        assert_eq!(mail.pending.len(), 2);
        assert!(!mail.pending.contains(&escaped));
    }

    #[test]
    fn contains_finds_every_occurrence_memmem_does() {
        let mut random = crate::test_random::Random::new(0x7a11_0c0d_e5ea_4c11);
        for _ in 0..20_000 {
            let haystack: Vec<u8> = (0..random.below(40)).map(|_| b"aab-\\"[random.below(5)]).collect();
            let needle: Vec<u8> = (0..random.below(5)).map(|_| b"aab-\\"[random.below(5)]).collect();
            assert_eq!(contains(&haystack, &needle), memchr::memmem::find(&haystack, &needle).is_some(),
                "{haystack:?} {needle:?}");
        }
        assert!(contains(b"x", b""));
        assert!(!contains(b"", b"x"));
        assert!(contains(br#"{"id":"8c10-4e93"}"#, b"8c10-4e93"));
    }

    #[test]
    fn ack_removes_the_message_wherever_its_lease_left_it() {
        let mut mail = Mail { pending: vec![msg("a")], inbox: vec![msg("z")] };
        let mut leases = MemoryLeases::default();
        grant(&mut leases, b"a", 1);
        expire_due(&mut mail, &mut leases, 1, 100);
        assert!(acknowledge(&mut mail, &mut leases, b"a"));
        assert_eq!(mail.inbox, vec![msg("z")]);
        assert!(!acknowledge(&mut mail, &mut leases, b"a"), "once");
        // Without a marker, the inbox is never touched.
        assert!(!acknowledge(&mut mail, &mut leases, b"z"));
        assert_eq!(mail.inbox, vec![msg("z")]);
    }

    #[test]
    fn ack_of_a_message_received_again_takes_it_from_pending() {
        let mut mail = Mail { pending: vec![msg("a")], inbox: vec![] };
        let mut leases = MemoryLeases::default();
        grant(&mut leases, b"a", 1);
        expire_due(&mut mail, &mut leases, 1, 100);
        // Received again, leased again.
        let again = mail.inbox.remove(0);
        mail.pending.push(again);
        grant(&mut leases, b"a", 50);
        assert!(acknowledge(&mut mail, &mut leases, b"a"));
        assert!(mail.pending.is_empty() && mail.inbox.is_empty());
        assert_eq!(leases.earliest(), None);
        assert!(!acknowledge(&mut mail, &mut leases, b"a"), "the second holder's ACK finds nothing");
    }
}
