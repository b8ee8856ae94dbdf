//! `DREAMTOWN.DRYRUN <username> <command> [<arg> ...]`: what `ACL DRYRUN`
//! answers for a module command.

use crate::commands::DRYRUN;
use crate::error::CommandError;
use crate::request::{Argv, Request};

/// Run `call` as `user` in a dry run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DryRun<'a> {
    /// The user whose permissions are checked.
    pub user: &'a [u8],
    /// The call: its command's name, then its arguments (not empty).
    pub call: &'a [&'a [u8]],
}

impl<'a> Request<'a> for DryRun<'a> {
    const COMMAND: &'static [&'static str] = &[DRYRUN];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        match argv {
            [user, call @ ..] if !call.is_empty() => Ok(Self { user, call }),
            _ => Err(CommandError::err("wrong number of arguments for 'acl|dryrun' command")),
        }
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.user);
        for arg in self.call {
            out.push(*arg);
        }
    }
}
