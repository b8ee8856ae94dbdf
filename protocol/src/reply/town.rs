//! The `TOWN.*` replies: one type per command or subcommand, written by the
//! module and read by the client (see [`super`]). Most are one of a few
//! shapes (a count, a flag, `OK`, bulk strings, a record); each command's
//! name for its shape is an alias here, so a command's reply is found by
//! its name as its arguments are in [`crate::request::town`].

use super::read;
use super::Hash;
pub use super::{Done, Flag, Stats};
use super::{Reply, Unexpected, Value, Wire};

/// A non-negative integer: a length, or how many things the command moved,
/// removed or reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count(pub u64);

/// `TOWN.SEND`: the inbox's length after the message.
pub type Send = Count;
/// `TOWN.BROADCAST`: how many inboxes the message reached.
pub type Broadcast = Count;
/// `TOWN.ACK`: how many messages were acknowledged.
pub type Ack = Count;
/// `TOWN.RECLAIM`: how many messages moved back to the inbox.
pub type Reclaim = Count;
/// `TOWN.REQUEUE`: how many messages moved back to the inbox.
pub type Requeue = Count;
/// `TOWN.RESET`: how many keys were deleted.
pub type Reset = Count;
/// `TOWN.AGENT DEL`: how many of the agent's keys were deleted.
pub type AgentDel = Count;
/// `TOWN.BACKLOG PUSH`: the backlog's length after the push.
pub type BacklogPush = Count;
/// `TOWN.BACKLOG LEN`: the backlog's length.
pub type BacklogLen = Count;

impl<B> Reply<B> for Count {
    fn encode<W: Wire<B>>(self) -> W {
        W::count(self.0)
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        read::count(value, "a count").map(Self)
    }
}

/// `TOWN.AGENT INCR`: the counter's value after the increment (an integer
/// of the record, as `HINCRBY` replies it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AgentIncr(pub i64);

impl<B> Reply<B> for AgentIncr {
    fn encode<W: Wire<B>>(self) -> W {
        W::integer(self.0)
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        read::integer(value, "an integer").map(Self)
    }
}

/// `TOWN.EXTEND`'s reply: the lease was the caller's and is pushed out.
pub type Extend = Flag;
/// `TOWN.STOP CHECK`'s reply: a stop is requested.
pub type StopCheck = Flag;
/// `TOWN.STOP CLEAR`'s reply: there was a stop request.
pub type StopClear = Flag;
/// `TOWN.TASK DEL`'s reply: the task existed.
pub type TaskDel = Flag;
/// `TOWN.BACKLOG REMOVE`'s reply: the task was in the backlog.
pub type BacklogRemove = Flag;

/// `TOWN.AGENT SET`'s reply.
pub type AgentSet = Done;
/// `TOWN.AGENT HEARTBEAT`'s reply.
pub type AgentHeartbeat = Done;
/// `TOWN.TASK SET`'s reply.
pub type TaskSet = Done;
/// `TOWN.STOP REQUEST`'s reply.
pub type StopRequest = Done;
/// `TOWN.ACTIVITY LOG`'s reply.
pub type ActivityLog = Done;

/// Bulk strings, in order: `TOWN.PEEK` (the messages, head first) and
/// `TOWN.BACKLOG LIST` (the task ids, oldest first).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bulks<B> {
    /// The strings.
    pub items: Vec<B>,
}

/// `TOWN.PEEK`'s reply.
pub type Peek<B> = Bulks<B>;
/// `TOWN.BACKLOG LIST`'s reply.
pub type BacklogList<B> = Bulks<B>;

impl<B: Clone> Reply<B> for Bulks<B> {
    fn encode<W: Wire<B>>(self) -> W {
        W::bulks(self.items)
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        read_bulks(value, "an array of bulk strings").map(|items| Self { items })
    }
}

/// One bulk string or nil: `TOWN.BACKLOG POP` (the oldest task id; nil
/// when the backlog is empty) and `TOWN.ACTIVITY GET` (the agent's recent
/// activity; nil when there is none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaybeBulk<B>(pub Option<B>);

/// `TOWN.BACKLOG POP`'s reply.
pub type BacklogPop<B> = MaybeBulk<B>;
/// `TOWN.ACTIVITY GET`'s reply.
pub type ActivityGet<B> = MaybeBulk<B>;

impl<B: Clone> Reply<B> for MaybeBulk<B> {
    fn encode<W: Wire<B>>(self) -> W {
        self.0.map_or_else(W::nil, W::bulk)
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        match value {
            Value::Nil => Ok(Self(None)),
            other => read::bulk(other, "a bulk string or nil").cloned().map(|bulk| Self(Some(bulk))),
        }
    }
}

