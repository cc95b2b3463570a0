//! A hand-written PostgreSQL client for the load path: one [`Stream`], one
//! reused output buffer, one reused [`Inbox`], no task or channel between the
//! caller and the socket.
//!
//! Why not tokio-postgres (still used for `prepare`, the preflight and the
//! telemetry probe): it splits each query between the caller and a
//! connection task (the request and the response each cross a channel, two
//! task wake-ups per query), which cost about 2.6 times the
//! instructions per query of the hand-written one (figures:
//! `bench/notes/pgwire-cost.md`).
//!
//! System calls per query: one `sendto`, then one `recvfrom` tried at once
//! (libpq's `PQconsumeInput` after a send; [`Inbox::sent`] says why and
//! what it gained at 10 and 50 clients); when that finds nothing yet, one
//! `epoll_wait` (shared by the thread's connections) and one more `recvfrom`.
//! A thread that owns one connection blocks in that `recvfrom` instead
//! (`Stream::settle`): two system calls per query.
//!
//! Per query, prepared mode sends Bind (parameters and results in text
//! format, as `pgbench -M prepared` does, so any column type works) +
//! Execute + Sync in one write and reads to ReadyForQuery, looking at nothing
//! but each message's tag, and at the first ErrorResponse. `--no-prepare`
//! sends a simple Query message.
//!
//! Frontend messages are encoded with `postgres-protocol`. Backend messages are
//! parsed here, on the inbox bytes: the crate's parser wants a `BytesMut` and
//! hands out a reference-counted `Bytes` for every message, while the load
//! path needs only the tag of most messages: it would add about a fifth to
//! this client's cost per query (`bench/notes/pgwire-cost.md`).
//! The few messages whose content matters (ErrorResponse, the
//! authentication requests) are small and parsed here too.

use crate::io_class::connect_io_class;
use crate::stream::{Inbox, Stream};
use crate::url::{SqlTls, SqlUrl};
use crate::value::Value;
use bytes::BytesMut;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256};
use postgres_protocol::message::frontend;
use postgres_protocol::IsNull;
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::io;
use std::time::Duration;

/// Largest backend message accepted (PostgreSQL's own limit for one field
/// value is 1 GB); a larger length means the stream is out of step.
const MAX_MESSAGE: usize = 1 << 30;

/// How long a client whose write failed keeps reading for the server's
/// own reason (e.g. "terminating connection due to administrator command").
const LAST_WORDS: Duration = Duration::from_millis(100);

/// Splits a backend message header: its tag and its total length (tag byte,
/// length field and body). `Ok(None)`: fewer than 5 bytes yet.
pub(crate) fn header(buf: &[u8]) -> Result<Option<(u8, usize)>, String> {
    let Some(&[tag, a, b, c, d]) = buf.get(..5).map(|h| <&[u8; 5]>::try_from(h).expect("5 bytes")) else {
        return Ok(None);
    };
    let len = i32::from_be_bytes([a, b, c, d]);
    if len < 4 || len as usize > MAX_MESSAGE {
        return Err(format!("protocol error: invalid length {len} of a message tagged {:?}", tag as char));
    }
    Ok(Some((tag, 1 + len as usize)))
}

/// The fields of an ErrorResponse that scalelab reports.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ServerError {
    /// `S` (localized severity), else `V`: ERROR, FATAL, PANIC.
    pub severity: String,
    /// `C`: the SQLSTATE.
    pub code: String,
    /// `M`: the primary message.
    pub message: String,
}

impl ServerError {
    /// Parses an ErrorResponse (or NoticeResponse) body: fields of one type
    /// byte and a NUL-terminated string, ended by a zero byte.
    pub(crate) fn parse(body: &[u8]) -> Result<ServerError, String> {
        let mut e = ServerError::default();
        let mut rest = body;
        let mut verbose_severity = None;
        loop {
            match rest.split_first() {
                None => return Err("protocol error: ErrorResponse without its terminating zero".into()),
                Some((0, _)) => break,
                Some((&kind, tail)) => {
                    let nul = tail.iter().position(|&b| b == 0).ok_or("protocol error: ErrorResponse field without its NUL")?;
                    let value = String::from_utf8_lossy(&tail[..nul]).into_owned();
                    match kind {
                        b'S' => e.severity = value,
                        b'V' => verbose_severity = Some(value),
                        b'C' => e.code = value,
                        b'M' => e.message = value,
                        _ => {}
                    }
                    rest = &tail[nul + 1..];
                }
            }
        }
        if e.severity.is_empty() {
            e.severity = verbose_severity.unwrap_or_else(|| "ERROR".into());
        }
        Ok(e)
    }

