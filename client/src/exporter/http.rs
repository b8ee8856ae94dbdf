//! A minimal HTTP/1.1 server for `/metrics` on a std `TcpListener`: one
//! request per connection, answered in turn (Prometheus scrapes one at a
//! time; a scrape is short). No dependency beyond std.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use super::Exporter;

/// Serve `exporter` on `listener` until the process ends.
pub fn serve(listener: TcpListener, mut exporter: Exporter) {
    for stream in listener.incoming() {
        match stream {
            Ok(stream) => {
                if let Err(error) = answer(stream, &mut exporter) {
                    eprintln!("dreamtown-exporter: request failed: {error}");
                }
            }
            Err(error) => eprintln!("dreamtown-exporter: accept failed: {error}"),
        }
    }
}

fn answer(stream: TcpStream, exporter: &mut Exporter) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.by_ref().take(8192).read_line(&mut request_line)?;
    // Skip the headers (bounded): the request has no body we use.
    let mut header = String::new();
    let mut total = 0usize;
    loop {
        header.clear();
        let n = reader.by_ref().take(8192).read_line(&mut header)?;
        total += n;
        if n == 0 || header == "\r\n" || header == "\n" || total > 65_536 {
            break;
        }
    }
    let mut parts = request_line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    let (status, kind, body) = match (method, path) {
        ("GET", "/metrics") => ("200 OK", "text/plain; version=0.0.4; charset=utf-8", exporter.scrape()),
        ("GET", "/") => (
            "200 OK",
            "text/html; charset=utf-8",
            "<html><body><h1>dreamtown-exporter</h1><p><a href=\"/metrics\">/metrics</a></p></body></html>\n"
                .to_owned(),
        ),
        ("GET", _) => ("404 Not Found", "text/plain; charset=utf-8", "not found: try /metrics\n".to_owned()),
        _ => ("405 Method Not Allowed", "text/plain; charset=utf-8", "only GET\n".to_owned()),
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}
