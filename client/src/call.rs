//! Sending one command and decoding its reply: the only place the client
//! touches the connection, so every call maps transport and server errors
//! the same way, and every reply shape it does not expect becomes
//! [`Error::UnexpectedReply`] quoting what came back.

use std::any::Any;
use std::time::{Duration, Instant};

// Redis Cluster's slot of a key: the module's own hash.
use dreamtown::cluster_slot::key_slot;
use dreamtown_protocol::reply::{self, Reply as ProtocolReply};
use dreamtown_protocol::request::{Request, arguments};
use redis::Value;
use redis::aio::ConnectionLike;
use redis::cluster_async::ClusterConnection;

use crate::error::{Error, Result};
use crate::retry;

/// How many times a call unblocked by a role change is sent again.
pub(crate) const UNBLOCKED_RETRIES: u32 = 3;

/// One command on its way to the server: its name (for errors) and arguments.
pub(crate) struct Call {
    name: &'static str,
    cmd: redis::Cmd,
}

/// Where a cluster connection must send `cmd`, when the redis crate would
/// route it elsewhere: a `DREAMS.LIMIT` or `TOWN.AGENT`/`TASK`/`BACKLOG`/
/// `ACTIVITY`/`STOP` subcommand (`TOWN.AGENT GET <town> ...`) goes to the
/// master of its tenant's slot. The redis crate routes a command it does not know by its
/// first argument, here the subcommand's name: the call would land on the
/// wrong node and be redirected (`MOVED`, and the crate then refreshes its
/// whole slot map) every time. `None` for every other command (routed as
/// the redis crate does). For a [`redis::cluster_async::ClusterConnection`]
/// the client does this itself; a connection type of your own that wraps
/// one can call it and `route_command` with the answer.
pub fn cluster_routing(cmd: &redis::Cmd) -> Option<redis::cluster_routing::RoutingInfo> {
    use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
    let mut args = cmd.args_iter();
    let name = match args.next()? {
        redis::Arg::Simple(name) => name,
        _ => return None,
    };
    // The commands whose first argument is a subcommand, so the tenant is
    // the second (`TOWN.AGENT GET <town> ...`, `DREAMS.LIMIT SET <org> ...`).
    if !dreamtown_protocol::commands::is_container(name) {
        return None;
    }
    let tenant = match args.nth(1)? {
        redis::Arg::Simple(tenant) => tenant,
        _ => return None,
    };
    let route = Route::new(key_slot(tenant), SlotAddr::Master);
    Some(RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route)))
}

impl Call {
    /// `name` with no arguments yet.
    pub(crate) fn new(name: &'static str) -> Self {
        Self { name, cmd: redis::cmd(name) }
    }

    /// `request`'s command line: its command words and its arguments, as
    /// the protocol writes them (the same code that the module parses with).
    pub(crate) fn request<'a, R: Request<'a>>(request: &R) -> Self {
        let mut words = R::COMMAND.iter();
        let mut call = Self::new(words.next().copied().unwrap_or_default());
        for word in words {
            call = call.arg(*word);
        }
        for arg in arguments(request) {
            call = call.arg(arg);
        }
        call
    }

    /// Append an argument.
    pub(crate) fn arg(mut self, arg: impl redis::ToRedisArgs) -> Self {
        self.cmd.arg(arg);
        self
    }

    /// Send it and wait for the reply. A command the server unblocked
    /// without running it because the node changed role (a failover: the
    /// blocked `DREAMS.DRAIN`/`TOWN.RECV` on the old master) is sent again,
    /// up to [`UNBLOCKED_RETRIES`] times: a cluster connection then follows
    /// the new master (the `redis` crate reconnects and retries on
    /// `MOVED`/`ASK`/`TRYAGAIN`/connection loss itself). A `TRYAGAIN` that
    /// comes back anyway (the tenant's slot is moving; nothing ran) is sent
    /// again with a growing pause until `tryagain_deadline` has passed
    /// since the first send (`crate::retry`).
    pub(crate) async fn send<C: ConnectionLike + Send>(
        self,
        conn: &mut C,
        tryagain_deadline: Duration,
    ) -> Result<Reply> {
        self.send_via(conn, tryagain_deadline, |_| None).await
    }

