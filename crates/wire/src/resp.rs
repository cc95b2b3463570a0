//! RESP, Redis's protocol (RESP2, which every Redis and Valkey speaks, or
//! RESP3 after `HELLO 3` when the URL says `?protocol=3`): a `redis://` URL, a connection on [`Stream`] with [`Inbox`] (the same
//! reused buffer as the SQL clients), commands encoded into one reused
//! output buffer, and replies framed and skipped without allocating.
//! Pipelining is writing N commands in one buffer and reading N replies;
//! an error reply is classified ([`error_class`]) and the rest still read,
//! so the connection stays in step.
//!
//! Hand-written like `pgwire`/`mywire` (a request/response loop on one
//! connection whose hot path must not allocate); the `redis` crate's
//! connection allocates a `Value` per reply.

use crate::stream::{Inbox, Stream};
use scalelab_core::result::Failure;
use scalelab_core::{redact_url, ErrorClass};
use std::time::Duration;

/// A parsed `redis://[user[:password]@]host[:port][/db]`, or `rediss://`
/// for TLS: the certificate checked against the Mozilla roots or the PEM
/// file `?cacert=PATH`, and the host name checked; `?insecure=true`
/// encrypts without checking (as `redis-cli --insecure`). `?protocol=3`
/// speaks RESP3 (`HELLO 3`, as `redis-cli -3`), the default 2 RESP2.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RedisUrl {
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub password: Option<String>,
    /// The logical database (`SELECT`), 0 when none is given.
    pub db: u32,
    /// `rediss://`: how TLS is checked (None: plain TCP).
    pub tls: Option<crate::url::SqlTls>,
    /// `?protocol=3`: RESP3, asked for with `HELLO 3` on connecting.
    #[serde(default)]
    pub resp3: bool,
    /// The URL without its password, safe to show.
    pub redacted: String,
}

impl RedisUrl {
    /// Parses a `redis://` or `rediss://` URL.
    pub fn parse(text: &str) -> Result<RedisUrl, String> {
        let redacted = redact_url(text);
        let (tls, rest) = match text.split_once("://") {
            Some((s, rest)) if s.eq_ignore_ascii_case("redis") => (false, rest),
            Some((s, rest)) if s.eq_ignore_ascii_case("rediss") => (true, rest),
            _ => return Err(format!("{redacted}: not a redis:// URL")),
        };
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (mut cacert, mut insecure, mut resp3) = (None, false, false);
        for kv in query.split('&').filter(|kv| !kv.is_empty()) {
            match kv.split_once('=').unwrap_or((kv, "")) {
                ("cacert", path) if !path.is_empty() => cacert = Some(decode(path)),
                ("insecure", "true" | "1") => insecure = true,
                ("insecure", "false" | "0") => insecure = false,
                ("protocol", "2") => resp3 = false,
                ("protocol", "3") => resp3 = true,
                ("protocol", p) => return Err(format!("{redacted}: protocol={p}: RESP is 2 or 3")),
                (k, _) => {
                    return Err(format!(
                        "{redacted}: unknown option '{k}' (redis:// takes protocol=2|3; rediss:// also cacert=PATH and insecure=true)"
                    ))
                }
            }
        }
        if !tls && (cacert.is_some() || insecure) {
            return Err(format!("{redacted}: cacert and insecure are TLS options: use rediss://"));
        }
        let tls = tls.then_some(if insecure { crate::url::SqlTls::Require } else { crate::url::SqlTls::VerifyFull { root_cert: cacert } });
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(u) => match u.split_once(':') {
                Some(("", p)) => (None, Some(decode(p))),
                Some((u, p)) => (Some(decode(u)), Some(decode(p))),
                None => (Some(decode(u)), None),
            },
        };
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) => {
                (h, p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| format!("{redacted}: the port must be 1 to 65535"))?)
            }
            None => (hostport, 6379),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(format!("{redacted}: no host"));
        }
        let db = match path.split(['?', '#']).next().unwrap_or("") {
            "" => 0,
            d => d.parse::<u32>().map_err(|_| format!("{redacted}: the path is the database number (redis://host:6379/0), not '{d}'"))?,
        };
        Ok(RedisUrl { host: host.to_string(), port, user, password, db, tls, resp3, redacted })
    }
}

/// `%XX` escapes in a URL's user or password.
fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(v) = s.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The class of an error reply, from its first word (`-OOM ...`).
pub fn error_class(message: &[u8]) -> ErrorClass {
    let word = message.split(|b| *b == b' ').next().unwrap_or(b"");
    match word {
        b"OOM" => ErrorClass::OutOfMemory,
        b"BUSY" | b"LOADING" => ErrorClass::Busy,
        _ => ErrorClass::ServerError,
    }
}