    /// The error class by SQLSTATE, and the message as
    /// "{severity}: {message} (SQLSTATE {code})".
    pub(crate) fn failure(&self) -> Failure {
        let class = match self.code.as_str() {
            "40P01" => ErrorClass::Deadlock,
            "55P03" => ErrorClass::LockWaitTimeout,
            "40001" => ErrorClass::SerializationFailure,
            "53300" => ErrorClass::TooManyConnections,
            "57P01" | "57P02" | "57P03" => ErrorClass::ConnectionLost,
            _ => ErrorClass::SqlError,
        };
        Failure::new(class, format!("{}: {} (SQLSTATE {})", self.severity, self.message, self.code))
    }
}

/// An authentication request (message 'R').
#[derive(Debug, PartialEq)]
pub(crate) enum Auth<'a> {
    /// Authenticated.
    Ok,
    /// Send the password as is.
    Cleartext,
    /// Send md5(md5(password + user) + salt).
    Md5([u8; 4]),
    /// SASL, with the mechanisms the server offers.
    Sasl(Vec<&'a [u8]>),
    /// The server's SASL challenge.
    SaslContinue(&'a [u8]),
    /// The server's SASL outcome.
    SaslFinal(&'a [u8]),
    /// A method scalelab does not speak, by name.
    Unsupported(String),
}

impl Auth<'_> {
    /// Parses an authentication request body (an i32 code, then its data).
    pub(crate) fn parse(body: &[u8]) -> Result<Auth<'_>, String> {
        let short = || "protocol error: truncated authentication request".to_string();
        let code = i32::from_be_bytes(body.get(..4).ok_or_else(short)?.try_into().expect("4 bytes"));
        let data = &body[4..];
        Ok(match code {
            0 => Auth::Ok,
            3 => Auth::Cleartext,
            5 => Auth::Md5(data.get(..4).ok_or_else(short)?.try_into().expect("4 bytes")),
            10 => {
                let mut mechanisms = Vec::new();
                let mut rest = data;
                loop {
                    let nul = rest.iter().position(|&b| b == 0).ok_or_else(short)?;
                    if nul == 0 {
                        break;
                    }
                    mechanisms.push(&rest[..nul]);
                    rest = &rest[nul + 1..];
                }
                Auth::Sasl(mechanisms)
            }
            11 => Auth::SaslContinue(data),
            12 => Auth::SaslFinal(data),
            2 => Auth::Unsupported("Kerberos V5".into()),
            6 => Auth::Unsupported("SCM credentials".into()),
            7 | 8 => Auth::Unsupported("GSSAPI".into()),
            9 => Auth::Unsupported("SSPI".into()),
            n => Auth::Unsupported(format!("unknown (code {n})")),
        })
    }
}

/// One PostgreSQL connection speaking the extended and simple query protocols.
pub struct PgWire {
    stream: Stream,
    inbox: Inbox,
    /// The next request, encoded; cleared (capacity kept) after each write.
    out: BytesMut,
    /// An I/O or protocol error happened: the connection is unusable.
    broken: bool,
    /// The last command queued used the extended protocol (Bind/Execute or
    /// Parse, ended by Sync), not a simple Query: leaving COPY mode then
    /// takes a Sync of its own.
    extended: bool,
}

/// A failure met while connecting: the address, then what happened.
fn at(url: &SqlUrl, class: ErrorClass, what: impl std::fmt::Display) -> Failure {
    match &url.socket {
        Some(dir) => Failure::new(class, format!("connect to {dir}/.s.PGSQL.{}: {what}", url.port)),
        None => Failure::new(class, format!("connect to {}:{}: {what}", url.host, url.port)),
    }
}

