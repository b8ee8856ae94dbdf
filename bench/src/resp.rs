//! The load generator's RESP2 connection: a blocking TCP connection with
//! its own buffered writer and reader, so a loop controls exactly what goes
//! out in one write (one command, or a pipelined batch, or a blocking call
//! whose reply it reads later) and pays no client library's cost per
//! command: the loops measure round trips, and a heavier client would sit
//! in every one of them. The redis crate the rest of the workspace uses is
//! async and buffers on its own terms; this is the one RESP writer and
//! reader of the bench.

use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::net::TcpStream;

/// One reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `+...`
    Status(String),
    /// `-...`
    Error(String),
    /// `:...`
    Int(i64),
    /// `$...`
    Bulk(Vec<u8>),
    /// `$-1` or `*-1`.
    Nil,
    /// `*...`
    Array(Vec<Reply>),
}

impl Reply {
    /// The bytes of a bulk string, else an error naming what came.
    pub fn bulk(self) -> Result<Vec<u8>, String> {
        match self {
            Reply::Bulk(bytes) => Ok(bytes),
            other => Err(format!("expected a bulk string, got {other:?}")),
        }
    }

    /// An integer reply's value.
    pub fn int(&self) -> Result<i64, String> {
        match self {
            Reply::Int(n) => Ok(*n),
            other => Err(format!("expected an integer, got {other:?}")),
        }
    }

    /// An array reply's elements.
    pub fn array(self) -> Result<Vec<Reply>, String> {
        match self {
            Reply::Array(items) => Ok(items),
            other => Err(format!("expected an array, got {other:?}")),
        }
    }
}

/// A command's arguments as owned byte strings.
pub fn args(parts: &[&str]) -> Vec<Vec<u8>> {
    parts.iter().map(|part| part.as_bytes().to_vec()).collect()
}

/// Write one command as a RESP array of bulk strings.
pub fn encode(out: &mut impl Write, args: &[&[u8]]) -> io::Result<()> {
    write!(out, "*{}\r\n", args.len())?;
    for arg in args {
        write!(out, "${}\r\n", arg.len())?;
        out.write_all(arg)?;
        out.write_all(b"\r\n")?;
    }
    Ok(())
}

/// Read one reply (nested arrays included) from `input`.
pub fn decode(input: &mut impl BufRead) -> Result<Reply, String> {
    let line = read_line(input)?;
    let (kind, rest) = match line.as_bytes().first() {
        Some(&kind) if kind.is_ascii() => (kind, line.get(1..).unwrap_or_default()),
        _ => return Err(format!("bad RESP line {line:?}")),
    };
    let number = || rest.parse::<i64>().map_err(|e| format!("bad RESP length {rest:?}: {e}"));
    match kind {
        b'+' => Ok(Reply::Status(rest.to_owned())),
        b'-' => Ok(Reply::Error(rest.to_owned())),
        b':' => Ok(Reply::Int(number()?)),
        b'$' => {
            let Ok(len) = usize::try_from(number()?) else {
                return Ok(Reply::Nil);
            };
            let mut buf = vec![0u8; len + 2];
            input.read_exact(&mut buf).map_err(|e| e.to_string())?;
            if !buf.ends_with(b"\r\n") {
                return Err(format!("a bulk string of {len} bytes without its CRLF"));
            }
            buf.truncate(len);
            Ok(Reply::Bulk(buf))
        }
        b'*' => {
            let Ok(len) = usize::try_from(number()?) else {
                return Ok(Reply::Nil);
            };
            (0..len).map(|_| decode(input)).collect::<Result<_, _>>().map(Reply::Array)
        }
        _ => Err(format!("bad RESP line {line:?}")),
    }
}

/// One CRLF-terminated line, without its CRLF.
fn read_line(input: &mut impl BufRead) -> Result<String, String> {
    let mut line = String::new();
    input.read_line(&mut line).map_err(|e| e.to_string())?;
    match line.strip_suffix("\r\n") {
        Some(text) => Ok(text.to_owned()),
        None => Err("connection closed".into()),
    }
}

/// One connection to the server under test (loopback only).
pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: BufWriter<TcpStream>,
}

