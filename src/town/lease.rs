//! Leases on reliably received Town messages: `TOWN.RECV ... RELIABLE
//! LEASE <secs>` leases each message by id; when a lease runs out without
//! `TOWN.ACK`, that message leaves the agent's pending list for the head of
//! its inbox (received again next) and nothing else moves. The lease set
//! (one sorted set per agent, member = message id, score = deadline ms)
//! is [`crate::lease`]'s: after an expiry the id stays with the score
//! [`EXPIRED`], so a late `TOWN.ACK` still finds the message in the inbox
//! and removes it.

use std::borrow::Cow;

use crate::lease::expiry::{self, Expired, InFlight};
use crate::lease::{LeaseStore, EXPIRED};

use super::message::{has_id, id_member};

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
    /// Visit the pending messages head first with their indexes, until
    /// `visit` answers false. (By default through
    /// [`AgentMail::remove_first_pending`], removing nothing.)
    fn scan_pending(&mut self, visit: &mut dyn FnMut(u64, &[u8]) -> bool) {
        let mut at = 0;
        let mut going = true;
        self.remove_first_pending(&mut |message| {
            going = going && visit(at, message);
            at += 1;
            false
        });
    }
    /// Visit the inbox messages head first with their indexes, until
    /// `visit` answers false. (By default through
    /// [`AgentMail::remove_first_inbox`], removing nothing.)
    fn scan_inbox(&mut self, visit: &mut dyn FnMut(u64, &[u8]) -> bool) {
        let mut at = 0;
        let mut going = true;
        self.remove_first_inbox(&mut |message| {
            going = going && visit(at, message);
            at += 1;
            false
        });
    }
    /// Remove the pending message `message`, now at `index`, which is the
    /// first one equal to it (`LREM pending 1 <message>`).
    fn remove_pending_at(&mut self, _index: u64, message: &[u8]) {
        self.remove_first_pending(&mut |m| m == message);
    }
    /// Remove the inbox message `message`, now at `index`, which is the
    /// first one equal to it (`LREM inbox 1 <message>`).
    fn remove_inbox_at(&mut self, _index: u64, message: &[u8]) {
        self.remove_first_inbox(&mut |m| m == message);
    }
}

/// Expire up to `limit` leases due at `now_ms`: the pending messages with
/// those ids go to the head of the inbox, in the order they were received,
/// and keep an [`EXPIRED`] marker; an id no longer pending just loses its
/// lease. How many messages went back.
pub fn expire_due(mail: &mut impl AgentMail, leases: &mut impl LeaseStore, now_ms: i64, limit: u64) -> u64 {
    expire_due_counted(mail, leases, now_ms, limit).1
}

/// [`expire_due`], also saying how many due leases it handled (expired or
/// dropped): `(handled, requeued)`.
pub fn expire_due_counted(
    mail: &mut impl AgentMail,
    leases: &mut impl LeaseStore,
    now_ms: i64,
    limit: u64,
) -> (u64, u64) {
    expiry::expire_due(&mut PendingMail(mail), leases, now_ms, limit)
}

/// An agent's pending list under leases: a message's lease member is its
/// id; expired messages go back to the head of the inbox together, in the
/// order they were received.
struct PendingMail<'a, M: AgentMail>(&'a mut M);

impl<M: AgentMail> InFlight for PendingMail<'_, M> {
    fn lease_member(item: &[u8]) -> Option<Cow<'_, [u8]>> {
        id_member(item).map(|id| match id {
            Cow::Borrowed(id) => Cow::Borrowed(id.as_bytes()),
            Cow::Owned(id) => Cow::Owned(id.into_bytes()),
        })
    }
    fn scan(&mut self, visit: &mut dyn FnMut(u64, &[u8]) -> bool) {
        self.0.scan_pending(visit);
    }
    fn remove_at(&mut self, index: u64, item: &[u8]) {
        self.0.remove_pending_at(index, item);
    }
    fn requeue(&mut self, expired: Vec<Expired>, mark: &mut dyn FnMut(&[u8])) {
        let (members, back): (Vec<Vec<u8>>, Vec<Vec<u8>>) =
            expired.into_iter().map(|expired| (expired.member, expired.item)).unzip();
        self.0.push_inbox_head(&back);
        for member in &members {
            mark(member);
        }
    }
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

/// What one distinct id of a multi-id acknowledgement finds.
#[derive(Default)]
struct Wanted {
    /// How many times the id is given.
    times: usize,
    /// Its lease had run out (the message may be back in the inbox).
    expired: bool,
    /// The first `times` pending messages with the id: (index, message).
    pending: Vec<(u64, Vec<u8>)>,
    /// The first inbox message with the id, looked for only when the
    /// lease ran out and no pending message has the id.
    inbox: Option<(u64, Vec<u8>)>,
}