fn io_at(url: &SqlUrl, e: io::Error) -> Failure {
    at(url, connect_io_class(&e), e)
}

/// Reads one whole message into the inbox and returns its tag and length
/// (not consumed).
async fn next(stream: &mut Stream, inbox: &mut Inbox) -> io::Result<(u8, usize)> {
    inbox.fill(stream, 5).await?;
    let (tag, len) = header(inbox.data()).map_err(|m| io::Error::new(io::ErrorKind::InvalidData, m))?.expect("5 bytes buffered");
    inbox.fill(stream, len).await?;
    Ok((tag, len))
}

impl PgWire {
    /// Connects, negotiates TLS if the URL asks for it, authenticates and
    /// waits for the server to be ready, all within `timeout`. `sole`: the
    /// calling thread owns only this connection ([`Stream::settle`]).
    pub async fn connect(url: &SqlUrl, timeout: Duration, application_name: &str, sole: bool) -> Result<PgWire, Failure> {
        match tokio::time::timeout(timeout, Self::connect_inner(url, timeout, application_name, sole)).await {
            Err(_) => Err(at(url, ErrorClass::ConnectTimeout, "timed out")),
            Ok(r) => r,
        }
    }

    async fn connect_inner(url: &SqlUrl, timeout: Duration, application_name: &str, sole: bool) -> Result<PgWire, Failure> {
        let mut stream = match &url.socket {
            Some(dir) => Stream::unix(&format!("{}/.s.PGSQL.{}", dir.trim_end_matches('/'), url.port), timeout).await?,
            None => Stream::tcp(&url.host, url.port, timeout).await?,
        };
        let mut inbox = Inbox::new();
        let mut out = BytesMut::with_capacity(512);
        if url.tls != SqlTls::Off {
            frontend::ssl_request(&mut out);
            stream.write_all(&out).await.map_err(|e| io_at(url, e))?;
            out.clear();
            inbox.fill(&mut stream, 1).await.map_err(|e| io_at(url, e))?;
            let answer = inbox.data()[0];
            inbox.consume(1);
            match answer {
                b'S' if inbox.data().is_empty() => {}
                b'S' => return Err(at(url, ErrorClass::Other, "protocol error: data after the server's TLS answer")),
                b'N' => return Err(at(url, ErrorClass::Other, "the server refused TLS (it has ssl = off)")),
                b => return Err(at(url, ErrorClass::Other, format!("protocol error: answer {:?} to the TLS request", b as char))),
            }
            stream = stream.into_tls(&url.tls, &url.host, timeout).await?;
        }
        let params = [
            ("user", url.user.as_str()),
            ("database", url.database.as_str()),
            ("application_name", application_name),
            ("client_encoding", "UTF8"),
        ];
        frontend::startup_message(params, &mut out).map_err(|e| at(url, ErrorClass::Other, e))?;
        let password = |method: &str| {
            url.password.as_deref().ok_or_else(|| {
                at(
                    url,
                    ErrorClass::Other,
                    format!("the server asks for a password ({method}) and the URL has none: use postgres://user:password@..."),
                )
            })
        };
        let mut scram: Option<ScramSha256> = None;
        let protocol = |m: String| at(url, ErrorClass::Other, m);
        loop {
            if !out.is_empty() {
                stream.write_all(&out).await.map_err(|e| io_at(url, e))?;
                out.clear();
            }
            let (tag, len) = next(&mut stream, &mut inbox).await.map_err(|e| io_at(url, e))?;
            let body = &inbox.data()[5..len];
            match tag {
                b'R' => match Auth::parse(body).map_err(protocol)? {
                    Auth::Ok => {
                        inbox.consume(len);
                        break;
                    }
                    Auth::Cleartext => {
                        frontend::password_message(password("password")?.as_bytes(), &mut out).map_err(|e| protocol(e.to_string()))?
                    }
                    Auth::Md5(salt) => {
                        let hash = md5_hash(url.user.as_bytes(), password("md5")?.as_bytes(), salt);
                        frontend::password_message(hash.as_bytes(), &mut out).map_err(|e| protocol(e.to_string()))?;
                    }
                    Auth::Sasl(mechanisms) => {
                        if !mechanisms.contains(&&b"SCRAM-SHA-256"[..]) {
                            let offered: Vec<_> = mechanisms.iter().map(|m| String::from_utf8_lossy(m)).collect();
                            return Err(protocol(format!(
                                "the server offers SASL {} only; scalelab speaks SCRAM-SHA-256",
                                offered.join(", ")
                            )));
                        }
                        // No channel binding: the gs2 header says the client does not support it.
                        let s = ScramSha256::new(password("scram-sha-256")?.as_bytes(), ChannelBinding::unsupported());
                        frontend::sasl_initial_response("SCRAM-SHA-256", s.message(), &mut out).map_err(|e| protocol(e.to_string()))?;
                        scram = Some(s);
                    }
                    Auth::SaslContinue(data) => {
                        let s = scram.as_mut().ok_or_else(|| protocol("protocol error: SASL challenge before SASL start".into()))?;
                        s.update(data).map_err(|e| protocol(format!("SCRAM: {e}")))?;
                        frontend::sasl_response(s.message(), &mut out).map_err(|e| protocol(e.to_string()))?;
                    }
                    Auth::SaslFinal(data) => {
                        let s = scram.as_mut().ok_or_else(|| protocol("protocol error: SASL final before SASL start".into()))?;
                        s.finish(data).map_err(|e| protocol(format!("SCRAM: {e}")))?;
                    }
                    Auth::Unsupported(method) => {
                        return Err(protocol(format!(
                        "the server asks for {method} authentication, which scalelab does not speak (trust, password, md5, scram-sha-256)"
                    )))
                    }
                },
                b'E' => return Err(ServerError::parse(body).map_err(protocol)?.failure()),
                b'N' => {}
                t => return Err(protocol(format!("protocol error: unexpected message {:?} during authentication", t as char))),
            }
            inbox.consume(len);
        }
        // ParameterStatus, BackendKeyData and notices until ReadyForQuery.
        loop {
            let (tag, len) = next(&mut stream, &mut inbox).await.map_err(|e| io_at(url, e))?;
            if tag == b'E' {
                return Err(ServerError::parse(&inbox.data()[5..len]).map_err(protocol)?.failure());
            }
            inbox.consume(len);
            if tag == b'Z' {
                break;
            }
        }
        let stream = stream.settle(sole).map_err(|e| io_at(url, e))?;
        Ok(PgWire { stream, inbox, out, broken: false, extended: false })
    }