/// `TOWN.LEN`: `[inbox, urgent, pending]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Len {
    /// Messages in the inbox.
    pub inbox: u64,
    /// Messages in the urgent inbox.
    pub urgent: u64,
    /// Messages received reliably and not yet acknowledged.
    pub pending: u64,
}

impl<B> Reply<B> for Len {
    fn encode<W: Wire<B>>(self) -> W {
        W::array(vec![W::count(self.inbox), W::count(self.urgent), W::count(self.pending)])
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        let [inbox, urgent, pending] = read::counts(value, "[inbox, urgent, pending]")?;
        Ok(Self { inbox, urgent, pending })
    }
}

/// `TOWN.RECV`: the messages taken, head first, or the wait's end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recv<B> {
    /// The messages (none: an empty array, the inboxes were empty and the
    /// call did not wait).
    Messages(Vec<B>),
    /// The wait ran out, or a blocking call found nothing inside MULTI or
    /// a script: the null array, `*-1` in RESP2, as `BLPOP`'s (`_` in
    /// RESP3).
    TimedOut,
}

impl<B> Recv<B> {
    /// The messages (none when the wait ran out).
    pub fn into_messages(self) -> Vec<B> {
        match self {
            Self::Messages(messages) => messages,
            Self::TimedOut => Vec::new(),
        }
    }
}

impl<B: Clone> Reply<B> for Recv<B> {
    fn encode<W: Wire<B>>(self) -> W {
        match self {
            Self::Messages(messages) => W::bulks(messages),
            Self::TimedOut => W::nil_array(),
        }
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        const RECV: &str = "an array of messages or nil";
        match value {
            Value::Nil | Value::NilArray => Ok(Self::TimedOut),
            other => read_bulks(other, RECV).map(Self::Messages),
        }
    }
}

/// `TOWN.RECV ... ACK <message-id>`: `[1|0, <the receive's reply>]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AckThenRecv<B> {
    /// Whether the message was pending and is now acknowledged (applied
    /// first).
    pub acked: Flag,
    /// What the receive then answered.
    pub received: Recv<B>,
}

/// [`AckThenRecv`]'s shape, of both halves written already (the module
/// keeps the ACK's reply while the receive runs, or waits).
pub use super::acked_then as ack_then_recv;

impl<B: Clone> Reply<B> for AckThenRecv<B> {
    fn encode<W: Wire<B>>(self) -> W {
        ack_then_recv(Reply::<B>::encode(self.acked), self.received.encode())
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        let [acked, received] = read::items(value, "[acknowledged, received]")?;
        Ok(Self { acked: Flag::decode(acked)?, received: Recv::decode(received)? })
    }
}

/// An agent's or a task's record, its hash's fields and values as
/// `HGETALL` replies them (empty when there is no such record):
/// `TOWN.AGENT GET`, `TOWN.AGENT BYNAME`, `TOWN.TASK GET`.
pub type Record<B> = Hash<B>;

/// `TOWN.AGENT GET`'s reply.
pub type AgentGet<B> = Record<B>;
/// `TOWN.AGENT BYNAME`'s reply (the first agent of that name).
pub type AgentByName<B> = Record<B>;
/// `TOWN.TASK GET`'s reply.
pub type TaskGet<B> = Record<B>;

/// Records, those that exist, in the index's order: `TOWN.AGENT LIST`,
/// `TOWN.TASK LIST`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Records<B> {
    /// The records.
    pub records: Vec<Record<B>>,
}

/// `TOWN.AGENT LIST`'s reply.
pub type AgentList<B> = Records<B>;
/// `TOWN.TASK LIST`'s reply.
pub type TaskList<B> = Records<B>;

impl<B: Clone> Reply<B> for Records<B> {
    fn encode<W: Wire<B>>(self) -> W {
        W::array(self.records.into_iter().map(Record::encode).collect())
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        let Value::Array(items) = value else { return Err(Unexpected("an array of records")) };
        Ok(Self { records: items.iter().map(Record::decode).collect::<Result<_, _>>()? })
    }
}

/// An array of bulk strings.
fn read_bulks<B: Clone>(value: &Value<B>, expected: &'static str) -> Result<Vec<B>, Unexpected> {
    let Value::Array(items) = value else { return Err(Unexpected(expected)) };
    items.iter().map(|item| read::bulk(item, expected).cloned()).collect()
}

#[cfg(test)]
mod tests;
