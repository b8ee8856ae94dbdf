//! A raw RESP connection: commands written as RESP arrays, replies read
//! frame by frame with their exact type kept, RESP2 and RESP3 alike. A
//! client library folds `$-1`, `*-1` and `_` into one nil and a RESP3 map
//! into whatever it likes; tests that compare a module command's reply
//! *type* with its native analogue's read it here instead.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One reply frame, as it came on the wire.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    /// `+text`
    Simple(String),
    /// `-text` (RESP3 `!` too)
    Error(String),
    /// `:n`
    Integer(i64),
    /// `$n` with its bytes (RESP3 `=` verbatim strings too, format included)
    Bulk(Vec<u8>),
    /// `$-1`: the RESP2 nil of one item
    NullBulk,
    /// `*-1`: the RESP2 nil of an array
    NullArray,
    /// `_`: the RESP3 null
    Null,
    /// `*n`
    Array(Vec<Frame>),
    /// `%n` (RESP3)
    Map(Vec<(Frame, Frame)>),
    /// `~n` (RESP3)
    Set(Vec<Frame>),
    /// `>n` (RESP3 out-of-band push)
    Push(Vec<Frame>),
    /// `,x` (RESP3), as written
    Double(String),
    /// `#t` / `#f` (RESP3)
    Boolean(bool),
    /// `(n` (RESP3), as written
    BigNumber(String),
}

impl Frame {
    /// The frame's shape with its contents left out: type markers only,
    /// nested (`%{$:$}` for a map of bulk strings...), for comparing a
    /// reply's types with another's whatever their values.
    pub fn shape(&self) -> String {
        let list = |items: &[Frame]| items.iter().map(Frame::shape).collect::<Vec<_>>().join(",");
        match self {
            Frame::Simple(_) => "+".into(),
            Frame::Error(_) => "-".into(),
            Frame::Integer(_) => ":".into(),
            Frame::Bulk(_) => "$".into(),
            Frame::NullBulk => "$-1".into(),
            Frame::NullArray => "*-1".into(),
            Frame::Null => "_".into(),
            Frame::Array(items) => format!("*[{}]", list(items)),
            Frame::Map(pairs) => {
                let pairs: Vec<String> = pairs.iter().map(|(k, v)| format!("{}:{}", k.shape(), v.shape())).collect();
                format!("%{{{}}}", pairs.join(","))
            }
            Frame::Set(items) => format!("~[{}]", list(items)),
            Frame::Push(items) => format!(">[{}]", list(items)),
            Frame::Double(_) => ",".into(),
            Frame::Boolean(_) => "#".into(),
            Frame::BigNumber(_) => "(".into(),
        }
    }

    /// The text of a bulk or simple string.
    pub fn text(&self) -> Option<String> {
        match self {
            Frame::Bulk(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
            Frame::Simple(text) => Some(text.clone()),
            _ => None,
        }
    }

    /// Field/value pairs of a RESP3 map or a RESP2 flat array, as text
    /// (`None` for another frame or a value that is not a string, an
    /// integer or a nil).
    pub fn pairs(&self) -> Option<Vec<(String, String)>> {
        let value = |frame: &Frame| match frame {
            Frame::Integer(n) => Some(n.to_string()),
            Frame::NullBulk | Frame::Null | Frame::NullArray => Some("(nil)".to_owned()),
            other => other.text(),
        };
        match self {
            Frame::Map(pairs) => pairs.iter().map(|(k, v)| Some((k.text()?, value(v)?))).collect(),
            Frame::Array(items) if items.len() % 2 == 0 => {
                items.chunks(2).map(|pair| Some((pair[0].text()?, value(&pair[1])?))).collect()
            }
            _ => None,
        }
    }
}

/// A connection that writes commands and reads raw frames.
pub struct RawConnection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl RawConnection {
    /// Connect to `127.0.0.1:port` (RESP2 until [`RawConnection::hello`]).
    pub fn connect(port: u16) -> Self {
        let writer = TcpStream::connect(("127.0.0.1", port)).expect("raw connection");
        writer.set_read_timeout(Some(crate::DEADLINE)).expect("read timeout");
        let reader = BufReader::new(writer.try_clone().expect("clone the socket"));
        Self { reader, writer }
    }

    /// Connect and switch to `protocol` (2 or 3) with `HELLO`.
    pub fn with_protocol(port: u16, protocol: u8) -> Self {
        let mut con = Self::connect(port);
        con.hello(protocol);
        con
    }

    /// `HELLO <protocol>`; panics on an error reply.
    pub fn hello(&mut self, protocol: u8) {
        let reply = self.call(&["HELLO", &protocol.to_string()]);
        assert!(!matches!(reply, Frame::Error(_)), "HELLO {protocol}: {reply:?}");
    }

    /// Write one command.
    pub fn send(&mut self, args: &[&str]) {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            out.extend_from_slice(arg.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        self.writer.write_all(&out).expect("write the command");
    }

    /// Write one command and read its reply (push frames skipped).
    pub fn call(&mut self, args: &[&str]) -> Frame {
        self.send(args);
        self.reply()
    }

    /// Read the next reply that is not an out-of-band push.
    pub fn reply(&mut self) -> Frame {
        loop {
            match self.frame() {
                Frame::Push(_) => continue,
                frame => return frame,
            }
        }
    }

    /// Set the read timeout (a test that expects a reply later).
    pub fn set_read_timeout(&mut self, timeout: Duration) {
        self.writer.set_read_timeout(Some(timeout)).expect("read timeout");
    }

    /// Read one frame, whatever it is.
    pub fn frame(&mut self) -> Frame {
        let line = self.line();
        let (kind, rest) = line.split_at(1);
        let number = || rest.parse::<i64>().unwrap_or_else(|_| panic!("bad length in {line:?}"));
        match kind {
            "+" => Frame::Simple(rest.to_owned()),
            "-" => Frame::Error(rest.to_owned()),
            ":" => Frame::Integer(number()),
            "$" if rest == "-1" => Frame::NullBulk,
            "$" | "=" | "!" => {
                let mut bytes = vec![0; number() as usize + 2];
                self.reader.read_exact(&mut bytes).expect("bulk bytes");
                bytes.truncate(bytes.len() - 2);
                match kind {
                    "!" => Frame::Error(String::from_utf8_lossy(&bytes).into_owned()),
                    _ => Frame::Bulk(bytes),
                }
            }
            "*" if rest == "-1" => Frame::NullArray,
            "*" => Frame::Array((0..number()).map(|_| self.frame()).collect()),
            "~" => Frame::Set((0..number()).map(|_| self.frame()).collect()),
            ">" => Frame::Push((0..number()).map(|_| self.frame()).collect()),
            "%" => Frame::Map((0..number()).map(|_| (self.frame(), self.frame())).collect()),
            "_" => Frame::Null,
            "," => Frame::Double(rest.to_owned()),
            "#" => Frame::Boolean(rest == "t"),
            "(" => Frame::BigNumber(rest.to_owned()),
            other => panic!("unknown RESP type {other:?} in {line:?}"),
        }
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("a reply line");
        assert!(line.ends_with("\r\n"), "connection closed or line cut: {line:?}");
        line.truncate(line.len() - 2);
        line
    }
}
