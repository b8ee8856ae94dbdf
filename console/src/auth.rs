//! Who may act, and how a form proves it came from the console.
//!
//! Reading needs nothing but reaching the listen address (127.0.0.1 by
//! default). Every write needs a session, got at `/login` in one of two
//! ways the operator enables:
//!
//! * `--token-file`: the operator token; actions then run on the console's
//!   own connections (as the console's user);
//! * `--acl-login`: a Redis ACL user and password, checked by
//!   authenticating to the server; that session's actions run on
//!   connections of its own, as that user, so the server's ACL decides
//!   what each operator may do (a refused action shows the server's
//!   `NOPERM`).
//!
//! A session is a random id in a cookie (`HttpOnly`, `SameSite=Strict`,
//! `Path=/`), kept in memory, forgotten after `ttl` without use or at
//! sign-out. Each session has a random CSRF token that every form carries
//! in a hidden field; a write whose token does not match its session's,
//! or whose `Origin` header names another site, is refused and changes
//! nothing.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::backend::Backend;

/// The cookie holding the session id.
pub const COOKIE: &str = "dreamtown_console";

/// How operators sign in.
#[derive(Clone, Debug, Default)]
pub struct AuthConfig {
    /// The operator token (from `--token-file`).
    pub token: Option<String>,
    /// Sign in as a Redis ACL user.
    pub acl_login: bool,
    /// Sessions unused this long are forgotten.
    pub ttl: Duration,
}

impl AuthConfig {
    /// Can anyone sign in at all?
    pub fn enabled(&self) -> bool {
        self.token.is_some() || self.acl_login
    }
}

/// A signed-in operator.
#[derive(Clone)]
pub struct Session {
    /// Who: `operator` (the token) or the ACL user's name.
    pub who: String,
    /// The token every form of this session carries.
    pub csrf: String,
    /// The connections actions use: the ACL user's own, or None for the console's.
    pub backend: Option<Backend>,
    /// A message to show on the next page.
    pub flash: Option<String>,
    last_used: Instant,
}

/// Every session, by id.
#[derive(Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Session>>,
}

/// A fresh random token: two v4 UUIDs, 244 random bits from the OS.
pub fn random_token() -> String {
    format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())
}

/// Compare secrets in time that does not depend on where they differ.
pub fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Sessions {
    /// Open a session; its id (for the cookie).
    pub fn open(&self, who: String, backend: Option<Backend>) -> String {
        let id = random_token();
        let session = Session { who, csrf: random_token(), backend, flash: None, last_used: Instant::now() };
        self.lock().insert(id.clone(), session);
        id
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The live session `id`, marked used (expired ones are dropped).
    pub fn get(&self, id: &str, ttl: Duration) -> Option<Session> {
        let mut map = self.lock();
        map.retain(|_, session| session.last_used.elapsed() < ttl);
        let session = map.get_mut(id)?;
        session.last_used = Instant::now();
        Some(session.clone())
    }

    /// Take the session's flash message.
    pub fn take_flash(&self, id: &str) -> Option<String> {
        self.lock().get_mut(id)?.flash.take()
    }

    /// Leave a message for the session's next page.
    pub fn set_flash(&self, id: &str, message: String) {
        if let Some(session) = self.lock().get_mut(id) {
            session.flash = Some(message);
        }
    }

    /// Forget a session.
    pub fn close(&self, id: &str) {
        self.lock().remove(id);
    }
}

/// The session id in a `Cookie` header.
pub fn session_id(cookie_header: Option<&str>) -> Option<String> {
    cookie_header?
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_owned())
        .filter(|value| !value.is_empty())
}

/// The `Set-Cookie` value that opens a session.
pub fn cookie(id: &str) -> String {
    format!("{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict")
}

/// The `Set-Cookie` value that closes one.
pub fn expired_cookie() -> String {
    format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
}

/// Does an `Origin` header (if any) name this console (`host` as the
/// browser addressed it)? A missing header passes: the CSRF token decides.
pub fn same_origin(origin: Option<&str>, host: Option<&str>) -> bool {
    match (origin, host) {
        (None, _) => true,
        (Some(origin), Some(host)) => origin == format!("http://{host}") || origin == format!("https://{host}"),
        (Some(_), None) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_origins_and_secrets() {
        assert_eq!(session_id(Some("a=1; dreamtown_console=abc; b=2")).as_deref(), Some("abc"));
        assert_eq!(session_id(Some("dreamtown_console=")), None);
        assert_eq!(session_id(None), None);
        assert!(same_origin(Some("http://127.0.0.1:9809"), Some("127.0.0.1:9809")));
        assert!(!same_origin(Some("http://evil.example"), Some("127.0.0.1:9809")));
        assert!(!same_origin(Some("null"), Some("127.0.0.1:9809")));
        assert!(same_origin(None, Some("127.0.0.1:9809")));
        assert!(same_secret("abc", "abc") && !same_secret("abc", "abd") && !same_secret("abc", "ab"));
        assert_ne!(random_token(), random_token());
        assert_eq!(random_token().len(), 64);
    }

    #[test]
    fn sessions_expire_and_close() {
        let sessions = Sessions::default();
        let id = sessions.open("operator".into(), None);
        assert!(sessions.get(&id, Duration::from_secs(60)).is_some());
        sessions.set_flash(&id, "done".into());
        assert_eq!(sessions.take_flash(&id).as_deref(), Some("done"));
        assert_eq!(sessions.take_flash(&id), None);
        assert!(sessions.get(&id, Duration::ZERO).is_none(), "expired");
        let id = sessions.open("alice".into(), None);
        sessions.close(&id);
        assert!(sessions.get(&id, Duration::from_secs(60)).is_none());
    }
}
