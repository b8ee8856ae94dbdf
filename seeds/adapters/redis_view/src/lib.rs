//! The `redis` crate the seed's tests see under `make test-seeds`: redis
//! 0.27 re-exported whole, except [`Client`] and `aio::ConnectionManager`,
//! whose connections rewrite the seed's key names to dreamtown's before a
//! command leaves (the mappings of seeds/MAPPINGS.md, one function each
//! below). Commands, values and assertions are the seed's own; only key
//! names change, so an inspection (`LLEN` of the seed's queue key) reads
//! the dreamtown key that holds the same thing.

pub use real::*;

/// redis 0.27's `aio`, with the mapping connection manager.
pub mod aio {
    pub use crate::seed_view::ConnectionManager;
    pub use real::aio::*;
}

/// redis 0.27's `Client`, handing out mapping connection managers.
#[derive(Clone)]
pub struct Client(real::Client);

impl Client {
    /// As `redis::Client::open`.
    pub fn open<T: real::IntoConnectionInfo>(params: T) -> real::RedisResult<Client> {
        real::Client::open(params).map(Client)
    }

    /// As `redis::Client::get_connection_manager`, mapping key names.
    pub async fn get_connection_manager(&self) -> real::RedisResult<aio::ConnectionManager> {
        Ok(seed_view::ConnectionManager(self.0.get_connection_manager().await?))
    }
}

pub mod seed_view {
    //! The mapping itself.

    use std::collections::HashMap;
    use std::sync::Mutex;

    use dreamtown_client::keyspace::dreams::{DreamsKey, QueueKeys, RegionName};
    use real::aio::ConnectionLike;
    use real::{Arg, Cmd, Pipeline, RedisFuture, Value};

    static QUEUES: Mutex<Option<HashMap<String, String>>> = Mutex::new(None);

    /// The seed's `new_with_queue_key(.., org, queue_key)`: `queue_key`
    /// (and its `:deferred`, `:processing`) is organization `org`'s queue.
    pub fn name_queue(queue_key: &str, org: &str) {
        if let Ok(mut queues) = QUEUES.lock() {
            queues.get_or_insert_with(HashMap::new).insert(queue_key.to_owned(), org.to_owned());
        }
    }

    /// One argument: a seed key name becomes dreamtown's, anything else is
    /// left as it is.
    pub fn map_arg(arg: &[u8]) -> Vec<u8> {
        let Ok(text) = std::str::from_utf8(arg) else {
            return arg.to_vec();
        };
        queue_key(text).or_else(|| counter_key(text)).map(String::into_bytes).unwrap_or_else(|| arg.to_vec())
    }

    /// Mappings 1–3: `<queue_key>`, `<queue_key>:deferred`,
    /// `<queue_key>:processing` → `exocortex:dreams:{<org>}:queue`,
    /// `:deferred`, `:processing`.
    fn queue_key(text: &str) -> Option<String> {
        let queues = QUEUES.lock().ok()?;
        let queues = queues.as_ref()?;
        for (suffix, pick) in [
            (":deferred", (|k: QueueKeys| k.deferred) as fn(QueueKeys) -> String),
            (":processing", |k: QueueKeys| k.processing),
            ("", |k: QueueKeys| k.ready),
        ] {
            if let Some(org) = text.strip_suffix(suffix).and_then(|base| queues.get(base)) {
                return Some(pick(QueueKeys::new(org)));
            }
        }
        None
    }

    /// Mappings 4–5: `exocortex:dreams:counters:<region json>` and its
    /// `:processed-events` → the region's `counters` hash and `events` set.
    fn counter_key(text: &str) -> Option<String> {
        let json = text.strip_prefix("exocortex:dreams:counters:")?;
        let (json, events) = match json.strip_suffix(":processed-events") {
            Some(json) => (json, true),
            None => (json, false),
        };
        let region: serde_json::Value = serde_json::from_str(json).ok()?;
        let org = region.get("org")?.as_str()?;
        let name = RegionName {
            memory_type: u32::try_from(region.get("memory_type")?.as_u64()?).ok()?,
            project: region.get("project")?.as_str()?,
        };
        Some(if events { DreamsKey::Events(name) } else { DreamsKey::Counters(name) }.name(org))
    }

    fn map_cmd(cmd: &Cmd) -> Cmd {
        let mut mapped = Cmd::new();
        for arg in cmd.args_iter() {
            match arg {
                Arg::Simple(bytes) => {
                    mapped.arg(map_arg(bytes));
                }
                Arg::Cursor => {
                    mapped.cursor_arg(0);
                }
            }
        }
        mapped
    }

    /// A redis 0.27 connection manager whose commands are mapped.
    #[derive(Clone)]
    pub struct ConnectionManager(pub real::aio::ConnectionManager);

    impl ConnectionLike for ConnectionManager {
        fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
            Box::pin(async move {
                let mapped = map_cmd(cmd);
                self.0.req_packed_command(&mapped).await
            })
        }

        fn req_packed_commands<'a>(&'a mut self, pipeline: &'a Pipeline, offset: usize, count: usize) -> RedisFuture<'a, Vec<Value>> {
            Box::pin(async move {
                let mut mapped = Pipeline::new();
                for cmd in pipeline.cmd_iter() {
                    mapped.add_command(map_cmd(cmd));
                }
                self.0.req_packed_commands(&mapped, offset, count).await
            })
        }

        fn get_db(&self) -> i64 {
            self.0.get_db()
        }
    }
}
