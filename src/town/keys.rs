//! Key and channel names of a town: `tt:{<town>}:<kind>:<id>`, with the
//! town as a literal hash tag. Defined once, with their parser, in the
//! protocol crate (`dreamtown_protocol::keyspace::town`), shared with the
//! client and the tools.

pub use dreamtown_protocol::keyspace::town::*;