/// Acknowledge `ids` in order, exactly as one [`acknowledge`] per id would
/// (same removals, same effects in the same order), in O(pending + inbox +
/// ids): one pass over the pending list against a map of the ids, each
/// message parsed at most once, and one over the inbox only for ids whose
/// lease ran out and that no pending message carries (where one
/// [`acknowledge`] per id costs ids x pending). Whether each id removed a
/// message.
///
/// Per id, one acknowledgement after another: the first removes the
/// lease, then the first pending message with the id, else (lease run
/// out) the first inbox message with it; a repeat finds no lease, so it
/// removes the next pending message with the id or nothing. So the n-th
/// time an id is given it removes the n-th pending message with it, or
/// (the first time, none pending, lease run out) the inbox's first one.
pub fn acknowledge_many(mail: &mut impl AgentMail, leases: &mut impl LeaseStore, ids: &[&[u8]]) -> Vec<bool> {
    let mut wanted: std::collections::HashMap<&[u8], Wanted> = std::collections::HashMap::with_capacity(ids.len());
    for id in ids {
        wanted.entry(id).or_default().times += 1;
    }
    for (id, want) in wanted.iter_mut() {
        want.expired = leases.score(id) == Some(EXPIRED);
    }
    let mut missing = ids.len();
    if missing > 0 {
        mail.scan_pending(&mut |index, message| {
            if let Some(want) = id_member(message).and_then(|id| wanted.get_mut(id.as_bytes())) {
                if want.pending.len() < want.times {
                    want.pending.push((index, message.to_vec()));
                    missing -= 1;
                }
            }
            missing > 0
        });
    }
    let mut in_inbox = wanted.values().filter(|want| want.expired && want.pending.is_empty()).count();
    if in_inbox > 0 {
        mail.scan_inbox(&mut |index, message| {
            if let Some(want) = id_member(message).and_then(|id| wanted.get_mut(id.as_bytes())) {
                if want.expired && want.pending.is_empty() && want.inbox.is_none() {
                    want.inbox = Some((index, message.to_vec()));
                    in_inbox -= 1;
                }
            }
            in_inbox > 0
        });
    }
    // Apply in the order given. A removal shifts the later messages of its
    // list down by one: each index found is lowered by the removals before
    // it in its list (counted in a Fenwick tree: O(log n) each).
    let most = |found: &mut dyn Iterator<Item = u64>| found.max().map_or(0, |at| at as usize + 1);
    let mut gone_pending =
        Removed::new(most(&mut wanted.values().flat_map(|want| want.pending.iter().map(|(at, _)| *at))));
    let mut gone_inbox =
        Removed::new(most(&mut wanted.values().filter_map(|want| want.inbox.as_ref().map(|(at, _)| *at))));
    let mut used: std::collections::HashMap<&[u8], usize> = std::collections::HashMap::with_capacity(wanted.len());
    let mut removed = Vec::with_capacity(ids.len());
    for id in ids {
        let Some(want) = wanted.get(id) else {
            removed.push(false);
            continue;
        };
        let nth = used.entry(id).or_insert(0);
        let first = *nth == 0;
        *nth += 1;
        if first {
            leases.remove(id);
        }
        if let Some((index, message)) = want.pending.get(*nth - 1) {
            mail.remove_pending_at(gone_pending.take(*index), message);
            removed.push(true);
        } else if let (true, Some((index, message))) = (first, &want.inbox) {
            mail.remove_inbox_at(gone_inbox.take(*index), message);
            removed.push(true);
        } else {
            removed.push(false);
        }
    }
    removed
}

/// The original indexes already removed from one list, as a Fenwick tree
/// of counts: where an element first found at some index is now.
struct Removed(Vec<u32>);

impl Removed {
    fn new(len: usize) -> Self {
        Self(vec![0; len + 1])
    }