/// A complete reply: its length in bytes, and where the first error inside
/// it is (an error reply, or one inside an array), as a byte range.
type Framed = (usize, Option<(usize, usize)>);

/// One complete reply at the start of `buf`; None: more bytes are needed.
/// A byte that is no RESP type is an error.
fn frame(buf: &[u8]) -> Result<Option<Framed>, String> {
    fn line(buf: &[u8], from: usize) -> Option<usize> {
        buf[from..].windows(2).position(|w| w == b"\r\n").map(|p| from + p)
    }
    fn int(bytes: &[u8]) -> Result<i64, String> {
        std::str::from_utf8(bytes).ok().and_then(|s| s.parse().ok()).ok_or_else(|| "a RESP length is not a number".to_string())
    }
    // An explicit stack: arrays nest, and a reply may hold many elements.
    let mut pos = 0;
    let mut pending: u64 = 1;
    let mut first_error = None;
    while pending > 0 {
        let Some(&kind) = buf.get(pos) else { return Ok(None) };
        let Some(end) = line(buf, pos + 1) else { return Ok(None) };
        pending -= 1;
        match kind {
            b'+' | b':' | b',' | b'#' | b'(' | b'_' => pos = end + 2,
            b'-' => {
                first_error.get_or_insert((pos + 1, end));
                pos = end + 2;
            }
            // Bulk strings; `!` is RESP3's bulk error.
            b'$' | b'=' | b'!' => {
                let n = int(&buf[pos + 1..end])?;
                pos = end + 2;
                if n >= 0 {
                    let n = usize::try_from(n).map_err(|_| "a RESP length out of range".to_string())?;
                    if buf.len() < pos + n + 2 {
                        return Ok(None);
                    }
                    if kind == b'!' {
                        first_error.get_or_insert((pos, pos + n));
                    }
                    pos += n + 2;
                }
            }
            // Aggregates: their elements follow (maps and attributes in pairs).
            b'*' | b'~' | b'>' | b'%' | b'|' => {
                let n = int(&buf[pos + 1..end])?;
                pos = end + 2;
                if n > 1 << 32 {
                    return Err(format!("a RESP aggregate of {n} elements"));
                }
                if n > 0 {
                    pending += n as u64 * if matches!(kind, b'%' | b'|') { 2 } else { 1 };
                }
            }
            other => return Err(format!("not a RESP reply (byte 0x{other:02x})")),
        }
    }
    Ok(Some((pos, first_error)))
}

/// One connection to a Redis server.
pub struct RespConn {
    stream: Stream,
    inbox: Inbox,
    out: Vec<u8>,
    /// Commands written into `out` and not yet sent.
    queued: u32,
}

impl RespConn {
    /// Connects to `url` within `timeout`, authenticates (`AUTH`, or with
    /// RESP3 `HELLO 3 AUTH ...`) and selects its database; `sole` as for
    /// [`Stream::settle`]. A server that cannot speak RESP3 fails here.
    pub async fn connect(url: &RedisUrl, timeout: Duration, sole: bool) -> Result<RespConn, Failure> {
        let mut stream = Stream::tcp(&url.host, url.port, timeout).await?;
        if let Some(mode) = &url.tls {
            stream = stream.into_tls(mode, &url.host, timeout).await?;
        }
        let mut c = RespConn { stream, inbox: Inbox::new(), out: Vec::with_capacity(4096), queued: 0 };
        match (&url.user, &url.password, url.resp3) {
            // HELLO authenticates in the same command; a password alone is the default user's.
            (u, Some(p), true) => c.command(&[b"HELLO", b"3", b"AUTH", u.as_deref().unwrap_or("default").as_bytes(), p.as_bytes()]),
            (_, None, true) => c.command(&[b"HELLO", b"3"]),
            (Some(u), Some(p), false) => c.command(&[b"AUTH", u.as_bytes(), p.as_bytes()]),
            (None, Some(p), false) => c.command(&[b"AUTH", p.as_bytes()]),
            _ => {}
        }
        if url.db != 0 {
            c.command(&[b"SELECT", url.db.to_string().as_bytes()]);
        }
        if c.queued > 0 {
            let at = format!("{} ({}:{})", url.redacted, url.host, url.port);
            match tokio::time::timeout(timeout, c.round_trip()).await {
                Err(_) => return Err(Failure::new(ErrorClass::ConnectTimeout, format!("{at}: no answer to HELLO/AUTH/SELECT"))),
                Ok(Err(f)) if url.resp3 && f.message.starts_with("NOPROTO") => {
                    return Err(Failure::new(f.class, format!("{at}: the server cannot speak RESP3 ({}): drop ?protocol=3", f.message)))
                }
                Ok(Err(f)) => return Err(Failure::new(f.class, format!("{at}: {}", f.message))),
                Ok(Ok(())) => {}
            }
        }
        let RespConn { stream, inbox, out, queued } = c;
        let stream = stream.settle(sole).map_err(|e| Failure::new(ErrorClass::Other, format!("socket: {e}")))?;
        Ok(RespConn { stream, inbox, out, queued })
    }

