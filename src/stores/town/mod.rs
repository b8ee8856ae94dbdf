//! The Town stores: an agent's message lists (`mailbox`), the town's
//! indexes (`index`), agent and task records (`record`), and the Town lease
//! family (`leases`).

pub mod index;
pub mod leases;
pub mod mailbox;
pub mod record;
