//! Requests: one type per command (or subcommand) that both reads its
//! arguments (the module's parse step, [`Request::parse`]) and writes them
//! (the client, [`Request::encode`]), so the wire format of each command is
//! defined once. A request borrows its names from the arguments it was
//! parsed from (or from the caller that built it): the hot commands copy
//! nothing while parsing.
//!
//! Every type keeps one law, checked by [`round_trip`] (a unit test over
//! random arguments here and the `requests` fuzz target): what `parse`
//! accepts, `encode` writes back in a form `parse` reads as the same
//! request.

pub mod dreams;
pub mod dryrun;
pub mod options;
pub mod town;

use crate::error::CommandError;

/// A command's (or subcommand's) arguments, parsed and encoded in one place.
pub trait Request<'a>: Sized + PartialEq + std::fmt::Debug {
    /// The words before the arguments: the command's name, then the
    /// subcommand's for a container (`["TOWN.AGENT", "GET"]`).
    const COMMAND: &'static [&'static str];

    /// Read the arguments after [`Self::COMMAND`]; the error is the reply.
    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError>;

    /// Write the arguments after [`Self::COMMAND`], as [`Self::parse`]
    /// reads them back.
    fn encode(&self, out: &mut Argv);
}

/// Arguments being encoded.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Argv(Vec<Vec<u8>>);

impl Argv {
    /// No arguments yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Append one argument.
    pub fn push(&mut self, arg: impl EncodeArg) -> &mut Self {
        let mut bytes = Vec::new();
        arg.encode_arg(&mut bytes);
        self.0.push(bytes);
        self
    }

    /// Append an option's keyword and then its value, when there is one.
    pub fn option<T: EncodeArg>(&mut self, keyword: &str, value: Option<T>) -> &mut Self {
        if let Some(value) = value {
            self.push(keyword).push(value);
        }
        self
    }

    /// Append a flag's keyword when it is set.
    pub fn flag(&mut self, keyword: &str, set: bool) -> &mut Self {
        if set {
            self.push(keyword);
        }
        self
    }

    /// The arguments.
    pub fn items(&self) -> &[Vec<u8>] {
        &self.0
    }

    /// The arguments, owned.
    pub fn into_items(self) -> Vec<Vec<u8>> {
        self.0
    }
}

/// A value written as one argument.
pub trait EncodeArg {
    /// Append this value's bytes.
    fn encode_arg(&self, out: &mut Vec<u8>);
}

impl EncodeArg for &str {
    fn encode_arg(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes());
    }
}

impl EncodeArg for &[u8] {
    fn encode_arg(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }
}

impl EncodeArg for String {
    fn encode_arg(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes());
    }
}

macro_rules! encode_integers {
    ($($t:ty),*) => {$(
        impl EncodeArg for $t {
            fn encode_arg(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(self.to_string().as_bytes());
            }
        }
    )*};
}
encode_integers!(u8, u16, u32, u64, usize, i32, i64);

impl EncodeArg for f64 {
    /// The shortest text that reads back as the same `f64` (Rust's
    /// `Display`), never an exponent Redis's own parsers would refuse.
    fn encode_arg(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.to_string().as_bytes());
    }
}

/// `request`'s whole argv: its command words, then its arguments.
pub fn command_line<'a, R: Request<'a>>(request: &R) -> Vec<Vec<u8>> {
    let mut argv = Argv(R::COMMAND.iter().map(|word| word.as_bytes().to_vec()).collect());
    request.encode(&mut argv);
    argv.0
}

/// `request`'s arguments after its command words.
pub fn arguments<'a, R: Request<'a>>(request: &R) -> Vec<Vec<u8>> {
    let mut argv = Argv::new();
    request.encode(&mut argv);
    argv.0
}

/// The law of [`Request`] for the request named `words`
/// (`["DREAMS.RECORD"]`, `["TOWN.AGENT", "GET"]`, any case) on `argv`:
/// when `parse` accepts it, encoding the request and parsing that gives
/// the same request. `Err` describes a break of the law; `Ok(accepted)`
/// says whether `parse` accepted `argv`. `None` for a name no request
/// type has.
pub fn round_trip(words: &[&str], argv: &[&[u8]]) -> Option<Result<bool, String>> {
    macro_rules! each {
        ($($t:ty),* $(,)?) => {
            $(
                if matches(words, <$t>::COMMAND) {
                    let Ok(request) = <$t>::parse(argv) else { return Some(Ok(false)) };
                    let encoded = arguments(&request);
                    let items: Vec<&[u8]> = encoded.iter().map(Vec::as_slice).collect();
                    return Some(match <$t>::parse(&items) {
                        Ok(again) if again == request => Ok(true),
                        Ok(again) => Err(format!("{words:?}: {request:?} encodes as {encoded:?}, read back as {again:?}")),
                        Err(error) => Err(format!("{words:?}: {request:?} encodes as {encoded:?}, refused: {error}")),
                    });
                }
            )*
        };
    }
    each!(
        dreams::Record,
        town::Send,
        town::Recv,
        town::Ack,
        town::Requeue,
        town::Extend,
        town::Len,
        town::Peek,
        town::Reclaim,
        town::Broadcast,
        town::Reset,
        town::Stats,
        town::AgentSet,
        town::AgentGet,
        town::AgentDel,
        town::AgentList,
        town::AgentByName,
        town::AgentIncr,
        town::AgentHeartbeat,
        town::TaskSet,
        town::TaskGet,
        town::TaskDel,
        town::TaskList,
        town::ActivityLog,
        town::ActivityGet,
        town::BacklogPush,
        town::BacklogPop,
        town::BacklogList,
        town::BacklogLen,
        town::BacklogRemove,
        town::StopRequest,
        town::StopCheck,
        town::StopClear,
        dreams::Fire,
        dreams::Ack,
        dreams::Drain,
        dreams::Settle,
        dreams::Recover,
        dreams::Redrive,
        dreams::Len,
        dreams::Counters,
        dreams::Extend,
        dreams::Inflight,
        dreams::Stats,
        dreams::Pause,
        dreams::Resume,
        dreams::LimitSet,
        dreams::LimitGet,
        dreams::LimitClear,
        dryrun::DryRun,
    );
    None
}

/// Whether `words` name `command` (any case).
fn matches(words: &[&str], command: &[&str]) -> bool {
    words.len() == command.len() && words.iter().zip(command).all(|(word, name)| word.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests;