    /// [`send`](Self::send), a subcommand (`TOWN.AGENT GET <town> ...`)
    /// sent over a [`ClusterConnection`] to its town's node
    /// ([`cluster_routing`]) instead of where the redis crate would route it.
    pub(crate) async fn send_routed<C: ConnectionLike + Send + 'static>(
        self,
        conn: &mut C,
        tryagain_deadline: Duration,
    ) -> Result<Reply> {
        self.send_via(conn, tryagain_deadline, |conn: &mut C| {
            (conn as &mut dyn Any).downcast_mut::<ClusterConnection>()
        })
        .await
    }

    /// The send loop; `cluster`: `conn` as a cluster connection, if it is one.
    async fn send_via<C: ConnectionLike + Send>(
        self,
        conn: &mut C,
        tryagain_deadline: Duration,
        cluster: impl Fn(&mut C) -> Option<&mut ClusterConnection>,
    ) -> Result<Reply> {
        let started = Instant::now();
        let mut unblocked = 0;
        let mut refusals = 0;
        // A subcommand's tenant is not where the redis crate looks for it.
        let routing = cluster_routing(&self.cmd);
        loop {
            let sent = match routing.clone() {
                Some(routing) => match cluster(conn) {
                    Some(cluster) => cluster.route_command(self.cmd.clone(), routing).await,
                    None => conn.req_packed_command(&self.cmd).await,
                },
                None => conn.req_packed_command(&self.cmd).await,
            };
            let result = match sent {
                Ok(Value::ServerError(error)) => Err(Error::from_redis(self.name, error.into())),
                Ok(value) => Ok(Reply { command: self.name, value }),
                Err(error) => Err(Error::from_redis(self.name, error)),
            };
            match result {
                Err(error) if error.is_unblocked_by_role_change() && unblocked < UNBLOCKED_RETRIES => unblocked += 1,
                Err(error) if error.is_tryagain() => {
                    let left = tryagain_deadline.saturating_sub(started.elapsed());
                    if left.is_zero() {
                        return Err(error);
                    }
                    tokio::time::sleep(retry::pause(refusals, left)).await;
                    refusals = refusals.saturating_add(1);
                }
                other => return other,
            }
        }
    }
}

/// A reply of a known command, decoded by what the command promises.
#[derive(Debug)]
pub(crate) struct Reply {
    command: &'static str,
    value: Value,
}

impl Reply {
    /// The error for a reply this client does not understand.
    pub(crate) fn unexpected(&self) -> Error {
        Error::unexpected(self.command, &self.value)
    }

    /// A status or short string reply (`queued`, `OK` ...).
    pub(crate) fn word(&self) -> Result<&str> {
        word(&self.value).ok_or_else(|| self.unexpected())
    }

    /// `OK`.
    pub(crate) fn ok(&self) -> Result<()> {
        match &self.value {
            Value::Okay => Ok(()),
            _ if self.word()? == "OK" => Ok(()),
            _ => Err(self.unexpected()),
        }
    }

    /// A non-negative integer.
    pub(crate) fn count(&self) -> Result<u64> {
        count(&self.value).ok_or_else(|| self.unexpected())
    }

    /// A non-negative integer that fits a `usize`.
    pub(crate) fn length(&self) -> Result<usize> {
        usize::try_from(self.count()?).map_err(|_| self.unexpected())
    }

    /// The reply, read by the command's protocol reply type
    /// (`dreamtown_protocol::reply`): what the module wrote with it.
    pub(crate) fn decode<R: ProtocolReply<Vec<u8>>>(&self) -> Result<R> {
        decode_reply(&self.value).ok_or_else(|| self.unexpected())
    }

    /// The reply as it came, for replies decoded elsewhere (streams).
    pub(crate) fn value(&self) -> &Value {
        &self.value
    }
}

/// The bytes of a bulk or simple string.
pub(crate) fn bytes(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::BulkString(bytes) => Some(bytes.clone()),
        Value::SimpleString(text) => Some(text.clone().into_bytes()),
        _ => None,
    }
}