    /// Queues one command (its arguments as bulk strings) for the next
    /// [`RespConn::round_trip`].
    pub fn command(&mut self, args: &[&[u8]]) {
        let out = &mut self.out;
        out.push(b'*');
        out.extend_from_slice(args.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
        for a in args {
            out.push(b'$');
            out.extend_from_slice(a.len().to_string().as_bytes());
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        self.queued += 1;
    }

    /// Sends the queued commands in one write and reads as many replies.
    /// Every reply is read even after an error reply, so the connection
    /// stays usable; the first error is the failure.
    pub async fn round_trip(&mut self) -> Result<(), Failure> {
        let n = self.send().await?;
        let mut failure = None;
        for _ in 0..n {
            let (len, err) = self.next_reply().await?;
            if let (Some((a, b)), None) = (err, &failure) {
                failure = Some(error_failure(&self.inbox.data()[a..b]));
            }
            self.inbox.consume(len);
        }
        failure.map_or(Ok(()), Err)
    }

    /// Sends one command and returns its reply's bytes as text (a bulk or
    /// simple string; for `INFO` and `PING`, not the load path).
    pub async fn query_text(&mut self, args: &[&[u8]]) -> Result<String, Failure> {
        self.command(args);
        let n = self.send().await?;
        debug_assert_eq!(n, 1);
        let (len, err) = self.next_reply().await?;
        let data = &self.inbox.data()[..len];
        let result = match err {
            Some((a, b)) => Err(error_failure(&data[a..b])),
            None => Ok(text_of(data)),
        };
        self.inbox.consume(len);
        result
    }

    /// Sends one command and returns its reply as a [`Reply`] (for the
    /// probe's structured commands, `LATENCY LATEST`; not the load path).
    pub async fn query(&mut self, args: &[&[u8]]) -> Result<Reply, Failure> {
        self.command(args);
        let n = self.send().await?;
        debug_assert_eq!(n, 1);
        let (len, _) = self.next_reply().await?;
        let result = Reply::parse(&self.inbox.data()[..len]).map_err(|why| Failure::new(ErrorClass::Other, why));
        self.inbox.consume(len);
        match result? {
            Reply::Error(e) => Err(error_failure(e.as_bytes())),
            r => Ok(r),
        }
    }

    /// Writes the queued commands in one write; how many they were.
    async fn send(&mut self) -> Result<u32, Failure> {
        let n = std::mem::take(&mut self.queued);
        self.stream.write_all(&self.out).await.map_err(lost)?;
        self.out.clear();
        self.inbox.sent();
        Ok(n)
    }

    /// Reads until one whole reply is buffered at the inbox's start (not
    /// consumed): its length and where its first error is.
    async fn next_reply(&mut self) -> Result<Framed, Failure> {
        loop {
            match frame(self.inbox.data()) {
                Ok(Some(framed)) => return Ok(framed),
                Ok(None) => {
                    let want = self.inbox.data().len() + 1;
                    self.inbox.fill(&mut self.stream, want).await.map_err(lost)?;
                }
                Err(why) => return Err(Failure::new(ErrorClass::Other, why)),
            }
        }
    }
}

/// A whole reply as a value: RESP2's and RESP3's types folded into five
/// (a map is its keys and values in turn, a double or big number its text).
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    Nil,
    Int(i64),
    Text(String),
    Error(String),
    List(Vec<Reply>),
}

/// Aggregates nested deeper than this are refused (a server's reply to
/// the probe's commands nests two levels).
const MAX_DEPTH: usize = 16;

impl Reply {
    /// Parses one reply that [`frame`] found complete at `buf`'s start.
    pub fn parse(buf: &[u8]) -> Result<Reply, String> {
        Self::at(buf, &mut 0, 0)
    }

