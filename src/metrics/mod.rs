//! What the module counts and measures, kept in memory on the node that
//! runs the commands: the server-wide totals of every counted event
//! (`totals`, from the one table in [`crate::events`]), the same events per
//! tenant (`tenant_stats`), and when each fire entered its list
//! (`fire_ages`). `INFO dreamtown` (`crate::module::info`), `DREAMS.STATS`
//! / `TOWN.STATS` and the exporter read them.

pub mod count;
pub mod fire_ages;
pub mod tenant_stats;
pub mod totals;
