//! The field set of an agent or task record: an update replaces the whole
//! record, in one step. Defined, with its parser, in the protocol crate
//! (`dreamtown_protocol::request::town::FieldSet`), shared with the client.

pub use dreamtown_protocol::request::town::{FieldSet, FieldSetError};
