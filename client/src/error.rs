//! The client's one error type: what the server refused, what the
//! transport failed at, what the caller passed wrong, and replies this
//! client does not understand (quoted, never guessed at).

use std::fmt;

/// A result of a dreamtown client call.
///
/// ```
/// fn check(result: dreamtown_client::Result<u64>) -> u64 {
///     result.unwrap_or(0)
/// }
/// assert_eq!(check(Ok(3)), 3);
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything a dreamtown client call can fail with. No call panics.
///
/// ```
/// use dreamtown_client::Error;
///
/// let refused = Error::Server { code: "NOPERM".into(), message: "no permissions".into() };
/// assert!(refused.is_no_permission());
/// assert_eq!(refused.to_string(), "the server refused the command: NOPERM no permissions");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server answered with an error reply (`ERR ...`, `WRONGTYPE ...`,
    /// `NOPERM ...`): the command changed nothing.
    #[error("the server refused the command: {code} {message}")]
    Server {
        /// The first word of the reply (`ERR`, `WRONGTYPE`, `NOPERM`, ...).
        code: String,
        /// The rest of the reply.
        message: String,
    },
    /// The connection gave up waiting for the reply. For a blocking
    /// `DREAMS.DRAIN` this means the connection's response timeout is
    /// shorter than the drain timeout: an item the server drains after the
    /// client stopped waiting stays in flight until
    /// [`RedisFireQueue::recover_inflight`](crate::dreams::RedisFireQueue::recover_inflight).
    #[error(
        "no reply to {command} before the connection's response timeout; \
         blocking calls need a connection whose response timeout is longer than theirs (or none)"
    )]
    ResponseTimeout {
        /// The command that timed out.
        command: &'static str,
        /// The transport's error.
        #[source]
        source: redis::RedisError,
    },
    /// The connection failed (I/O, cluster topology, protocol).
    #[error(transparent)]
    Redis(redis::RedisError),
    /// The server replied with something this client does not understand.
    #[error("{command} replied with something this client does not understand: {reply}")]
    UnexpectedReply {
        /// The command.
        command: &'static str,
        /// What came back, rendered for reading.
        reply: String,
    },
    /// A region of another organization was passed to an organization's queue.
    #[error("Dreams queue for organization {queue:?} rejects region organization {region:?}")]
    ForeignRegion {
        /// The queue's organization.
        queue: String,
        /// The region's organization.
        region: String,
    },
    /// An argument was refused before anything was sent.
    #[error("invalid argument: {0}")]
    InvalidArgument(&'static str),
    /// A message the server handed over (and so no longer holds in the
    /// inbox) is not a tinytown [`Message`](crate::town::Message): it is
    /// carried here, byte for byte, so nothing is lost. Calls that return
    /// several messages return such ones as
    /// [`Delivery::Unparsed`](crate::town::Delivery::Unparsed) instead.
    #[error("{command} returned a message that is not a tinytown Message ({reason}): {}", String::from_utf8_lossy(.payload))]
    UnparsedMessage {
        /// The command that returned it.
        command: &'static str,
        /// The message exactly as it was stored.
        payload: Vec<u8>,
        /// Why it does not parse.
        reason: String,
    },
    /// A stored record (an agent, a task, a backlog entry) is not what this
    /// client can represent; `reason` quotes it.
    #[error("stored {what} does not parse: {reason}")]
    InvalidRecord {
        /// What was read (`agent`, `task`, `backlog task id`).
        what: &'static str,
        /// What is wrong with it, quoting it.
        reason: String,
    },
    /// A message or event could not be encoded as JSON.
    #[error("could not encode JSON: {0}")]
    Encode(#[source] serde_json::Error),
    /// A drained payload is not a fire message of this organization.
    #[error("drained payload is not a Dreams fire message of this organization: {payload}")]
    InvalidPayload {
        /// The payload as drained (lossy UTF-8).
        payload: String,
    },
}

impl Error {
    /// Is this the server's `NOPERM` (an ACL refusal)?
    ///
    /// ```
    /// use dreamtown_client::Error;
    /// assert!(!Error::InvalidArgument("x").is_no_permission());
    /// ```
    pub fn is_no_permission(&self) -> bool {
        self.server_code() == Some("NOPERM")
    }

    /// The server's error code (`ERR`, `WRONGTYPE`, `NOPERM`, `MOVED` ...), if
    /// the server refused the command.
    ///
    /// ```
    /// use dreamtown_client::Error;
    /// let e = Error::Server { code: "WRONGTYPE".into(), message: "wrong kind".into() };
    /// assert_eq!(e.server_code(), Some("WRONGTYPE"));
    /// ```
    pub fn server_code(&self) -> Option<&str> {
        match self {
            Self::Server { code, .. } => Some(code),
            _ => None,
        }
    }

    /// Did the server refuse the command without running it, in a way a
    /// retry can get past? `TRYAGAIN` (the tenant's cluster slot is moving),
    /// `MOVED`/`ASK` (another node serves it; cluster connections follow
    /// these themselves), `CLUSTERDOWN`, `LOADING`, `MASTERDOWN`, and
    /// `UNBLOCKED` after a failover turned the node into a replica.
    ///
    /// ```
    /// use dreamtown_client::Error;
    /// let moving = Error::Server { code: "TRYAGAIN".into(), message: "tenant 'acme' is being moved".into() };
    /// assert!(moving.is_retryable());
    /// assert!(!Error::Server { code: "WRONGTYPE".into(), message: String::new() }.is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        if self.is_unblocked_by_role_change() {
            return true;
        }
        match self {
            Self::Redis(error) => {
                error.redirect_node().is_some()
                    || matches!(
                        error.code(),
                        Some("TRYAGAIN" | "MOVED" | "ASK" | "CLUSTERDOWN" | "LOADING" | "MASTERDOWN")
                    )
            }
            _ => matches!(
                self.server_code(),
                Some("TRYAGAIN" | "MOVED" | "ASK" | "CLUSTERDOWN" | "LOADING" | "MASTERDOWN")
            ),
        }
    }

    /// Is this `TRYAGAIN` (the tenant's slot is moving; nothing ran)?
    pub(crate) fn is_tryagain(&self) -> bool {
        match self {
            Self::Redis(error) => error.code() == Some("TRYAGAIN"),
            _ => self.server_code() == Some("TRYAGAIN"),
        }
    }

    /// Is this Redis's `UNBLOCKED ... instance state changed` (a blocked
    /// command released, unrun, because its node became a replica)?
    pub(crate) fn is_unblocked_by_role_change(&self) -> bool {
        let (code, message) = match self {
            Self::Server { code, message } => (Some(code.as_str()), message.as_str()),
            Self::Redis(error) => (error.code(), error.detail().unwrap_or_default()),
            _ => (None, ""),
        };
        code == Some("UNBLOCKED") && message.contains("instance state changed")
    }

    /// Classify a transport error of `command`.
    pub(crate) fn from_redis(command: &'static str, error: redis::RedisError) -> Self {
        if error.is_timeout() {
            return Self::ResponseTimeout { command, source: error };
        }
        if error.is_io_error() || error.is_cluster_error() || error.redirect_node().is_some() {
            return Self::Redis(error);
        }
        match error.code() {
            Some(code) => {
                Self::Server { code: code.to_owned(), message: error.detail().unwrap_or_default().to_owned() }
            }
            None => Self::Redis(error),
        }
    }

    /// A reply of `command` this client does not understand.
    pub(crate) fn unexpected(command: &'static str, reply: impl fmt::Debug) -> Self {
        Self::UnexpectedReply { command, reply: format!("{reply:?}") }
    }
}

impl From<dreamtown_protocol::error::CommandError> for Error {
    /// An argument the module would refuse, refused before sending with
    /// the module's own error (its code, then its words), as if the
    /// server had answered it.
    fn from(error: dreamtown_protocol::error::CommandError) -> Self {
        let message = error.message();
        let (code, detail) = message.split_once(' ').unwrap_or((message, ""));
        Self::Server { code: code.to_owned(), message: detail.to_owned() }
    }
}

impl From<redis::RedisError> for Error {
    /// A connection error outside a command (opening a connection, for
    /// instance); errors of the crate's own calls are classified per command.
    fn from(error: redis::RedisError) -> Self {
        Self::from_redis("(connection)", error)
    }
}