    /// True once an I/O or protocol error made the connection unusable.
    pub fn broken(&self) -> bool {
        self.broken
    }

    /// Queues Parse (named, parameter types left to the server) + Describe +
    /// Sync: each statement is its own round of the protocol, so a failure
    /// names one statement and the others still get prepared.
    pub fn queue_prepare(&mut self, name: &str, sql: &str) -> Result<(), Failure> {
        let bad = |e: io::Error| Failure::new(ErrorClass::Other, format!("statement too large to send: {e}"));
        frontend::parse(name, sql, std::iter::empty(), &mut self.out).map_err(bad)?;
        frontend::describe(b'S', name, &mut self.out).map_err(bad)?;
        frontend::sync(&mut self.out);
        self.extended = true;
        Ok(())
    }

    /// Queues Bind (unnamed portal, parameters and results as text) +
    /// Execute (all rows) + Sync for a prepared statement.
    pub fn queue_execute<'v>(&mut self, name: &str, params: impl Iterator<Item = &'v Value>) -> Result<(), Failure> {
        self.extended = true;
        encode_execute(&mut self.out, name, params)
    }

    /// Queues a simple Query message.
    pub fn queue_query(&mut self, sql: &str) -> Result<(), Failure> {
        self.extended = false;
        frontend::query(sql, &mut self.out).map_err(|e| Failure::new(ErrorClass::Other, format!("query too large to send: {e}")))
    }

    /// Sends what is queued in one write.
    pub async fn send(&mut self) -> Result<(), Failure> {
        if let Err(e) = self.write_out().await {
            // The server may have said why it closed (an ErrorResponse before
            // the FIN, e.g. a terminated backend): report that if it is there.
            if let Ok(Err(f)) = tokio::time::timeout(LAST_WORDS, self.reply()).await {
                if f.message.contains("SQLSTATE") {
                    return Err(f);
                }
            }
            return Err(lost(&e));
        }
        Ok(())
    }

    /// Writes what is queued in one write and clears it; a failure marks the
    /// connection broken.
    async fn write_out(&mut self) -> io::Result<()> {
        let r = self.stream.write_all(&self.out).await;
        self.out.clear();
        self.broken |= r.is_err();
        if r.is_ok() {
            self.inbox.sent();
        }
        r
    }

    /// Reads to the next ReadyForQuery, skipping rows, completions and
    /// notices; the first ErrorResponse is the result. A statement that
    /// starts COPY FROM STDIN is answered with CopyFail (a workload has no
    /// data to send), so the server ends it with an error instead of waiting
    /// for data for ever; COPY TO STDOUT's rows are skipped like any others.
    pub async fn reply(&mut self) -> Result<(), Failure> {
        let mut first: Option<Failure> = None;
        loop {
            let (tag, len) = match next(&mut self.stream, &mut self.inbox).await {
                Ok(m) => m,
                Err(e) => {
                    self.broken = true;
                    return Err(match first {
                        Some(mut f) => {
                            f.class = ErrorClass::ConnectionLost;
                            f
                        }
                        None => lost(&e),
                    });
                }
            };
            if tag == b'E' && first.is_none() {
                match ServerError::parse(&self.inbox.data()[5..len]) {
                    Ok(e) => first = Some(e.failure()),
                    Err(m) => {
                        self.broken = true;
                        return Err(Failure::new(ErrorClass::ConnectionLost, format!("connection lost: {m}")));
                    }
                }
            }
            self.inbox.consume(len);
            match tag {
                b'Z' => return first.map_or(Ok(()), Err),
                // CopyInResponse, CopyBothResponse: the server now waits for
                // CopyData and ignores Sync until the copy ends.
                b'G' | b'W' => {
                    frontend::copy_fail("scalelab workloads send no COPY data; use a dataset or INSERT statements", &mut self.out)
                        .map_err(|e| Failure::new(ErrorClass::Other, e.to_string()))?;
                    if self.extended {
                        frontend::sync(&mut self.out);
                    }
                    self.write_out().await.map_err(|e| lost(&e))?;
                }
                _ => {}
            }
        }
    }

    /// Sends what is queued and reads the reply.
    pub async fn round_trip(&mut self) -> Result<(), Failure> {
        self.send().await?;
        self.reply().await
    }
}