/// A reply as the protocol's RESP value; `None` for a kind no dreamtown
/// command answers (doubles, booleans, ...). Both nulls of RESP2 (`$-1`,
/// `*-1`) and RESP3's `_` come as nil.
pub(crate) fn protocol_value(value: &Value) -> Option<reply::Value> {
    Some(match value {
        Value::Okay => reply::Value::Status("OK".into()),
        Value::SimpleString(word) => reply::Value::Status(word.clone().into()),
        Value::BulkString(bytes) => reply::Value::Bulk(bytes.clone()),
        Value::Int(n) => reply::Value::Integer(*n),
        Value::Nil => reply::Value::Nil,
        Value::Array(items) | Value::Set(items) => {
            reply::Value::Array(items.iter().map(protocol_value).collect::<Option<_>>()?)
        }
        Value::Map(pairs) => reply::Value::Map(
            pairs
                .iter()
                .map(|(field, value)| Some((protocol_value(field)?, protocol_value(value)?)))
                .collect::<Option<_>>()?,
        ),
        _ => return None,
    })
}

/// Field/value pairs of a flat array (RESP2) or a map (RESP3), values as they came
/// (plain Redis replies: `XINFO`).
pub(crate) fn fields(value: &Value) -> Option<Vec<(String, &Value)>> {
    let field = |field: &Value| String::from_utf8(bytes(field)?).ok();
    match value {
        Value::Array(items) if items.len() % 2 == 0 => items
            .chunks_exact(2)
            .map(|chunk| match chunk {
                [name, value] => Some((field(name)?, value)),
                _ => None,
            })
            .collect(),
        Value::Map(entries) => entries.iter().map(|(name, value)| Some((field(name)?, value))).collect(),
        _ => None,
    }
}

/// A reply as the `redis` crate read it, decoded by a protocol reply type
/// (`dreamtown_protocol::reply`): for tools that send a command on their
/// own connection (the exporter's `DREAMS.STATS` and `TOWN.STATS`).
/// `None` when it is not of that shape.
pub fn decode_reply<R: ProtocolReply<Vec<u8>>>(value: &Value) -> Option<R> {
    R::decode(&protocol_value(value)?).ok()
}

fn word(value: &Value) -> Option<&str> {
    match value {
        Value::SimpleString(text) => Some(text),
        Value::Okay => Some("OK"),
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok(),
        _ => None,
    }
}

fn count(value: &Value) -> Option<u64> {
    match value {
        Value::Int(n) => u64::try_from(*n).ok(),
        _ => None,
    }
}