impl Conn {
    /// Connect to 127.0.0.1:`port`, Nagle off.
    pub fn open(port: u16) -> io::Result<Conn> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            reader: BufReader::with_capacity(1 << 16, stream.try_clone()?),
            writer: BufWriter::with_capacity(1 << 16, stream),
        })
    }

    /// Queue one command (sent at the next `flush`/`call`).
    pub fn send(&mut self, args: &[&[u8]]) -> Result<(), String> {
        encode(&mut self.writer, args).map_err(|e| e.to_string())
    }

    /// Send what is queued.
    pub fn flush(&mut self) -> Result<(), String> {
        self.writer.flush().map_err(|e| e.to_string())
    }

    /// One round trip.
    pub fn call(&mut self, args: &[&[u8]]) -> Result<Reply, String> {
        self.send(args)?;
        self.flush()?;
        self.read()
    }

    /// The next reply.
    pub fn read(&mut self) -> Result<Reply, String> {
        decode(&mut self.reader)
    }

    /// Send `count` commands built by `command(i)`, in order, pipelined in
    /// batches of 1,000, and check every reply with `expect`.
    pub fn pipelined(
        &mut self,
        count: u64,
        mut command: impl FnMut(u64) -> Vec<Vec<u8>>,
        expect: impl Fn(&Reply) -> bool,
    ) -> Result<(), String> {
        const BATCH: u64 = 1000;
        let mut sent = 0;
        while sent < count {
            let batch = BATCH.min(count - sent);
            for i in sent..sent + batch {
                let args = command(i);
                let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                self.send(&refs)?;
            }
            self.flush()?;
            for _ in 0..batch {
                let reply = self.read()?;
                if !expect(&reply) {
                    return Err(format!("unexpected prefill reply {reply:?}"));
                }
            }
            sent += batch;
        }
        Ok(())
    }

    /// Send `commands` pipelined in batches of 1,000; their replies, or the
    /// first error reply as an error.
    pub fn pipeline(&mut self, commands: &[Vec<Vec<u8>>]) -> Result<Vec<Reply>, String> {
        let mut replies = Vec::with_capacity(commands.len());
        for chunk in commands.chunks(1000) {
            for args in chunk {
                let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                self.send(&refs)?;
            }
            self.flush()?;
            for _ in chunk {
                match self.read()? {
                    Reply::Error(e) => return Err(format!("prefill refused: {e}")),
                    reply => replies.push(reply),
                }
            }
        }
        Ok(replies)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(wire: &[u8]) -> Result<Reply, String> {
        decode(&mut io::Cursor::new(wire))
    }

    #[test]
    fn commands_encode_as_arrays_of_bulk_strings() {
        let mut out = Vec::new();
        encode(&mut out, &[b"DREAMS.DRAIN", b"bench", b"", b"a\r\nb"]).unwrap();
        assert_eq!(out, b"*4\r\n$12\r\nDREAMS.DRAIN\r\n$5\r\nbench\r\n$0\r\n\r\n$4\r\na\r\nb\r\n");
    }

    #[test]
    fn every_reply_kind_decodes() {
        assert_eq!(decoded(b"+OK\r\n"), Ok(Reply::Status("OK".into())));
        assert_eq!(decoded(b"-ERR no\r\n"), Ok(Reply::Error("ERR no".into())));
        assert_eq!(decoded(b":-42\r\n"), Ok(Reply::Int(-42)));
        assert_eq!(decoded(b"$5\r\na\r\nbc\r\n"), Ok(Reply::Bulk(b"a\r\nbc".to_vec())));
        assert_eq!(decoded(b"$-1\r\n"), Ok(Reply::Nil));
        assert_eq!(decoded(b"*-1\r\n"), Ok(Reply::Nil));
        assert_eq!(
            decoded(b"*3\r\n+acknowledged\r\n*1\r\n:1\r\n$0\r\n\r\n"),
            Ok(Reply::Array(vec![
                Reply::Status("acknowledged".into()),
                Reply::Array(vec![Reply::Int(1)]),
                Reply::Bulk(Vec::new()),
            ]))
        );
    }

    #[test]
    fn replies_follow_one_another_in_a_pipeline() {
        let mut wire = io::Cursor::new(b":1\r\n$1\r\nx\r\n+OK\r\n".to_vec());
        assert_eq!(decode(&mut wire), Ok(Reply::Int(1)));
        assert_eq!(decode(&mut wire), Ok(Reply::Bulk(b"x".to_vec())));
        assert_eq!(decode(&mut wire), Ok(Reply::Status("OK".into())));
        assert!(decode(&mut wire).is_err(), "end of stream is a closed connection");
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        for wire in
            [&b"\r\n"[..], b"?x\r\n", b":x\r\n", b"$3\r\nab", b"$1\r\nab\r\n", b"+OK", b"\xc3\xa9\r\n", b"*2\r\n:1\r\n"]
        {
            assert!(decoded(wire).is_err(), "{wire:?}");
        }
    }
}