/// Appends Bind + Execute + Sync: parameters as text (`Value::Int` in
/// decimal, `Value::Text` as is), results as text, every row.
fn encode_execute<'v>(out: &mut BytesMut, name: &str, params: impl Iterator<Item = &'v Value>) -> Result<(), Failure> {
    let mut digits = itoa::Buffer::new();
    let r = frontend::bind(
        "",
        name,
        std::iter::empty(),
        params,
        |v, buf| {
            match v {
                Value::Int(i) => buf.extend_from_slice(digits.format(*i).as_bytes()),
                Value::Text(s) => buf.extend_from_slice(s.as_bytes()),
            }
            Ok(IsNull::No)
        },
        std::iter::empty(),
        out,
    );
    if r.is_err() {
        out.clear();
        return Err(Failure::new(ErrorClass::Other, "parameters too large to send"));
    }
    frontend::execute("", 0, out).map_err(|e| Failure::new(ErrorClass::Other, e.to_string()))?;
    frontend::sync(out);
    Ok(())
}

fn lost(e: &io::Error) -> Failure {
    Failure::new(ErrorClass::ConnectionLost, format!("connection lost: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![tag];
        m.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn headers_frame_messages_and_refuse_bad_lengths() {
        assert_eq!(header(&msg(b'Z', b"I")), Ok(Some((b'Z', 6))));
        assert_eq!(header(b"Z\0\0\0"), Ok(None));
        assert_eq!(header(b""), Ok(None));
        assert!(header(b"Z\0\0\0\x03").unwrap_err().contains("invalid length 3"));
        assert!(header(b"D\xff\xff\xff\xff").unwrap_err().contains("invalid length -1"));
        assert!(header(b"D\x7f\xff\xff\xff").is_err());
    }

    #[test]
    fn error_responses_parse_and_classify() {
        let body = b"SERROR\0VERROR\0C40P01\0Mdeadlock detected\0Ddetail\0\0";
        let e = ServerError::parse(body).unwrap();
        assert_eq!((e.severity.as_str(), e.code.as_str(), e.message.as_str()), ("ERROR", "40P01", "deadlock detected"));
        let f = e.failure();
        assert_eq!(f.class, ErrorClass::Deadlock);
        assert_eq!(f.message, "ERROR: deadlock detected (SQLSTATE 40P01)");
        for (code, class) in [
            ("55P03", ErrorClass::LockWaitTimeout),
            ("40001", ErrorClass::SerializationFailure),
            ("53300", ErrorClass::TooManyConnections),
            ("57P01", ErrorClass::ConnectionLost),
            ("57P03", ErrorClass::ConnectionLost),
            ("42703", ErrorClass::SqlError),
        ] {
            let body = format!("SFATAL\0C{code}\0Mx\0\0");
            assert_eq!(ServerError::parse(body.as_bytes()).unwrap().failure().class, class, "{code}");
        }
        // Only the non-localized severity: still reported.
        assert_eq!(ServerError::parse(b"VFATAL\0C57P01\0Mbye\0\0").unwrap().severity, "FATAL");
    }

    #[test]
    fn truncated_or_garbage_bodies_are_errors_not_panics() {
        let full = b"SERROR\0C42703\0Mcolumn \"x\" does not exist\0\0";
        for n in 0..full.len() {
            assert!(ServerError::parse(&full[..n]).is_err(), "{n} bytes");
        }
        assert!(ServerError::parse(b"S").is_err());
        assert!(ServerError::parse(&[0xff; 64]).is_err());
        let sasl = b"\0\0\0\x0aSCRAM-SHA-256-PLUS\0SCRAM-SHA-256\0\0";
        assert_eq!(Auth::parse(sasl), Ok(Auth::Sasl(vec![&b"SCRAM-SHA-256-PLUS"[..], &b"SCRAM-SHA-256"[..]])));
        for n in 0..sasl.len() {
            assert!(Auth::parse(&sasl[..n]).is_err(), "{n} bytes");
        }
        assert!(Auth::parse(b"\0\0\0\x05ab").is_err());
        assert_eq!(Auth::parse(b"\0\0\0\x05abcd"), Ok(Auth::Md5(*b"abcd")));
        assert_eq!(Auth::parse(b"\0\0\0\0"), Ok(Auth::Ok));
        assert_eq!(Auth::parse(b"\0\0\0\x07"), Ok(Auth::Unsupported("GSSAPI".into())));
        assert_eq!(Auth::parse(b"\0\0\0\x63"), Ok(Auth::Unsupported("unknown (code 99)".into())));
        assert!(Auth::parse(b"\0\0").is_err());
        // Random bytes: whatever comes out, nothing panics.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            let len = (x % 40) as usize;
            let mut b = Vec::with_capacity(len);
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b.push(if x & 3 == 0 { 0 } else { (x >> 8) as u8 });
            }
            let _ = header(&b);
            let _ = ServerError::parse(&b);
            let _ = Auth::parse(&b);
        }
    }

    #[test]
    fn execute_encodes_text_parameters() {
        let mut out = BytesMut::new();
        encode_execute(&mut out, "s0_0", [Value::Int(-42), Value::Text("a'b".into())].iter()).unwrap();
        let (tag, bind_len) = header(&out).unwrap().unwrap();
        assert_eq!(tag, b'B');
        let b = &out[..bind_len];
        assert_eq!(header(b).unwrap(), Some((b'B', b.len())));
        assert!(b.windows(7).any(|w| w == b"\0\0\0\x03-42"), "{b:?}");
        assert!(b.windows(7).any(|w| w == b"\0\0\0\x03a'b"), "{b:?}");
        // Then Execute (unnamed portal, all rows) and Sync.
        assert_eq!(&out[bind_len..], b"E\0\0\0\x09\0\0\0\0\0S\0\0\0\x04");
    }
}