/// A timeout in whole milliseconds, rounded up so that a non-zero timeout
/// never becomes 0, which waits forever (a request's `BLOCK`; past `i64::MAX` ms it saturates, which the
/// module refuses as it refuses any timeout that long).
pub(crate) fn timeout_ms(timeout: std::time::Duration) -> i64 {
    let millis = timeout.as_nanos().div_ceil(1_000_000);
    i64::try_from(millis).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(value: Value) -> Reply {
        Reply { command: "DREAMS.TEST", value }
    }

    fn says_what_came_back(error: Error, expected: &str) {
        match error {
            Error::UnexpectedReply { command, reply } => {
                assert_eq!(command, "DREAMS.TEST");
                assert!(reply.to_lowercase().contains(&expected.to_lowercase()), "{reply}");
            }
            other => panic!("expected an unexpected-reply error, got {other:?}"),
        }
    }

    #[test]
    fn replies_decode_by_their_protocol_type() {
        use dreamtown_protocol::reply::dreams::{self as protocol, RecordOutcome};
        let counted =
            reply(Value::Array(vec![Value::SimpleString("queued".into()), Value::Int(3), Value::Int(4_294_967_295)]));
        let expected = protocol::Record { outcome: RecordOutcome::Queued, memories: 3, edges: 4_294_967_295 };
        assert_eq!(counted.decode::<protocol::Record>().unwrap(), expected);
        // RESP2's flat array and RESP3's map alike.
        let flat = reply(Value::Array(vec![Value::BulkString(b"memories".to_vec()), Value::BulkString(b"4".to_vec())]));
        let map = reply(Value::Map(vec![(Value::BulkString(b"memories".to_vec()), Value::BulkString(b"4".to_vec()))]));
        let counters = flat.decode::<protocol::Counters>().unwrap();
        assert_eq!(counters.get("memories"), Some(&b"4"[..]));
        assert_eq!(map.decode::<protocol::Counters>().unwrap(), counters);
        assert_eq!(reply(Value::Okay).decode::<protocol::Settle>().unwrap(), protocol::Done);
    }

    #[test]
    fn replies_of_the_wrong_shape_are_errors_that_quote_them() {
        use dreamtown_protocol::reply::dreams::Record;
        says_what_came_back(reply(Value::Int(7)).decode::<Record>().unwrap_err(), "Int(7)");
        let short = reply(Value::Array(vec![Value::SimpleString("queued".into())]));
        says_what_came_back(short.decode::<Record>().unwrap_err(), "queued");
        let unknown = reply(Value::Array(vec![Value::Okay, Value::Int(1), Value::Int(0)]));
        says_what_came_back(unknown.decode::<Record>().unwrap_err(), "ok");
        let double = reply(Value::Double(1.5));
        says_what_came_back(double.decode::<Record>().unwrap_err(), "1.5");
        says_what_came_back(reply(Value::Nil).count().unwrap_err(), "Nil");
        says_what_came_back(reply(Value::SimpleString("queued".into())).ok().unwrap_err(), "queued");
    }

    #[test]
    fn timeouts_round_up_to_milliseconds() {
        use dreamtown_protocol::request::options::duration_text as timeout_secs;
        assert_eq!(timeout_secs(std::time::Duration::ZERO), "0.000");
        assert_eq!(timeout_secs(std::time::Duration::from_nanos(1)), "0.001");
        assert_eq!(timeout_secs(std::time::Duration::from_millis(1500)), "1.500");
        assert_eq!(timeout_secs(std::time::Duration::new(2, 999_999_999)), "3.000");
        assert_eq!(timeout_secs(std::time::Duration::from_secs(7)), "7.000");
        for nanos in [0, 1, 999_999, 1_000_000, 1_500_000_000, 2_999_999_999, 7_000_000_000, 86_400_123_456_789] {
            let timeout = std::time::Duration::from_nanos(nanos);
            let text = timeout_secs(timeout);
            let lease = dreamtown_protocol::request::options::lease_from_duration(timeout);
            assert_eq!(lease.ok(), Some(text.parse::<f64>().unwrap()).filter(|&secs| secs > 0.0), "{text}");
            let ms = timeout_ms(timeout);
            assert_eq!(text, format!("{}.{:03}", ms / 1000, ms % 1000));
        }
        assert_eq!(timeout_ms(std::time::Duration::MAX), i64::MAX);
    }

    #[test]
    fn town_replies_decode_from_what_the_redis_crate_reads_and_wrong_ones_are_quoted() {
        use dreamtown_protocol::reply::town;
        let bulk = |text: &str| Value::BulkString(text.as_bytes().to_vec());
        assert_eq!(reply(Value::Int(1)).decode::<town::StopCheck>().unwrap(), town::Flag(true));
        says_what_came_back(reply(Value::Int(2)).decode::<town::StopCheck>().unwrap_err(), "Int(2)");
        let peeked = reply(Value::Array(vec![bulk("a"), bulk("b")])).decode::<town::Peek<Vec<u8>>>().unwrap();
        assert_eq!(peeked.items, [b"a".to_vec(), b"b".to_vec()]);
        says_what_came_back(
            reply(Value::Array(vec![Value::Int(3)])).decode::<town::Peek<Vec<u8>>>().unwrap_err(),
            "Int(3)",
        );
        // Both RESP2 nulls and RESP3's come as nil: a receive's wait ran out.
        assert_eq!(reply(Value::Nil).decode::<town::Recv<Vec<u8>>>().unwrap(), town::Recv::TimedOut);
        let records = reply(Value::Array(vec![
            Value::Array(vec![bulk("id"), bulk("1")]),
            Value::Map(vec![(bulk("id"), bulk("2"))]),
        ]));
        let decoded = records.decode::<town::AgentList<Vec<u8>>>().unwrap();
        assert_eq!(decoded.records[1].fields, vec![(b"id".to_vec(), b"2".to_vec())]);
        says_what_came_back(
            reply(Value::Array(vec![Value::Int(5)])).decode::<town::TaskList<Vec<u8>>>().unwrap_err(),
            "Int(5)",
        );
        says_what_came_back(reply(Value::Int(-4)).decode::<town::Ack>().unwrap_err(), "-4");
        assert_eq!(reply(Value::Int(4)).decode::<town::Ack>().unwrap(), town::Count(4));
        assert_eq!(reply(Value::Okay).decode::<town::AgentSet>().unwrap(), town::Done);
        assert_eq!(reply(Value::Nil).decode::<town::BacklogPop<Vec<u8>>>().unwrap(), town::MaybeBulk(None));
    }
}