    /// The index now of the element first found at `index` (below the
    /// length given to [`Removed::new`]), which is then removed.
    fn take(&mut self, index: u64) -> u64 {
        let tree = &mut self.0;
        let mut before = 0u64;
        let mut at = index as usize;
        while at > 0 {
            before += u64::from(tree.get(at).copied().unwrap_or(0));
            at &= at - 1;
        }
        let mut at = index as usize + 1;
        while let Some(count) = tree.get_mut(at) {
            *count += 1;
            at += at & at.wrapping_neg();
        }
        index - before
    }
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
    use crate::lease::grant;
    use crate::lease::memory::MemoryLeases;

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
        fn scan_pending(&mut self, visit: &mut dyn FnMut(u64, &[u8]) -> bool) {
            scan(&self.pending, visit);
        }
        fn scan_inbox(&mut self, visit: &mut dyn FnMut(u64, &[u8]) -> bool) {
            scan(&self.inbox, visit);
        }
        fn remove_pending_at(&mut self, index: u64, message: &[u8]) {
            assert_eq!(self.pending.iter().position(|m| m == message), Some(index as usize));
            self.pending.remove(index as usize);
        }
        fn remove_inbox_at(&mut self, index: u64, message: &[u8]) {
            assert_eq!(self.inbox.iter().position(|m| m == message), Some(index as usize));
            self.inbox.remove(index as usize);
        }
    }

    fn scan(list: &[Vec<u8>], visit: &mut dyn FnMut(u64, &[u8]) -> bool) {
        for (index, message) in list.iter().enumerate() {
            if !visit(index as u64, message) {
                return;
            }
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
    fn a_long_pending_list_expires_a_step_at_a_time_head_first_nothing_lost() {
        let ids: Vec<String> = (0..500).map(|i| format!("m{i}")).collect();
        let mut mail = Mail { pending: ids.iter().map(|id| msg(id)).collect(), inbox: vec![] };
        let mut leases = MemoryLeases::default();
        for id in &ids {
            grant(&mut leases, id.as_bytes(), 10);
        }
        grant(&mut leases, b"orphan", 10);
        // Not due: stays pending and leased.
        mail.pending.push(msg("late"));
        grant(&mut leases, b"late", 99);
        let mut steps = 0;
        loop {
            let (handled, back) = expire_due_counted(&mut mail, &mut leases, 10, 100);
            assert!(handled <= 100 && back <= handled);
            if handled == 0 {
                break;
            }
            steps += 1;
        }
        assert_eq!(steps, 6, "five of 100 from the head, then the orphan");
        assert_eq!(mail.pending, vec![msg("late")]);
        let mut back = mail.inbox.clone();
        back.sort();
        let mut expected: Vec<Vec<u8>> = ids.iter().map(|id| msg(id)).collect();
        expected.sort();
        assert_eq!(back, expected);
        // Later steps went to the head, each in received order.
        assert_eq!(mail.inbox[0], msg("m400"));
        assert_eq!(mail.inbox[99], msg("m499"));
        assert_eq!(leases.score(b"orphan"), None);
        assert_eq!(leases.score(b"m7"), Some(EXPIRED));
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
        let mut mail =
            Mail { pending: vec![msg("zz"), br#"{"id":"x","b":"ab"}"#.to_vec(), escaped.clone()], inbox: vec![] };
        let mut leases = MemoryLeases::default();
        assert!(acknowledge(&mut mail, &mut leases, b"ab"));
        assert_eq!(mail.pending.len(), 2);
        assert!(!mail.pending.contains(&escaped));
    }

    #[test]
    fn many_ids_acknowledge_exactly_as_one_ack_per_id() {
        let mut random = crate::test_random::Random::new(0x5e70_f1d5);
        let names = ["a", "b", "c", "d", "e"];
        let pick = |random: &mut crate::test_random::Random| -> Vec<u8> {
            match random.below(8) {
                0 => b"garbage".to_vec(),
                1 => br#"{"id":"\u0061","n":1}"#.to_vec(),
                n => format!("{{\"id\":\"{}\",\"n\":{}}}", names[random.below(5)], n % 3).into_bytes(),
            }
        };
        for _ in 0..3_000 {
            let pending: Vec<Vec<u8>> = (0..random.below(7)).map(|_| pick(&mut random)).collect();
            let inbox: Vec<Vec<u8>> = (0..random.below(7)).map(|_| pick(&mut random)).collect();
            let mut leases = MemoryLeases::default();
            for name in names {
                match random.below(3) {
                    0 => grant(&mut leases, name.as_bytes(), 5),
                    1 => leases.set(name.as_bytes(), EXPIRED),
                    _ => {}
                }
            }
            let mut ids: Vec<&[u8]> = Vec::new();
            for _ in 0..random.below(8) {
                ids.push(names[random.below(5)].as_bytes());
            }
            if random.below(4) == 0 {
                ids.push(b"zz");
            }
            let mut one_by_one = (Mail { pending: pending.clone(), inbox: inbox.clone() }, leases.clone());
            let expected: Vec<bool> =
                ids.iter().map(|id| acknowledge(&mut one_by_one.0, &mut one_by_one.1, id)).collect();
            let mut batch = (Mail { pending, inbox }, leases);
            assert_eq!(acknowledge_many(&mut batch.0, &mut batch.1, &ids), expected, "{ids:?}");
            assert_eq!((batch.0.pending, batch.0.inbox), (one_by_one.0.pending, one_by_one.0.inbox));
            assert_eq!(batch.1, one_by_one.1);
        }
    }

    #[test]
    fn removed_indexes_shift_later_ones() {
        let mut gone = Removed::new(10);
        assert_eq!(gone.take(5), 5);
        assert_eq!(gone.take(2), 2);
        assert_eq!(gone.take(9), 7);
        assert_eq!(gone.take(0), 0);
        assert_eq!(gone.take(6), 3);
    }

    #[test]
    fn contains_finds_every_occurrence_memmem_does() {
        let mut random = crate::test_random::Random::new(0x7a11_0c0d_e5ea_4c11);
        for _ in 0..20_000 {
            let haystack: Vec<u8> = (0..random.below(40)).map(|_| b"aab-\\"[random.below(5)]).collect();
            let needle: Vec<u8> = (0..random.below(5)).map(|_| b"aab-\\"[random.below(5)]).collect();
            assert_eq!(
                contains(&haystack, &needle),
                memchr::memmem::find(&haystack, &needle).is_some(),
                "{haystack:?} {needle:?}"
            );
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
