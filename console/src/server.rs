//! The HTTP side: routes, the pages around the views, sign-in and the
//! checks every write passes (a session, its CSRF token, the same origin)
//! before its command is sent.
//!
//! | route | what |
//! |---|---|
//! | `GET /` | the tenant list ([`crate::tenants`]) |
//! | `GET /org?name=` | one organization ([`crate::org`]) |
//! | `GET /town?name=` | one town ([`crate::town`]) |
//! | `GET, POST /login`, `POST /logout` | sessions ([`crate::auth`]) |
//! | `POST /act` | an action, or its dry run ([`crate::actions`]) |
//! | `GET /static/console.css`, `/static/console.js` | the one stylesheet and script |
//! | `GET /healthz` | `ok` |
//!
//! Any page with `part=live` answers only its refreshed part. Every
//! response forbids framing and inline script (Content-Security-Policy)
//! and caching.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use crate::actions::{self, Action, ActionForm};
use crate::auth::{self, AuthConfig, Session, Sessions};
use crate::backend::Backend;
use crate::directory::Directory;
use crate::html::{self, Frame, esc};
use crate::{org, tenants, town};

/// What every handler shares.
#[derive(Clone)]
pub struct App {
    inner: Arc<AppInner>,
}

struct AppInner {
    backend: Backend,
    directory: Directory,
    auth: AuthConfig,
    sessions: Sessions,
    label: String,
}

impl App {
    /// The console over `backend`, its directory (already sweeping) and sign-in rules.
    pub fn new(backend: Backend, directory: Directory, auth: AuthConfig) -> Self {
        let label = backend.label();
        App { inner: Arc::new(AppInner { backend, directory, auth, sessions: Sessions::default(), label }) }
    }

    /// The routes.
    pub fn router(self) -> Router {
        Router::new()
            .route("/", get(list_page))
            .route("/org", get(org_page))
            .route("/town", get(town_page))
            .route("/login", get(login_page).post(login))
            .route("/logout", post(logout))
            .route("/act", post(act))
            .route("/static/console.css", get(|| async { asset("text/css; charset=utf-8", html::CSS) }))
            .route("/static/console.js", get(|| async { asset("text/javascript; charset=utf-8", html::JS) }))
            .route("/healthz", get(|| async { "ok" }))
            .fallback(|| async { (StatusCode::NOT_FOUND, "not found") })
            .layer(axum::middleware::map_response(secure_headers))
            .with_state(self)
    }

    fn session(&self, headers: &HeaderMap) -> Option<(String, Session)> {
        let id = auth::session_id(headers.get(header::COOKIE).and_then(|v| v.to_str().ok()))?;
        let session = self.inner.sessions.get(&id, self.inner.auth.ttl)?;
        Some((id, session))
    }

    fn render(&self, headers: &HeaderMap, title: &str, body: &str) -> Response {
        let session = self.session(headers);
        let flash = session.as_ref().and_then(|(id, _)| self.inner.sessions.take_flash(id));
        let frame = Frame {
            title,
            target: &self.inner.label,
            who: session.as_ref().map(|(_, s)| (s.who.as_str(), s.csrf.as_str())),
            login_possible: self.inner.auth.enabled(),
            flash: flash.as_deref(),
        };
        page_response(StatusCode::OK, html::page(&frame, body))
    }
}

async fn secure_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let set = |headers: &mut HeaderMap, name: header::HeaderName, value: &'static str| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(
        headers,
        header::CONTENT_SECURITY_POLICY,
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; \
         frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    );
    set(headers, header::X_FRAME_OPTIONS, "DENY");
    set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(headers, header::REFERRER_POLICY, "same-origin");
    set(headers, header::CACHE_CONTROL, "no-store");
    response
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

fn page_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

fn fragment(body: String) -> Response {
    page_response(StatusCode::OK, body)
}

