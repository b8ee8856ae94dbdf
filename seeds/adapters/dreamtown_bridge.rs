//! A `redis` 0.27 connection (the seeds') as a `redis` 1.x one
//! (`dreamtown-client`'s), for the seed adapters (exocortex_fire.rs,
//! tinytown_channel.rs), which include this file as a module: the
//! application keeps its own connection manager, and each command of the
//! client goes over it.

use dreamtown_client::redis as redis1;

/// A `redis` 0.27 connection (the seed's) as a `redis` 1.x one (the
/// client's): each command is rebuilt argument for argument, each reply
/// converted value for value; a server error stays a server error.
#[derive(Clone)]
pub struct Bridge<C>(pub C);

impl<C: redis::aio::ConnectionLike + Send> redis1::aio::ConnectionLike for Bridge<C> {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a redis1::Cmd) -> redis1::RedisFuture<'a, redis1::Value> {
        Box::pin(async move {
            let old = to_old(cmd);
            match self.0.req_packed_command(&old).await {
                Ok(value) => Ok(to_new(value)),
                Err(error) => Err(to_new_error(error)),
            }
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis1::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis1::RedisFuture<'a, Vec<redis1::Value>> {
        Box::pin(async move {
            // One command at a time, in order: the client sends no
            // transactions through this path.
            let mut replies = Vec::new();
            for cmd in pipeline.cmd_iter() {
                let value = match self.0.req_packed_command(&to_old(cmd)).await {
                    Ok(value) => to_new(value),
                    Err(error) => return Err(to_new_error(error)),
                };
                replies.push(value);
            }
            Ok(replies.into_iter().skip(offset).take(count).collect())
        })
    }

    fn get_db(&self) -> i64 {
        self.0.get_db()
    }
}

fn to_old(cmd: &redis1::Cmd) -> redis::Cmd {
    let mut old = redis::Cmd::new();
    for arg in cmd.args_iter() {
        match arg {
            redis1::Arg::Simple(bytes) => {
                old.arg(bytes);
            }
            // Arg::Cursor (SCAN's cursor), the only other kind: DREAMS.*
            // commands take none.
            _ => {
                old.cursor_arg(0);
            }
        }
    }
    old
}

fn to_new(value: redis::Value) -> redis1::Value {
    use redis::Value as O;
    use redis1::Value as N;
    match value {
        O::Nil => N::Nil,
        O::Int(n) => N::Int(n),
        O::BulkString(bytes) => N::BulkString(bytes),
        O::Array(items) => N::Array(items.into_iter().map(to_new).collect()),
        O::SimpleString(text) => N::SimpleString(text),
        O::Okay => N::Okay,
        O::Map(pairs) => N::Map(pairs.into_iter().map(|(k, v)| (to_new(k), to_new(v))).collect()),
        O::Attribute { data, .. } => to_new(*data),
        O::Set(items) => N::Set(items.into_iter().map(to_new).collect()),
        O::Double(d) => N::Double(d),
        O::Boolean(b) => N::Boolean(b),
        O::VerbatimString { text, .. } => N::BulkString(text.into_bytes()),
        O::BigNumber(n) => N::BulkString(n.to_string().into_bytes()),
        O::Push { data, .. } => N::Array(data.into_iter().map(to_new).collect()),
        O::ServerError(error) => match parse_error(error.code(), error.details()) {
            Ok(value) => value,
            Err(error) => N::SimpleString(error.to_string()),
        },
    }
}

/// `-CODE detail`, read by the 1.x parser: the client sees the server's
/// refusal exactly as over a 1.x connection.
fn parse_error(code: &str, detail: Option<&str>) -> redis1::RedisResult<redis1::Value> {
    let line = match detail {
        Some(detail) => format!("-{code} {detail}\r\n"),
        None => format!("-{code}\r\n"),
    };
    redis1::parse_redis_value(line.as_bytes())
}

fn to_new_error(error: redis::RedisError) -> redis1::RedisError {
    if let Some(code) = error.code() {
        if let Ok(redis1::Value::ServerError(server)) = parse_error(code, error.detail()) {
            return server.into();
        }
    }
    let kind = if error.is_timeout() { std::io::ErrorKind::TimedOut } else { std::io::ErrorKind::Other };
    std::io::Error::new(kind, error.to_string()).into()
}
