//! What a command does with a key, as types: the ACL access it needs and
//! the key operations it may use.
//!
//! Redis decides a key's permission from its command's key spec: `ACCESS`
//! (the command returns or uses the value) needs `%R`, `INSERT`, `UPDATE`
//! or `DELETE` need `%W`, and a key the command touches without either
//! (`LLEN`, `EXISTS`) needs only that some pattern matches it. The module
//! keeps the same rule per key: a key is checked ([`crate::glue::session`])
//! and opened ([`crate::glue::key::Key`]) in one of four modes, and the
//! mode decides both the check and the operations the open key offers.
//! Reading a value needs [`ReadsValues`], writing needs [`Writes`]: a
//! command that reads a key it checked only for writing does not compile.

use std::os::raw::c_int;

use redis_module::raw;

mod sealed {
    pub trait Sealed {}
}

/// An access mode (one of [`Meta`], [`Read`], [`Write`], [`ReadWrite`]).
pub trait Mode: sealed::Sealed + 'static {
    /// The key-spec access flags of the ACL check
    /// (`RedisModule_ACLCheckKeyPermissions`).
    const ACL_FLAGS: c_int;
    /// Opened for writing (`REDISMODULE_WRITE`).
    const WRITE: bool;
}

/// Reading a key's values: `%R`.
pub trait ReadsValues: Mode {}

/// Writing a key: `%W`.
pub trait Writes: Mode {}

/// Type, existence and length only (`LLEN`, `EXISTS`): any pattern that
/// matches the key.
#[derive(Debug)]
pub enum Meta {}

/// Reading values (`LRANGE`, `HGETALL`): `%R`.
#[derive(Debug)]
pub enum Read {}

/// Writing without reading values (`LPUSH`, `HSET`, `DEL`, `LREM`): `%W`.
#[derive(Debug)]
pub enum Write {}

/// Reading and writing (`LMOVE`, `LPOP`, `HINCRBY`): `%R` and `%W`.
#[derive(Debug)]
pub enum ReadWrite {}

impl sealed::Sealed for Meta {}
impl sealed::Sealed for Read {}
impl sealed::Sealed for Write {}
impl sealed::Sealed for ReadWrite {}

impl Mode for Meta {
    const ACL_FLAGS: c_int = 0;
    const WRITE: bool = false;
}

impl Mode for Read {
    const ACL_FLAGS: c_int = raw::REDISMODULE_CMD_KEY_ACCESS as c_int;
    const WRITE: bool = false;
}

impl Mode for Write {
    const ACL_FLAGS: c_int = raw::REDISMODULE_CMD_KEY_UPDATE as c_int;
    const WRITE: bool = true;
}

impl Mode for ReadWrite {
    const ACL_FLAGS: c_int = (raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE) as c_int;
    const WRITE: bool = true;
}

impl ReadsValues for Read {}
impl ReadsValues for ReadWrite {}
impl Writes for Write {}
impl Writes for ReadWrite {}