fn see_other(location: &str) -> Response {
    (StatusCode::SEE_OTHER, [(header::LOCATION, location.to_owned())]).into_response()
}

async fn list_page(State(app): State<App>, headers: HeaderMap, Query(query): Query<tenants::ListQuery>) -> Response {
    app.inner.directory.touch();
    let now = SystemTime::now();
    let live = app.inner.directory.with_snapshot(|snapshot| {
        let page = tenants::page(tenants::rows(snapshot, &query), &query);
        tenants::live(snapshot, &query, &page, now)
    });
    if query.part.as_deref() == Some("live") {
        return fragment(live);
    }
    let body = format!(
        "<h1>Tenants</h1>{}<div id=\"live\" data-src=\"{}\" data-every=\"2000\">{live}</div>",
        tenants::filters(&query),
        esc(&tenants::live_src(&query))
    );
    app.render(&headers, "tenants", &body)
}

async fn org_page(State(app): State<App>, headers: HeaderMap, Query(query): Query<org::OrgQuery>) -> Response {
    app.inner.directory.touch();
    let session = app.session(&headers);
    let csrf = session.as_ref().map(|(_, s)| s.csrf.clone());
    let data = org::load(&app.inner.backend, &app.inner.directory, &query).await;
    let live = org::live(&query, &data);
    if query.part.as_deref() == Some("live") {
        return fragment(live);
    }
    let body = org::body(&query, &live, csrf.as_deref());
    app.render(&headers, &format!("organization {}", query.name), &body)
}

async fn town_page(State(app): State<App>, headers: HeaderMap, Query(query): Query<town::TownQuery>) -> Response {
    app.inner.directory.touch();
    let session = app.session(&headers);
    let csrf = session.as_ref().map(|(_, s)| s.csrf.clone());
    let data = town::load(&app.inner.backend, &query).await;
    let live = town::live(&query, &data, csrf.as_deref());
    if query.part.as_deref() == Some("live") {
        return fragment(live);
    }
    let body = town::body(&query, &live, csrf.as_deref());
    app.render(&headers, &format!("town {}", query.name), &body)
}

fn login_form(auth: &AuthConfig, error: Option<&str>) -> String {
    let mut body = String::from("<h1>Sign in to act</h1>");
    if let Some(error) = error {
        body.push_str(&format!("<p class=\"refused\" id=\"login-error\">{}</p>", esc(error)));
    }
    if !auth.enabled() {
        body.push_str("<p>This console was started without --token-file or --acl-login: it is read-only.</p>");
        return body;
    }
    body.push_str("<form method=\"post\" action=\"/login\" id=\"login-form\">");
    if auth.token.is_some() {
        body.push_str(
            "<p><label>operator token <input type=\"password\" name=\"token\" id=\"token\" autocomplete=\"off\"></label></p>",
        );
    }
    if auth.acl_login {
        body.push_str(&format!(
            "<p>{}<label>ACL user <input name=\"user\" id=\"user\" autocomplete=\"username\"></label> \
             <label>password <input type=\"password\" name=\"password\" id=\"password\" autocomplete=\"current-password\"></label></p>",
            if auth.token.is_some() { "or, as a Redis ACL user (your actions run as that user): " } else { "" }
        ));
    }
    body.push_str("<button id=\"sign-in\">sign in</button></form>");
    body
}

