//! `/metrics` over HTTP with axum (on hyper and tokio): `GET /metrics`
//! scrapes (one scrape at a time: a second request waits for the one under
//! way, as Prometheus scrapes one at a time anyway), `GET /` links to it,
//! other paths answer 404 and other methods 405.

use std::sync::Arc;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::sync::Mutex;

use super::Exporter;
use super::text::CONTENT_TYPE;

/// The routes over `exporter`.
pub fn router(exporter: Exporter) -> Router {
    let exporter = Arc::new(Mutex::new(exporter));
    Router::new()
        .route(
            "/metrics",
            get(move || {
                let exporter = Arc::clone(&exporter);
                async move {
                    let text = exporter.lock().await.scrape().await;
                    ([(header::CONTENT_TYPE, CONTENT_TYPE)], text)
                }
            }),
        )
        .route(
            "/",
            get(|| async {
                Html("<html><body><h1>dreamtown-exporter</h1><p><a href=\"/metrics\">/metrics</a></p></body></html>\n")
            }),
        )
        .fallback(|| async { (StatusCode::NOT_FOUND, "not found: try /metrics\n").into_response() })
}

/// Serve `exporter` on `listener` until the process ends.
pub async fn serve(listener: TcpListener, exporter: Exporter) -> std::io::Result<()> {
    axum::serve(listener, router(exporter)).await
}
