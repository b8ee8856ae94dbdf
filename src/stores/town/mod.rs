//! The Town stores: an agent's message lists (`mailbox`), the town's
//! indexes (`index`), agent and task records (`record`), the Town lease
//! family (`leases`), and the last agent's key names (`names`).

pub mod index;
pub mod leases;
pub mod mailbox;
pub mod names;
pub mod record;