async fn login_page(State(app): State<App>, headers: HeaderMap) -> Response {
    app.render(&headers, "sign in", &login_form(&app.inner.auth, None))
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct LoginForm {
    token: String,
    user: String,
    password: String,
}

async fn login(State(app): State<App>, headers: HeaderMap, Form(form): Form<LoginForm>) -> Response {
    let auth = &app.inner.auth;
    let opened = if !form.token.is_empty() {
        match &auth.token {
            Some(token) if auth::same_secret(token, &form.token) => Ok(("operator".to_owned(), None)),
            _ => Err("wrong token".to_owned()),
        }
    } else if auth.acl_login && !form.user.is_empty() {
        let backend = app.inner.backend.as_user(&form.user, &form.password);
        match check_user(&backend).await {
            Ok(()) => Ok((form.user.clone(), Some(backend))),
            Err(error) => Err(format!("the server refused {}: {error}", form.user)),
        }
    } else {
        Err("give the operator token, or an ACL user and password".to_owned())
    };
    match opened {
        Ok((who, backend)) => {
            let id = app.inner.sessions.open(who, backend);
            let mut response = see_other("/");
            if let Ok(value) = HeaderValue::from_str(&auth::cookie(&id)) {
                response.headers_mut().insert(header::SET_COOKIE, value);
            }
            response
        }
        Err(error) => {
            // Slow down guessing.
            tokio::time::sleep(Duration::from_millis(300)).await;
            let mut response = app.render(&headers, "sign in", &login_form(auth, Some(&error)));
            *response.status_mut() = StatusCode::FORBIDDEN;
            response
        }
    }
}

/// Authenticate as the user on every master (the connection's handshake
/// sends `AUTH`), and `PING`.
async fn check_user(backend: &Backend) -> Result<(), String> {
    let nodes = backend.nodes().await.map_err(|e| e.to_string())?;
    for (node, _) in nodes {
        let reply = backend.on_node(node, &[redis::cmd("PING")]).await.map_err(|e| e.to_string())?;
        if let Some(error) = reply.first().and_then(crate::fields::error_text) {
            return Err(error);
        }
    }
    Ok(())
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CsrfForm {
    csrf: String,
}

async fn logout(State(app): State<App>, headers: HeaderMap, Form(form): Form<CsrfForm>) -> Response {
    if let Some((id, session)) = app.session(&headers)
        && auth::same_secret(&session.csrf, &form.csrf)
    {
        app.inner.sessions.close(&id);
    }
    let mut response = see_other("/");
    if let Ok(value) = HeaderValue::from_str(&auth::expired_cookie()) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

fn refused(app: &App, headers: &HeaderMap, status: StatusCode, why: &str) -> Response {
    let body =
        format!("<h1>Refused</h1><p class=\"refused\" id=\"refused\">{}</p><p>Nothing was changed.</p>", esc(why));
    let mut response = app.render(headers, "refused", &body);
    *response.status_mut() = status;
    response
}

async fn act(State(app): State<App>, headers: HeaderMap, Form(form): Form<ActionForm>) -> Response {
    let Some((id, session)) = app.session(&headers) else {
        return refused(&app, &headers, StatusCode::UNAUTHORIZED, "sign in first: writes need a session");
    };
    if !auth::same_secret(&session.csrf, &form.csrf) {
        return refused(&app, &headers, StatusCode::FORBIDDEN, "this form is not from this session (CSRF token)");
    }
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    if !auth::same_origin(origin, host) {
        return refused(&app, &headers, StatusCode::FORBIDDEN, "the form was posted from another site");
    }
    let action = match Action::parse(&form) {
        Ok(action) => action,
        Err(error) => return refused(&app, &headers, StatusCode::BAD_REQUEST, &error),
    };
    let backend = session.backend.clone().unwrap_or_else(|| app.inner.backend.clone());
    if action.is_bulk() && form.confirm.as_deref() != Some("1") {
        let mut body = actions::dry_run(&backend, &action).await;
        body.push_str(&actions::confirm_form(&form, &session.csrf, &action.return_to()));
        return app.render(&headers, "dry run", &body);
    }
    let message = match actions::run(&backend, &action).await {
        Ok(reply) => action.describe(&reply),
        Err(error) => format!("{} → not sent: {error}", action.command_line()),
    };
    app.inner.sessions.set_flash(&id, message);
    let (family, tenant) = action.tenant();
    app.inner.directory.refresh(family, tenant).await;
    see_other(&action.return_to())
}
