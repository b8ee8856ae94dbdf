//! The Town side: one town's agent channel as the native view [`Town`]
//! (`Dreamtown::town(name)`: builders over the `TOWN.*` request types,
//! typed outcomes, the containers as sub-views), and the seed-shaped
//! [`Channel`] beside it, with the public API of tinytown 0.10's `Channel`,
//! each call one `TOWN.*` command (or one plain stream command for the
//! docket and the event stream), plus the reliable receive the module adds;
//! and tinytown's types (messages, agents, tasks, events) with its JSON and
//! hash encodings.
//!
//! Reads never drop a stored message the client cannot parse: calls that
//! return several messages return [`Delivery`] values (parsed, or the exact
//! bytes), and calls that return one carry the bytes in
//! [`Error::UnparsedMessage`](crate::Error::UnparsedMessage).
//!
//! ```no_run
//! use std::time::Duration;
//! use dreamtown_client::town::{Agent, AgentState, AgentType, Channel};
//!
//! # async fn demo() -> dreamtown_client::Result<()> {
//! let client = redis::Client::open("redis://127.0.0.1:6390/")?;
//! let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
//! let conn = client.get_multiplexed_async_connection_with_config(&config).await?;
//! let channel = Channel::new(conn, "acme");
//!
//! let mut me = Agent::new("backend", "claude", AgentType::Worker);
//! me.state = AgentState::Idle;
//! channel.set_agent_state(&me).await?;
//! channel.requeue_pending(me.id).await?; // what a previous run left unacknowledged
//! let wait = Some(Duration::from_secs(1));
//! // Acted on, not yet acknowledged: the next receive acknowledges it in the
//! // same round trip (`TOWN.RECV ... RELIABLE ACK <id>`).
//! let mut done: Option<String> = None;
//! while !channel.should_stop(me.id).await? {
//!     let received = match done.take() {
//!         Some(id) => channel.ack_and_receive(me.id, id, 1, wait, None).await?.1,
//!         None => channel.receive_reliable(me.id, 1, wait).await?,
//!     };
//!     for delivery in received {
//!         // ... act on delivery.message() ...
//!         done = delivery.ack_id();
//!     }
//!     channel.update_agent_heartbeat(me.id).await?;
//! }
//! if let Some(id) = done {
//!     channel.ack_message(me.id, id).await?;
//! }
//! # Ok(()) }
//! ```

mod agent;
mod channel;
mod containers;
mod delivery;
mod docket;
mod events;
mod ids;
mod message;
mod record;
mod state;
mod stream;
mod task;
mod view;

pub use agent::{Agent, AgentState, AgentType, SpawnMode};
pub use channel::{Channel, MailboxLengths};
pub use containers::{Activity, AgentRecord, Backlog, StopFlag, StopRequest, TaskRecord};
pub use delivery::Delivery;
pub use docket::DOCKET_GROUP;
pub use events::{EventStream, EventType, TownEvent};
pub use ids::{AgentId, MessageId, MissionId, TaskId};
pub use message::{ConfirmationType, Message, MessageType, Priority};
pub use task::{Task, TaskState};
pub use view::{AckAndRecv, Peek, Received, Recv, Reset, SendMessage, Town, TownStats};
