//! The error a command answers: one text that starts with its code
//! (`ERR ...`, `WRONGTYPE ...`, `NOPERM ...`), as Redis's own errors do.
//! Defined here so a request's parse step (the module's) and a client that
//! checks its arguments before sending say the same words.

/// A command error; the message starts with its code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandError(String);

impl CommandError {
    /// `ERR <message>`.
    pub fn err(message: impl std::fmt::Display) -> Self {
        Self(format!("ERR {message}"))
    }

    /// An error with its own code, e.g. `NOPERM ...`.
    pub fn coded(code: &str, message: impl std::fmt::Display) -> Self {
        Self(format!("{code} {message}"))
    }

    /// `WRONGTYPE` for `key`.
    pub fn wrong_type(key: &[u8]) -> Self {
        Self(format!(
            "WRONGTYPE Operation against a key holding the wrong kind of value ({})",
            String::from_utf8_lossy(key)
        ))
    }

    /// `ERR syntax error`.
    pub fn syntax() -> Self {
        Self::err("syntax error")
    }

    /// The full message.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CommandError {}
