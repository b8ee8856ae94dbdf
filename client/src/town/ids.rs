//! tinytown's identifiers: agents, messages, tasks and missions are UUIDs,
//! written as their hyphenated lowercase text in JSON, hash fields and key
//! names (`tt:{town}:inbox:<agent-id>`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident, $example:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub struct $name(Uuid);

        impl $name {
            /// A new random (v4) id.
            ///
            /// ```
            #[doc = concat!("use dreamtown_client::town::", stringify!($name), ";")]
            #[doc = concat!("assert_ne!(", stringify!($name), "::new(), ", stringify!($name), "::new());")]
            /// ```
            #[must_use]
            pub fn new() -> Self {
                Self(Uuid::new_v4())
            }

            /// The id of an existing UUID.
            ///
            /// ```
            #[doc = concat!("use dreamtown_client::town::", stringify!($name), ";")]
            #[doc = concat!("let id = ", stringify!($name), "::from_uuid(uuid::Uuid::from_u128(7));")]
            /// assert_eq!(id.to_string(), "00000000-0000-0000-0000-000000000007");
            /// ```
            #[must_use]
            pub fn from_uuid(uuid: Uuid) -> Self {
                Self(uuid)
            }

            /// The UUID.
            ///
            /// ```
            #[doc = concat!("use dreamtown_client::town::", stringify!($name), ";")]
            #[doc = concat!("let id: ", stringify!($name), " = \"", $example, "\".parse().unwrap();")]
            #[doc = concat!("assert_eq!(id.as_uuid().to_string(), \"", $example, "\");")]
            /// ```
            #[must_use]
            pub fn as_uuid(&self) -> &Uuid {
                &self.0
            }

            /// The UUID's 16 bytes.
            ///
            /// ```
            #[doc = concat!("use dreamtown_client::town::", stringify!($name), ";")]
            #[doc = concat!("assert_eq!(", stringify!($name), "::from_uuid(uuid::Uuid::nil()).as_bytes(), &[0; 16]);")]
            /// ```
            #[must_use]
            pub fn as_bytes(&self) -> &[u8; 16] {
                self.0.as_bytes()
            }

            /// The first 4 hex characters, for compact display.
            ///
            /// ```
            #[doc = concat!("use dreamtown_client::town::", stringify!($name), ";")]
            #[doc = concat!("let id: ", stringify!($name), " = \"", $example, "\".parse().unwrap();")]
            #[doc = concat!("assert_eq!(id.short_id(), \"", $example, "\"[..4]);")]
            /// ```
            #[must_use]
            pub fn short_id(&self) -> String {
                self.0.to_string().chars().take(4).collect()
            }
        }

        impl Default for $name {
            /// A new random id, as tinytown's `Default`.
            ///
            /// ```
            #[doc = concat!("use dreamtown_client::town::", stringify!($name), ";")]
            #[doc = concat!("assert_ne!(", stringify!($name), "::default(), ", stringify!($name), "::default());")]
            /// ```
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            /// The hyphenated lowercase UUID.
            ///
            /// ```
            #[doc = concat!("use dreamtown_client::town::", stringify!($name), ";")]
            #[doc = concat!("let id: ", stringify!($name), " = \"", $example, "\".parse().unwrap();")]
            #[doc = concat!("assert_eq!(id.to_string(), \"", $example, "\");")]
            /// ```
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }

        impl FromStr for $name {
            type Err = uuid::Error;

            /// Parse a UUID in any of its text forms.
            ///
            /// ```
            #[doc = concat!("use dreamtown_client::town::", stringify!($name), ";")]
            #[doc = concat!("assert!(\"", $example, "\".parse::<", stringify!($name), ">().is_ok());")]
            #[doc = concat!("assert!(\"worker-1\".parse::<", stringify!($name), ">().is_err());")]
            /// ```
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s).map(Self)
            }
        }
    };
}

uuid_id!(
    /// The id of an agent: its stable address (`to`/`from` of messages, the
    /// `<agent>` of its keys).
    ///
    /// ```
    /// use dreamtown_client::town::AgentId;
    /// let id = AgentId::new();
    /// assert_eq!(id.to_string().parse::<AgentId>().unwrap(), id);
    /// assert_eq!(serde_json::to_string(&id).unwrap(), format!("\"{id}\""));
    /// ```
    AgentId,
    "4f1c9a6e-0b7d-4a43-9d7e-2b8f0c1d5e11"
);

impl AgentId {
    /// The well-known id of the supervisor (`00000000-0000-0000-0000-000000000001`).
    ///
    /// ```
    /// use dreamtown_client::town::AgentId;
    /// assert_eq!(AgentId::supervisor().to_string(), "00000000-0000-0000-0000-000000000001");
    /// ```
    #[must_use]
    pub fn supervisor() -> Self {
        Self(Uuid::from_u128(1))
    }
}

uuid_id!(
    /// The id of a message (what `TOWN.ACK` matches).
    ///
    /// ```
    /// use dreamtown_client::town::MessageId;
    /// let id = MessageId::new();
    /// assert_eq!(serde_json::from_str::<MessageId>(&format!("\"{id}\"")).unwrap(), id);
    /// ```
    MessageId,
    "7a2e0c3b-5d61-4f0e-8c9a-1e2d3f4a5b60"
);

uuid_id!(
    /// The id of a task (`tt:{town}:task:<task-id>`, backlog entries).
    ///
    /// ```
    /// use dreamtown_client::town::TaskId;
    /// let id = TaskId::new();
    /// assert_eq!(id.to_string().parse::<TaskId>().unwrap(), id);
    /// ```
    TaskId,
    "c0ffee00-1111-4222-8333-444455556666"
);

uuid_id!(
    /// The id of a mission run (carried by [`TownEvent`](super::TownEvent)s).
    ///
    /// ```
    /// use dreamtown_client::town::MissionId;
    /// let id = MissionId::new();
    /// assert_eq!(id.to_string().len(), 36);
    /// ```
    MissionId,
    "0d15ea5e-0000-4000-8000-00000000beef"
);