    fn at(buf: &[u8], pos: &mut usize, depth: usize) -> Result<Reply, String> {
        let short = || "a truncated RESP reply".to_string();
        let kind = *buf.get(*pos).ok_or_else(short)?;
        let end = buf[*pos..].windows(2).position(|w| w == b"\r\n").map(|p| *pos + p).ok_or_else(short)?;
        let head = String::from_utf8_lossy(&buf[*pos + 1..end]).into_owned();
        *pos = end + 2;
        let number = |s: &str| s.parse::<i64>().map_err(|_| format!("a RESP number '{s}' is not one"));
        Ok(match kind {
            b'+' | b',' | b'(' => Reply::Text(head),
            b'-' => Reply::Error(head),
            b':' => Reply::Int(number(&head)?),
            b'#' => Reply::Int(i64::from(head == "t")),
            b'_' => Reply::Nil,
            b'$' | b'=' | b'!' => {
                let n = number(&head)?;
                if n < 0 {
                    return Ok(Reply::Nil);
                }
                let n = usize::try_from(n).map_err(|_| "a RESP length out of range".to_string())?;
                let body = buf.get(*pos..*pos + n).ok_or_else(short)?;
                *pos += n + 2;
                let body = verbatim(kind, body);
                let text = String::from_utf8_lossy(body).into_owned();
                if kind == b'!' {
                    Reply::Error(text)
                } else {
                    Reply::Text(text)
                }
            }
            b'*' | b'~' | b'>' | b'%' | b'|' => {
                let n = number(&head)?;
                if n < 0 {
                    return Ok(Reply::Nil);
                }
                if depth >= MAX_DEPTH {
                    return Err(format!("a RESP reply nested over {MAX_DEPTH} levels"));
                }
                let items = usize::try_from(n).map_err(|_| "a RESP length out of range".to_string())?
                    * if matches!(kind, b'%' | b'|') { 2 } else { 1 };
                let mut list = Vec::with_capacity(items.min(1024));
                for _ in 0..items {
                    list.push(Self::at(buf, pos, depth + 1)?);
                }
                Reply::List(list)
            }
            other => return Err(format!("not a RESP reply (byte 0x{other:02x})")),
        })
    }
}

/// A read or write that failed: the connection is gone.
fn lost(e: std::io::Error) -> Failure {
    Failure::new(crate::io_class::connect_io_class(&e), format!("connection lost: {e}"))
}

/// An error reply's text as a failure of its class.
fn error_failure(message: &[u8]) -> Failure {
    Failure::new(error_class(message), String::from_utf8_lossy(message).into_owned())
}

/// The text of a simple or bulk string reply (anything else as it came).
/// A bulk string's text: RESP3's verbatim string (`=`, `INFO`'s reply)
/// starts with its format (`txt:`), which is not text.
fn verbatim(kind: u8, body: &[u8]) -> &[u8] {
    if kind == b'=' && body.get(3) == Some(&b':') {
        &body[4..]
    } else {
        body
    }
}

fn text_of(reply: &[u8]) -> String {
    let body = match reply.first() {
        Some(b'+') => &reply[1..reply.len().saturating_sub(2)],
        Some(b'$') | Some(b'=') => {
            let start = reply.windows(2).position(|w| w == b"\r\n").map_or(reply.len(), |p| p + 2);
            let body = &reply[start.min(reply.len())..reply.len().saturating_sub(2).max(start.min(reply.len()))];
            verbatim(reply[0], body)
        }
        _ => reply,
    };
    String::from_utf8_lossy(body).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_protocol_is_resp2_unless_the_url_asks_for_3() {
        assert!(!RedisUrl::parse("redis://127.0.0.1:6379").unwrap().resp3);
        assert!(RedisUrl::parse("redis://127.0.0.1:6379/1?protocol=3").unwrap().resp3);
        assert!(!RedisUrl::parse("redis://127.0.0.1:6379?protocol=2").unwrap().resp3);
        assert_eq!(RedisUrl::parse("redis://h?protocol=4").unwrap_err(), "redis://h?protocol=4: protocol=4: RESP is 2 or 3");
        assert!(RedisUrl::parse("redis://h?proto=3").unwrap_err().contains("takes protocol=2|3"));
    }

    #[test]
    fn replies_parse_into_values_resp2_and_resp3() {
        let latest = b"*2\r\n*4\r\n$7\r\ncommand\r\n:1700000000\r\n:250\r\n:1000\r\n*4\r\n$4\r\nfork\r\n:1700000001\r\n:12\r\n:12\r\n";
        let r = Reply::parse(latest).unwrap();
        let Reply::List(events) = r else { panic!("{r:?}") };
        assert_eq!(
            events[0],
            Reply::List(vec![Reply::Text("command".into()), Reply::Int(1_700_000_000), Reply::Int(250), Reply::Int(1000)])
        );
        assert_eq!(events.len(), 2);
        // RESP3: a map in pairs, null, booleans, doubles, a verbatim string without its format.
        let r = Reply::parse(b"%2\r\n+proto\r\n:3\r\n+ok\r\n#t\r\n").unwrap();
        assert_eq!(r, Reply::List(vec![Reply::Text("proto".into()), Reply::Int(3), Reply::Text("ok".into()), Reply::Int(1)]));
        assert_eq!(Reply::parse(b"_\r\n").unwrap(), Reply::Nil);
        assert_eq!(Reply::parse(b"$-1\r\n").unwrap(), Reply::Nil);
        assert_eq!(Reply::parse(b",1.5\r\n").unwrap(), Reply::Text("1.5".into()));
        assert_eq!(Reply::parse(b"=8\r\ntxt:a:bc\r\n").unwrap(), Reply::Text("a:bc".into()));
        assert_eq!(Reply::parse(b"-ERR no\r\n").unwrap(), Reply::Error("ERR no".into()));
        assert_eq!(Reply::parse(b"!3\r\nBAD\r\n").unwrap(), Reply::Error("BAD".into()));
        assert_eq!(text_of(b"=8\r\ntxt:a:bc\r\n"), "a:bc");
        // Truncated, garbage and too deep: errors, never a panic.
        assert!(Reply::parse(b"*2\r\n:1\r\n").is_err());
        assert!(Reply::parse(b"$5\r\nab").is_err());
        assert!(Reply::parse(b"?x\r\n").is_err());
        assert!(Reply::parse(&b"*1\r\n".repeat(40)).is_err());
    }

    #[test]
    fn urls_parse_with_credentials_database_and_defaults() {
        let u = RedisUrl::parse("redis://app:s%40cret@10.0.0.5:6380/2").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.user.as_deref(), u.password.as_deref(), u.db),
            ("10.0.0.5", 6380, Some("app"), Some("s@cret"), 2)
        );
        assert!(!u.redacted.contains("cret"), "{}", u.redacted);
        let u = RedisUrl::parse("redis://:pw@localhost").unwrap();
        assert_eq!((u.port, u.user, u.password.as_deref(), u.db), (6379, None, Some("pw"), 0));
        let t = RedisUrl::parse("rediss://h:6380?cacert=/etc/ca.pem").unwrap();
        assert_eq!(t.tls, Some(crate::url::SqlTls::VerifyFull { root_cert: Some("/etc/ca.pem".into()) }));
        assert_eq!(RedisUrl::parse("rediss://h?insecure=true").unwrap().tls, Some(crate::url::SqlTls::Require));
        assert_eq!(RedisUrl::parse("redis://h").unwrap().tls, None);
        assert!(RedisUrl::parse("redis://h?cacert=/x").unwrap_err().contains("use rediss://"));
        assert!(RedisUrl::parse("rediss://h?verify=no").unwrap_err().contains("unknown option 'verify'"));
        assert!(RedisUrl::parse("redis://h/x").unwrap_err().contains("database number"));
        assert!(RedisUrl::parse("redis://h:0").unwrap_err().contains("port"));
    }

    #[test]
    fn replies_are_framed_nested_and_partial_and_errors_found() {
        assert_eq!(frame(b"+OK\r\n").unwrap(), Some((5, None)));
        assert_eq!(frame(b"+OK\r").unwrap(), None);
        assert_eq!(frame(b"$3\r\nabc\r\n:1\r\n").unwrap(), Some((9, None)));
        assert_eq!(frame(b"$3\r\nab").unwrap(), None);
        assert_eq!(frame(b"$-1\r\n").unwrap(), Some((5, None)));
        let nested = b"*2\r\n*1\r\n:5\r\n-ERR no\r\n";
        assert_eq!(frame(nested).unwrap(), Some((nested.len(), Some((13, 19)))));
        assert_eq!(&nested[13..19], b"ERR no");
        assert_eq!(frame(b"*3\r\n:1\r\n").unwrap(), None);
        assert!(frame(b"?x\r\n").is_err());
        assert_eq!(error_class(b"OOM command not allowed"), ErrorClass::OutOfMemory);
        assert_eq!(error_class(b"BUSY Redis is busy"), ErrorClass::Busy);
        assert_eq!(error_class(b"WRONGTYPE Operation"), ErrorClass::ServerError);
        assert_eq!(text_of(b"$5\r\nhello\r\n"), "hello");
        assert_eq!(text_of(b"+PONG\r\n"), "PONG");
    }
}
