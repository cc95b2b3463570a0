//! A hand-written MySQL/MariaDB client for the load path: connect,
//! authenticate, prepare, then COM_STMT_EXECUTE / COM_QUERY with the reply
//! read and dropped, never decoded.
//!
//! Why by hand: the load tool's client shares the machine with the server
//! under test, so every instruction it spends per query is taken from the
//! server; mysql_async cost 3.6 times this client's instructions per query
//! (figures: `bench/notes/mywire-cost.md`). [`Reply::scan`] walks the
//! buffered reply synchronously rather than awaiting each packet.
//!
//! A query is one COM_STMT_EXECUTE serialized into one reused buffer, one
//! write, and the reply framed in the [`Inbox`]: OK, or column count,
//! column definitions and rows skipped by their packet lengths (3-byte LE
//! length + sequence id; a payload of 0xFFFFFF continues in the next
//! packet), up to the EOF/OK terminator, following
//! SERVER_MORE_RESULTS_EXISTS. Nothing is allocated per query.
//!
//! Connect time is not hot: `mysql_common` parses the greeting, builds the
//! handshake response and the TLS request, and computes the scrambles
//! (mysql_native_password, caching_sha2_password, with RSA-OAEP for the
//! full caching_sha2 authentication over plain TCP). MariaDB's
//! client_ed25519 is not in mysql_common: such a user gets a clear error.

use super::mysql::server_failure;
use super::stream::{Inbox, Stream};
use super::workload::Value;
use super::{connect_io_class, SqlTls, SqlUrl};
use mysql_common::constants::CapabilityFlags;
use mysql_common::io::ParseBuf;
use mysql_common::packets::{AuthPlugin, HandshakePacket, HandshakeResponse, SslRequest};
use mysql_common::proto::MySerialize;
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::io;
use std::time::Duration;

/// The largest payload of one packet; a payload of exactly this length
/// continues in the next packet.
const MAX_PAYLOAD: usize = 0xFF_FFFF;
/// Status flag: another result set follows this one.
const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;
/// The largest packet we tell the server we accept (it may still send more
/// in several packets).
const MAX_PACKET: u32 = 1 << 30;
/// utf8mb4_general_ci.
const COLLATION: u8 = 45;
/// MySQL's limit on the columns of a table (and so of a result set).
const MAX_COLUMNS: u64 = 4096;

const COM_QUIT: u8 = 0x01;
const COM_QUERY: u8 = 0x03;
const COM_STMT_PREPARE: u8 = 0x16;
const COM_STMT_EXECUTE: u8 = 0x17;
const TYPE_LONGLONG: u8 = 0x08;
const TYPE_VAR_STRING: u8 = 0xFD;

/// Why a round trip failed, before it is told as a [`Failure`].
#[derive(Debug)]
enum Error {
    /// The socket failed or closed.
    Io(io::Error),
    /// The server's ERR packet, or a reply that makes no sense (already classified).
    Fail(Failure),
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Io(e)
    }
}

impl Error {
    /// As met on an open connection: an I/O error is a lost connection.
    fn at_query(self) -> Failure {
        match self {
            Error::Io(e) => Failure::new(ErrorClass::ConnectionLost, format!("connection lost: {e}")),
            Error::Fail(f) => f,
        }
    }

    /// As met while connecting to `addr`.
    fn at_connect(self, addr: &str) -> Failure {
        match self {
            Error::Io(e) => Failure::new(connect_io_class(&e), format!("connect to {addr}: {e}")),
            Error::Fail(f) => f,
        }
    }
}

/// A reply that breaks the protocol: the connection's state is unknown, so
/// it is dropped (classed as lost) and reopened.
fn malformed(what: &str) -> Error {
    Error::Fail(Failure::new(ErrorClass::ConnectionLost, format!("malformed reply from the server: {what}")))
}

/// A length-encoded integer at the start of `b`: its value and its size.
fn lenenc(b: &[u8]) -> Option<(u64, usize)> {
    let le = |n: usize| b.get(1..1 + n).map(|s| s.iter().rev().fold(0u64, |a, &x| a << 8 | u64::from(x)));
    match *b.first()? {
        x @ 0..=0xFA => Some((u64::from(x), 1)),
        0xFC => Some((le(2)?, 3)),
        0xFD => Some((le(3)?, 4)),
        0xFE => Some((le(8)?, 9)),
        _ => None, // 0xFB is NULL, 0xFF an error header: not a length
    }
}

/// Appends a length-encoded integer.
fn put_lenenc(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=0xFA => out.push(n as u8),
        0xFB..=0xFFFF => {
            out.push(0xFC);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xFF_FFFF => {
            out.push(0xFD);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xFE);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// An ERR packet (0xFF, code, `#` and SQLSTATE when the protocol is 4.1 —
/// not before the handshake — then the message) as a classified failure.
fn err_packet(p: &[u8]) -> Failure {
    let Some(&[lo, hi]) = p.get(1..3) else {
        return Failure::new(ErrorClass::ConnectionLost, "malformed reply from the server: truncated error packet");
    };
    let code = u16::from_le_bytes([lo, hi]);
    let (state, msg) = match p.get(3..9) {
        Some(s) if s[0] == b'#' => (String::from_utf8_lossy(&s[1..]).into_owned(), &p[9..]),
        _ => ("HY000".to_string(), &p[3..]),
    };
    server_failure(code, &state, &String::from_utf8_lossy(msg))
}

/// The status flags of an OK packet (0x00, or 0xFE as a result set's
/// terminator with CLIENT_DEPRECATE_EOF): header, affected rows, last
/// insert id, status.
fn ok_status(p: &[u8]) -> Option<u16> {
    let mut at = 1;
    at += lenenc(p.get(at..)?)?.1;
    at += lenenc(p.get(at..)?)?.1;
    let s = p.get(at..at + 2)?;
    Some(u16::from_le_bytes([s[0], s[1]]))
}

/// The status flags of a result set's terminator: an OK packet with
/// CLIENT_DEPRECATE_EOF, else an EOF packet (0xFE, warnings, status).
fn terminator_status(p: &[u8], deprecate_eof: bool) -> Option<u16> {
    if deprecate_eof {
        ok_status(p)
    } else {
        p.get(3..5).map(|s| u16::from_le_bytes([s[0], s[1]]))
    }
}

/// COM_STMT_PREPARE's OK: statement id, columns, parameters.
fn prepare_ok(p: &[u8]) -> Option<(u32, u16, u16)> {
    let b = p.get(..9)?;
    (b[0] == 0).then(|| (u32::from_le_bytes([b[1], b[2], b[3], b[4]]), u16::from_le_bytes([b[5], b[6]]), u16::from_le_bytes([b[7], b[8]])))
}

/// Writes the packet headers of `out`, whose first 4 bytes were reserved:
/// one header when the payload fits one packet, else the payload is split
/// into packets of 0xFFFFFF bytes (and an empty one if it divides exactly).
fn frame(out: &mut Vec<u8>, seq: u8) {
    let len = out.len() - 4;
    if len < MAX_PAYLOAD {
        out[..3].copy_from_slice(&(len as u32).to_le_bytes()[..3]);
        out[3] = seq;
        return;
    }
    let payload = out.split_off(4);
    out.clear();
    let mut seq = seq;
    let mut chunks = payload.chunks(MAX_PAYLOAD).peekable();
    while let Some(c) = chunks.next() {
        out.extend_from_slice(&(c.len() as u32).to_le_bytes()[..3]);
        out.push(seq);
        out.extend_from_slice(c);
        seq = seq.wrapping_add(1);
        if chunks.peek().is_none() && c.len() == MAX_PAYLOAD {
            out.extend_from_slice(&[0, 0, 0, seq]);
        }
    }
}

/// The server's greeting, as the handshake needs it.
#[derive(Debug)]
struct Greeting {
    capabilities: CapabilityFlags,
    version: (u16, u16, u16),
    nonce: Vec<u8>,
    plugin: Vec<u8>,
}

/// Reads the v10 greeting (an ERR packet here is the server refusing us,
/// e.g. too many connections).
fn greeting(p: &[u8]) -> Result<Greeting, Failure> {
    if p.first() == Some(&0xFF) {
        return Err(err_packet(p));
    }
    let bad =
        |why: String| Failure::new(ErrorClass::Other, format!("unexpected greeting from the server ({why}): is it MySQL or MariaDB?"));
    if p.first() != Some(&10) {
        return Err(bad(format!("protocol version {:?}, expected 10", p.first())));
    }
    let hs = ParseBuf(p).parse::<HandshakePacket>(()).map_err(|e| bad(e.to_string()))?;
    let capabilities = hs.capabilities();
    let needed = CapabilityFlags::CLIENT_PROTOCOL_41 | CapabilityFlags::CLIENT_SECURE_CONNECTION;
    if !capabilities.contains(needed) {
        return Err(Failure::new(ErrorClass::Other, "the server is too old (no 4.1 protocol with secure authentication)"));
    }
    Ok(Greeting {
        capabilities,
        version: hs.server_version_parsed().unwrap_or((5, 5, 5)),
        nonce: hs.nonce(),
        plugin: hs.auth_plugin_name_ref().unwrap_or(b"mysql_native_password").to_vec(),
    })
}

/// The authentication data of `plugin` for `password` and the server's nonce.
fn auth_data(plugin: &[u8], password: Option<&str>, nonce: &[u8]) -> Result<Vec<u8>, Failure> {
    let pass = password.unwrap_or("").as_bytes();
    let data = match plugin {
        b"mysql_native_password" => mysql_common::scramble::scramble_native(nonce, pass).map(|s| s.to_vec()),
        b"caching_sha2_password" => mysql_common::scramble::scramble_sha256(nonce, pass).map(|s| s.to_vec()),
        b"client_ed25519" => {
            return Err(Failure::new(
                ErrorClass::Other,
                "the server asks for MariaDB's client_ed25519 authentication plugin, which scalelab does not support: \
                 use a user IDENTIFIED VIA mysql_native_password",
            ))
        }
        other => {
            return Err(Failure::new(
                ErrorClass::Other,
                format!(
                    "the server asks for the authentication plugin '{}', which scalelab does not support \
                     (it speaks mysql_native_password and caching_sha2_password)",
                    String::from_utf8_lossy(other)
                ),
            ))
        }
    };
    Ok(data.unwrap_or_default()) // None: empty password, empty data
}

/// caching_sha2_password's full authentication over plain TCP: the password
/// (NUL-terminated) XORed with the nonce, encrypted with the server's RSA
/// public key (OAEP). mysql_common panics on a key it cannot parse; that is
/// caught and reported.
fn rsa_encrypt(password: &[u8], nonce: &[u8], pem: &[u8]) -> Result<Vec<u8>, Failure> {
    let mut pass = password.to_vec();
    pass.push(0);
    if !nonce.is_empty() {
        for (i, b) in pass.iter_mut().enumerate() {
            *b ^= nonce[i % nonce.len()];
        }
    }
    std::panic::catch_unwind(|| mysql_common::crypto::encrypt(&pass, pem))
        .map_err(|_| Failure::new(ErrorClass::Other, "the server's RSA public key (caching_sha2_password) could not be read"))
}

/// A statement prepared on the server.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepared {
    id: u32,
    params: u16,
}

impl Prepared {
    /// How many `?` placeholders the server counted.
    pub(crate) fn params(&self) -> usize {
        usize::from(self.params)
    }
}

/// One connection speaking the MySQL client/server protocol.
pub(crate) struct MyWire {
    stream: Stream,
    inbox: Inbox,
    /// The request being sent; reused, so a query allocates nothing.
    out: Vec<u8>,
    /// CLIENT_DEPRECATE_EOF was agreed: no EOF after column definitions, and
    /// result sets end with an OK packet led by 0xFE.
    deprecate_eof: bool,
    /// The next sequence id to send during the handshake.
    seq: u8,
}

/// Opens a connection (TCP, or the unix socket of `?socket=`), with TLS if
/// the URL asks for it, and authenticates; the whole within `timeout`.
/// `sole`: the calling thread owns only this connection ([`Stream::settle`]).
pub(crate) async fn connect(url: &SqlUrl, timeout: Duration, sole: bool) -> Result<MyWire, Failure> {
    let addr = url.socket.clone().unwrap_or_else(|| format!("{}:{}", url.host, url.port));
    match tokio::time::timeout(timeout, handshake(url, timeout, &addr, sole)).await {
        Err(_) => Err(Failure::new(ErrorClass::ConnectTimeout, format!("connect to {addr} timed out"))),
        Ok(r) => r,
    }
}

async fn handshake(url: &SqlUrl, timeout: Duration, addr: &str, sole: bool) -> Result<MyWire, Failure> {
    let stream = match &url.socket {
        Some(path) => Stream::unix(path, timeout).await?,
        None => Stream::tcp(&url.host, url.port, timeout).await?,
    };
    let mut c = MyWire::new(stream, false);
    let len = c.packet().await.map_err(|e| e.at_connect(addr))?;
    let g = greeting(&c.inbox.data()[..len]);
    c.inbox.consume(len);
    let g = g?;
    let wanted = CapabilityFlags::CLIENT_LONG_PASSWORD
        | CapabilityFlags::CLIENT_LONG_FLAG
        | CapabilityFlags::CLIENT_PROTOCOL_41
        | CapabilityFlags::CLIENT_SECURE_CONNECTION
        | CapabilityFlags::CLIENT_PLUGIN_AUTH
        | CapabilityFlags::CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
        | CapabilityFlags::CLIENT_CONNECT_WITH_DB
        | CapabilityFlags::CLIENT_TRANSACTIONS
        | CapabilityFlags::CLIENT_MULTI_RESULTS
        | CapabilityFlags::CLIENT_PS_MULTI_RESULTS
        | CapabilityFlags::CLIENT_DEPRECATE_EOF;
    let mut caps = wanted & g.capabilities;
    let secure = url.socket.is_some() || url.tls != SqlTls::Off;
    if url.tls != SqlTls::Off {
        if !g.capabilities.contains(CapabilityFlags::CLIENT_SSL) {
            return Err(Failure::new(
                ErrorClass::Other,
                format!("{addr} does not offer TLS, which the URL's ssl-mode asks for: drop ssl-mode or enable TLS on the server"),
            ));
        }
        caps |= CapabilityFlags::CLIENT_SSL;
        c.start();
        SslRequest::new(caps, MAX_PACKET, COLLATION).serialize(&mut c.out);
        c.send().await.map_err(|e| e.at_connect(addr))?;
        let MyWire { stream, inbox, out, seq, .. } = c;
        c = MyWire { stream: stream.into_tls(&url.tls, &url.host, timeout).await?, inbox, out, deprecate_eof: false, seq };
    }
    c.deprecate_eof = caps.contains(CapabilityFlags::CLIENT_DEPRECATE_EOF);
    // An unsupported default plugin: answer with mysql_native_password; the
    // server switches if the user needs another one.
    let mut plugin = g.plugin.clone();
    if plugin != b"mysql_native_password" && plugin != b"caching_sha2_password" {
        plugin = b"mysql_native_password".to_vec();
    }
    let data = auth_data(&plugin, url.password.as_deref(), &g.nonce)?;
    c.start();
    HandshakeResponse::new(
        Some(&data[..]),
        g.version,
        Some(url.user.as_bytes()),
        Some(url.database.as_bytes()),
        Some(AuthPlugin::from_bytes(&plugin)),
        caps,
        None,
        MAX_PACKET,
    )
    .serialize(&mut c.out);
    c.send().await.map_err(|e| e.at_connect(addr))?;
    c.authenticate(plugin, g.nonce, url.password.as_deref(), secure).await.map_err(|e| e.at_connect(addr))?;
    let MyWire { stream, inbox, out, deprecate_eof, seq } = c;
    let stream = stream.settle(sole).map_err(|e| Error::Io(e).at_connect(addr))?;
    Ok(MyWire { stream, inbox, out, deprecate_eof, seq })
}

impl MyWire {
    fn new(stream: Stream, deprecate_eof: bool) -> MyWire {
        MyWire { stream, inbox: Inbox::new(), out: Vec::with_capacity(256), deprecate_eof, seq: 0 }
    }

    /// Starts a request in `out`: the 4 header bytes are filled by `send`.
    fn start(&mut self) {
        self.out.clear();
        self.out.extend_from_slice(&[0; 4]);
    }

    /// Frames `out` with the current sequence id and writes it; the next
    /// packet we send goes on with the following id (the TLS request and
    /// the handshake response are two in a row).
    async fn send(&mut self) -> Result<(), Error> {
        frame(&mut self.out, self.seq);
        self.seq = self.seq.wrapping_add(((self.out.len() - 1) / (MAX_PAYLOAD + 4) + 1) as u8);
        self.stream.write_all(&self.out).await?;
        Ok(())
    }

    /// Sends a command (sequence id 0) of `out`.
    async fn command(&mut self) -> Result<(), Error> {
        self.seq = 0;
        self.send().await
    }

    /// Reads a packet header; returns the payload length (the payload is
    /// next in the inbox, not necessarily buffered yet).
    async fn head(&mut self) -> Result<usize, Error> {
        self.inbox.fill(&mut self.stream, 4).await?;
        let d = self.inbox.data();
        let len = usize::from(d[0]) | usize::from(d[1]) << 8 | usize::from(d[2]) << 16;
        self.seq = d[3].wrapping_add(1);
        self.inbox.consume(4);
        Ok(len)
    }

    /// Reads a whole packet that fits in one (OK, ERR, EOF, counts) and
    /// buffers its payload: `inbox.data()[..len]`, for the caller to consume.
    async fn packet(&mut self) -> Result<usize, Error> {
        let len = self.head().await?;
        if len == MAX_PAYLOAD {
            return Err(malformed("a 16 MB packet where a short one was expected"));
        }
        self.inbox.fill(&mut self.stream, len).await?;
        Ok(len)
    }

    /// Skips one packet of `len` bytes and its continuations.
    async fn skip_payload(&mut self, mut len: usize) -> Result<(), Error> {
        loop {
            self.inbox.skip(&mut self.stream, len).await?;
            if len < MAX_PAYLOAD {
                return Ok(());
            }
            len = self.head().await?;
        }
    }

    /// Skips one whole packet.
    async fn skip_packet(&mut self) -> Result<(), Error> {
        let len = self.head().await?;
        self.skip_payload(len).await
    }

    /// The authentication exchange after the handshake response: OK, ERR,
    /// one auth switch (0xFE), caching_sha2_password's fast (0x01 0x03) or
    /// full (0x01 0x04) authentication.
    async fn authenticate(&mut self, mut plugin: Vec<u8>, mut nonce: Vec<u8>, password: Option<&str>, secure: bool) -> Result<(), Error> {
        let mut switched = false;
        loop {
            let len = self.packet().await?;
            let p = self.inbox.data()[..len].to_vec();
            self.inbox.consume(len);
            match p.first() {
                Some(0x00) => return Ok(()),
                Some(0xFF) => return Err(Error::Fail(err_packet(&p))),
                Some(0xFE) if !switched => {
                    switched = true;
                    let Some(end) = p[1..].iter().position(|&b| b == 0) else {
                        return Err(Error::Fail(Failure::new(
                            ErrorClass::Other,
                            "the server asks for the old mysql_old_password authentication, which scalelab does not support",
                        )));
                    };
                    plugin = p[1..1 + end].to_vec();
                    nonce = p[2 + end..].to_vec();
                    if nonce.last() == Some(&0) {
                        nonce.pop();
                    }
                    let data = auth_data(&plugin, password, &nonce).map_err(Error::Fail)?;
                    self.start();
                    self.out.extend_from_slice(&data);
                    self.send().await?;
                }
                Some(0x01) if plugin == b"caching_sha2_password" => match p.get(1) {
                    Some(0x03) => {} // fast authentication succeeded: OK follows
                    Some(0x04) => {
                        let pass = password.unwrap_or("").as_bytes();
                        self.start();
                        if secure {
                            self.out.extend_from_slice(pass);
                            self.out.push(0);
                        } else {
                            // Ask for the server's public key (0x02); it comes as AuthMoreData (0x01, PEM).
                            self.out.push(0x02);
                            self.send().await?;
                            let len = self.packet().await?;
                            let key = self.inbox.data()[..len].to_vec();
                            self.inbox.consume(len);
                            if key.first() != Some(&0x01) {
                                return Err(match key.first() {
                                    Some(0xFF) => Error::Fail(err_packet(&key)),
                                    _ => malformed("no RSA public key for caching_sha2_password"),
                                });
                            }
                            let enc = rsa_encrypt(pass, &nonce, &key[1..]).map_err(Error::Fail)?;
                            self.start();
                            self.out.extend_from_slice(&enc);
                        }
                        self.send().await?;
                    }
                    _ => return Err(malformed("unknown caching_sha2_password step")),
                },
                _ => return Err(malformed(&format!("unexpected packet during authentication (first byte {:?})", p.first()))),
            }
        }
    }

    /// Says goodbye (COM_QUIT) if the socket takes it at once, without
    /// waiting for anything (for `Drop`): the server then does not count and
    /// log an aborted connection.
    pub(crate) fn quit_now(&self) {
        self.stream.try_write_now(&[1, 0, 0, 0, COM_QUIT]);
    }

    /// Prepares a statement (COM_STMT_PREPARE) and skips its parameter and
    /// column definitions.
    pub(crate) async fn prepare(&mut self, sql: &str) -> Result<Prepared, Failure> {
        self.prepare_inner(sql).await.map_err(Error::at_query)
    }

    async fn prepare_inner(&mut self, sql: &str) -> Result<Prepared, Error> {
        self.start();
        self.out.push(COM_STMT_PREPARE);
        self.out.extend_from_slice(sql.as_bytes());
        self.command().await?;
        let len = self.packet().await?;
        let p = &self.inbox.data()[..len];
        let r = if p.first() == Some(&0xFF) {
            Err(Error::Fail(err_packet(p)))
        } else {
            prepare_ok(p).ok_or_else(|| malformed("bad COM_STMT_PREPARE response"))
        };
        self.inbox.consume(len);
        let (id, columns, params) = r?;
        for n in [params, columns] {
            for _ in 0..n {
                self.skip_packet().await?;
            }
            if n > 0 && !self.deprecate_eof {
                self.skip_packet().await?;
            }
        }
        Ok(Prepared { id, params })
    }

    /// Executes a prepared statement with the values at `order` (ints as
    /// LONGLONG, texts as VAR_STRING) and skips its result.
    pub(crate) async fn execute(&mut self, stmt: &Prepared, order: &[usize], values: &[Value]) -> Result<(), Failure> {
        build_execute(&mut self.out, stmt.id, order, values);
        self.round_trip().await.map_err(Error::at_query)
    }

    /// Runs a text query (COM_QUERY) and skips its result(s).
    pub(crate) async fn query(&mut self, sql: &str) -> Result<(), Failure> {
        self.start();
        self.out.push(COM_QUERY);
        self.out.extend_from_slice(sql.as_bytes());
        self.round_trip().await.map_err(Error::at_query)
    }

    async fn round_trip(&mut self) -> Result<(), Error> {
        self.command().await?;
        self.read_result().await
    }

    /// Reads one reply to a command: OK, ERR, or result sets (column count,
    /// definitions, rows, terminator) as long as the server says more follow.
    /// The packets are walked synchronously in what the inbox holds
    /// ([`Reply::scan`]); the socket is read only when a packet is incomplete,
    /// so a small reply costs one read.
    async fn read_result(&mut self) -> Result<(), Error> {
        let mut reply = Reply::new(self.deprecate_eof);
        while let Some(need) = reply.scan(&mut self.inbox)? {
            self.inbox.fill(&mut self.stream, need).await?;
        }
        if self.inbox.data().is_empty() {
            // Nothing more is due until the next request: should the last
            // read have filled the buffer exactly, the next read would only
            // find the socket empty (see `clear_read_ready`).
            self.stream.clear_read_ready();
        }
        Ok(())
    }
}

/// Where [`Reply::scan`] is in a reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The first packet of a result: OK, ERR, or a column count.
    Start,
    /// This many column definitions left to skip.
    Columns(u64),
    /// The EOF packet after the column definitions (without DEPRECATE_EOF).
    ColumnsEof,
    /// Rows, up to the terminator.
    Rows,
}

/// The reader of one reply, walking packets in the inbox without waiting.
struct Reply {
    phase: Phase,
    deprecate_eof: bool,
    /// Bytes of the current packet still to discard (it was not all buffered).
    skip: usize,
    /// The packet being skipped was 0xFFFFFF long: the next one continues it.
    cont: bool,
}

impl Reply {
    fn new(deprecate_eof: bool) -> Reply {
        Reply { phase: Phase::Start, deprecate_eof, skip: 0, cont: false }
    }

    /// Starts skipping a packet whose header is at the front of the inbox.
    fn skip_packet(&mut self, inbox: &mut Inbox, len: usize) {
        inbox.consume(4);
        self.skip = len;
        self.cont = len == MAX_PAYLOAD;
    }

    /// Consumes the complete packets of the reply that the inbox holds.
    /// Returns None when the reply is over, or how many bytes the inbox must
    /// hold for the next step.
    fn scan(&mut self, inbox: &mut Inbox) -> Result<Option<usize>, Error> {
        loop {
            if self.skip > 0 {
                let n = self.skip.min(inbox.data().len());
                inbox.consume(n);
                self.skip -= n;
                if self.skip > 0 {
                    return Ok(Some(1));
                }
            }
            let d = inbox.data();
            if d.len() < 4 {
                return Ok(Some(4));
            }
            let len = usize::from(d[0]) | usize::from(d[1]) << 8 | usize::from(d[2]) << 16;
            if self.cont {
                self.skip_packet(inbox, len);
                continue;
            }
            match self.phase {
                Phase::Columns(n) => {
                    self.skip_packet(inbox, len);
                    self.phase = match n {
                        2.. => Phase::Columns(n - 1),
                        _ if self.deprecate_eof => Phase::Rows,
                        _ => Phase::ColumnsEof,
                    };
                    continue;
                }
                Phase::ColumnsEof => {
                    self.skip_packet(inbox, len);
                    self.phase = Phase::Rows;
                    continue;
                }
                Phase::Rows if len == 0 => return Err(malformed("empty row packet")),
                Phase::Rows if d.len() < 5 => return Ok(Some(5)),
                // A row: skipped. A row led by 0xFE is a length of 16 MB or
                // more, so the terminator is 0xFE in a shorter packet.
                Phase::Rows if len == MAX_PAYLOAD || (d[4] != 0xFE && d[4] != 0xFF) => {
                    self.skip_packet(inbox, len);
                    continue;
                }
                Phase::Start | Phase::Rows => {}
            }
            // A packet to read whole: OK, ERR, column count, terminator.
            if len == MAX_PAYLOAD {
                return Err(malformed("a 16 MB packet where a short one was expected"));
            }
            if d.len() < 4 + len {
                return Ok(Some(4 + len));
            }
            let p = &d[4..4 + len];
            let status = match (self.phase, p.first()) {
                (_, Some(0xFF)) => {
                    let f = err_packet(p);
                    inbox.consume(4 + len);
                    return Err(Error::Fail(f));
                }
                (Phase::Rows, _) => terminator_status(p, self.deprecate_eof).ok_or_else(|| malformed("truncated end of result set"))?,
                (_, Some(0x00)) => ok_status(p).ok_or_else(|| malformed("truncated OK packet"))?,
                (_, Some(0xFB)) => return Err(malformed("LOCAL INFILE request, not supported")),
                (_, Some(_)) => match lenenc(p) {
                    Some((n, _)) if n > 0 && n <= MAX_COLUMNS => {
                        inbox.consume(4 + len);
                        self.phase = Phase::Columns(n);
                        continue;
                    }
                    _ => return Err(malformed("bad column count")),
                },
                (_, None) => return Err(malformed("empty packet")),
            };
            inbox.consume(4 + len);
            if status & SERVER_MORE_RESULTS_EXISTS == 0 {
                return Ok(None);
            }
            self.phase = Phase::Start;
        }
    }
}

/// Serializes COM_STMT_EXECUTE (no cursor, one iteration, no NULLs, types
/// sent) into `out`, framed with sequence id 0.
fn build_execute(out: &mut Vec<u8>, id: u32, order: &[usize], values: &[Value]) {
    out.clear();
    out.extend_from_slice(&[0, 0, 0, 0, COM_STMT_EXECUTE]);
    out.extend_from_slice(&id.to_le_bytes());
    out.push(0); // CURSOR_TYPE_NO_CURSOR
    out.extend_from_slice(&1u32.to_le_bytes());
    if !order.is_empty() {
        out.resize(out.len() + order.len().div_ceil(8), 0); // NULL bitmap
        out.push(1); // new-params-bound: the types follow
        for &i in order {
            out.push(match values[i] {
                Value::Int(_) => TYPE_LONGLONG,
                Value::Text(_) => TYPE_VAR_STRING,
            });
            out.push(0); // signed
        }
        for &i in order {
            match &values[i] {
                Value::Int(v) => out.extend_from_slice(&v.to_le_bytes()),
                Value::Text(s) => {
                    put_lenenc(out, s.len() as u64);
                    out.extend_from_slice(s.as_bytes());
                }
            }
        }
    }
    frame(out, 0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn run<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
    }

    /// A packet: header (length, sequence id) and payload.
    fn pkt(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        v.push(seq);
        v.extend_from_slice(payload);
        v
    }

    fn ok(status: u16) -> Vec<u8> {
        let mut v = vec![0, 0, 0];
        v.extend_from_slice(&status.to_le_bytes());
        v.extend_from_slice(&[0, 0]);
        v
    }

    /// A client over one end of a socket pair; the server's bytes are written
    /// to the other end (then closed) by a task.
    fn with_server<T>(bytes: Vec<u8>, deprecate_eof: bool, f: impl AsyncFnOnce(&mut MyWire) -> T) -> T {
        run(async move {
            let (a, mut b) = tokio::net::UnixStream::pair().unwrap();
            let mut c = MyWire::new(Stream::Unix(a), deprecate_eof);
            // Write the reply, close the sending side, and drain what the
            // client sends (so its writes never fail).
            let server = tokio::spawn(async move {
                let _ = b.write_all(&bytes).await;
                let _ = b.shutdown().await;
                let mut sink = Vec::new();
                let _ = b.read_to_end(&mut sink).await;
            });
            let r = f(&mut c).await;
            drop(server);
            r
        })
    }

    #[test]
    fn lenenc_reads_every_size_and_refuses_truncation() {
        for n in [0u64, 250, 251, 65_535, 65_536, 0xFF_FFFF, 0x100_0000, u64::MAX] {
            let mut b = Vec::new();
            put_lenenc(&mut b, n);
            assert_eq!(lenenc(&b), Some((n, b.len())), "{n}");
            for cut in 0..b.len() {
                assert_eq!(lenenc(&b[..cut]), None, "{n} cut at {cut}");
            }
        }
        assert_eq!(lenenc(&[0xFB]), None);
        assert_eq!(lenenc(&[0xFF, 1, 2]), None);
    }

    #[test]
    fn error_packets_are_classified_with_or_without_sqlstate() {
        let f = err_packet(b"\xff\xbd\x04#40001Deadlock found when trying to get lock");
        assert_eq!(f.class, ErrorClass::Deadlock);
        assert_eq!(f.message, "ERROR 1213 (40001): Deadlock found when trying to get lock");
        // Before the handshake there is no SQLSTATE.
        let f = err_packet(b"\xff\x10\x04Too many connections");
        assert_eq!((f.class, f.message.as_str()), (ErrorClass::TooManyConnections, "ERROR 1040 (HY000): Too many connections"));
        for bad in [&b""[..], b"\xff", b"\xff\x10"] {
            assert_eq!(err_packet(bad).class, ErrorClass::ConnectionLost);
        }
        assert_eq!(err_packet(b"\xff\x10\x04#4").message, "ERROR 1040 (HY000): #4");
    }

    #[test]
    fn ok_eof_and_prepare_packets_refuse_truncation() {
        let p = [0, 0xFC, 1, 0, 0, 0x0A, 0x00, 0, 0];
        assert_eq!(ok_status(&p), Some(0x000A));
        for cut in 0..7 {
            assert_eq!(ok_status(&p[..cut]), None, "cut at {cut}");
        }
        assert_eq!(terminator_status(&[0xFE, 0, 0, 8, 0], false), Some(8));
        assert_eq!(terminator_status(&[0xFE, 0, 0, 8], false), None);
        let p = [0, 7, 0, 0, 0, 2, 0, 1, 0, 0, 0, 0];
        assert_eq!(prepare_ok(&p), Some((7, 2, 1)));
        assert_eq!(prepare_ok(&p[..8]), None);
        assert_eq!(prepare_ok(&[1; 12]), None);
    }

    /// A greeting laid out as MariaDB 10.11 sends it.
    const GREETING: &[u8] = b"\x0a5.5.5-10.11.14-MariaDB-0+deb12u2\x00\x2a\x00\x00\x00\x3c\x5b\x2e\x2f\x6f\x37\x49\x59\x00\xfe\xf7\x2d\x02\x00\xff\x81\x15\x00\x00\x00\x00\x00\x00\x1d\x00\x00\x00\x27\x66\x31\x6e\x7b\x27\x54\x27\x5d\x77\x56\x44\x00mysql_native_password\x00";

    #[test]
    fn greetings_parse_and_garbage_is_an_error_not_a_panic() {
        let g = greeting(GREETING).unwrap();
        assert_eq!(g.plugin, b"mysql_native_password");
        assert_eq!(g.nonce.len(), 20);
        assert!(g.capabilities.contains(CapabilityFlags::CLIENT_PROTOCOL_41));
        for cut in 0..GREETING.len() {
            let _ = greeting(&GREETING[..cut]); // anything but a panic
        }
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..2000 {
            let n = (x % 120) as usize;
            let bytes: Vec<u8> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let _ = greeting(&bytes);
            let _ = err_packet(&bytes);
            let _ = ok_status(&bytes);
            let _ = lenenc(&bytes);
        }
        assert!(greeting(b"\x09junk").unwrap_err().message.contains("MySQL or MariaDB"));
        assert_eq!(greeting(b"\xff\x10\x04Too many connections").unwrap_err().class, ErrorClass::TooManyConnections);
    }

    #[test]
    fn unsupported_authentication_plugins_are_named() {
        assert_eq!(auth_data(b"mysql_native_password", Some("pw"), &[7; 20]).unwrap().len(), 20);
        assert_eq!(auth_data(b"caching_sha2_password", Some("pw"), &[7; 20]).unwrap().len(), 32);
        assert!(auth_data(b"mysql_native_password", None, &[7; 20]).unwrap().is_empty());
        assert!(auth_data(b"client_ed25519", Some("pw"), &[7; 32]).unwrap_err().message.contains("client_ed25519"));
        assert!(auth_data(b"dialog", Some("pw"), &[]).unwrap_err().message.contains("'dialog'"));
        assert!(rsa_encrypt(b"pw", &[1; 20], b"not a PEM key").is_err());
    }

    #[test]
    fn execute_is_serialized_with_types_and_framed() {
        let mut out = Vec::new();
        let values = [Value::Int(-2), Value::Text("ab".into())];
        build_execute(&mut out, 5, &[1, 0], &values);
        let mut want = vec![0x17, 5, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0xFD, 0, 0x08, 0, 2, b'a', b'b'];
        want.extend_from_slice(&(-2i64).to_le_bytes());
        assert_eq!(out, pkt(0, &want));
        build_execute(&mut out, 1, &[], &values);
        assert_eq!(out, pkt(0, &[0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0]));
    }

    #[test]
    fn large_payloads_are_split_into_packets() {
        let mut out = vec![0; 4 + MAX_PAYLOAD];
        frame(&mut out, 0);
        assert_eq!(out.len(), 8 + MAX_PAYLOAD);
        assert_eq!(&out[..4], &[0xFF, 0xFF, 0xFF, 0]);
        assert_eq!(&out[4 + MAX_PAYLOAD..], &[0, 0, 0, 1]);
        let mut out = vec![0; 4 + MAX_PAYLOAD + 3];
        frame(&mut out, 0);
        assert_eq!(&out[4 + MAX_PAYLOAD..4 + MAX_PAYLOAD + 4], &[3, 0, 0, 1]);
    }

    /// A result set with one column: count, definition, [EOF], rows, terminator.
    fn result_set(rows: &[Vec<u8>], deprecate_eof: bool, status: u16) -> Vec<u8> {
        let mut v = pkt(1, &[1]);
        v.extend(pkt(2, b"\x03def\x00\x00\x00\x01c\x00\x0c\x3f\x00\x0b\x00\x00\x00\x03\x00\x00\x00\x00\x00"));
        if !deprecate_eof {
            v.extend(pkt(3, &[0xFE, 0, 0, 2, 0]));
        }
        for r in rows {
            v.extend_from_slice(r);
        }
        if deprecate_eof {
            let mut t = ok(status);
            t[0] = 0xFE;
            v.extend(pkt(9, &t));
        } else {
            let mut t = vec![0xFE, 0, 0];
            t.extend_from_slice(&status.to_le_bytes());
            v.extend(pkt(9, &t));
        }
        v
    }

    #[test]
    fn result_sets_are_skipped_with_and_without_eof_packets() {
        for deprecate_eof in [false, true] {
            let rows = vec![pkt(4, &[0, 0, 1, b'x']), pkt(5, &[0, 0, 1, b'y'])];
            // Two result sets (the first says more follow), then an OK, then the next reply.
            let mut bytes = result_set(&rows, deprecate_eof, SERVER_MORE_RESULTS_EXISTS);
            bytes.extend(result_set(&rows, deprecate_eof, SERVER_MORE_RESULTS_EXISTS));
            bytes.extend(pkt(1, &ok(0)));
            bytes.extend(pkt(1, &ok(0)));
            with_server(bytes, deprecate_eof, async |c: &mut MyWire| {
                c.read_result().await.unwrap();
                c.read_result().await.unwrap();
                assert!(c.inbox.data().is_empty());
            });
        }
    }

    #[test]
    fn a_row_over_16_mb_spans_packets() {
        // One 20 MB row: a 0xFFFFFF packet led by 0xFE (a lenenc of 8 bytes:
        // it must not be taken for the terminator), then the rest.
        let total = 20 << 20;
        let mut row = vec![0xFE];
        row.extend_from_slice(&((total - 9) as u64).to_le_bytes());
        row.resize(total, b'z');
        let mut rows = pkt(4, &row[..MAX_PAYLOAD]);
        rows.extend(pkt(5, &row[MAX_PAYLOAD..]));
        let mut bytes = result_set(&[rows], true, 0);
        bytes.extend(pkt(1, &ok(0)));
        with_server(bytes, true, async |c: &mut MyWire| {
            c.read_result().await.unwrap();
            c.read_result().await.unwrap();
        });
    }

    #[test]
    fn errors_mid_result_and_truncated_replies_fail_cleanly() {
        let mut bytes = pkt(1, &[1]);
        bytes.extend(pkt(2, b"\x03def"));
        bytes.extend(pkt(3, b"\xff\xb5\x04#HY000Lock wait timeout exceeded"));
        bytes.extend(pkt(1, &ok(0)));
        with_server(bytes, true, async |c: &mut MyWire| {
            let f = c.read_result().await.unwrap_err().at_query();
            assert_eq!(f.class, ErrorClass::LockWaitTimeout, "{}", f.message);
            assert!(f.message.starts_with("ERROR 1205 (HY000): Lock wait"), "{}", f.message);
            c.read_result().await.unwrap();
        });
        // The server closes in the middle of a row.
        let mut bytes = pkt(1, &[1]);
        bytes.extend(pkt(2, b"\x03def"));
        bytes.extend(&pkt(3, &[0, 0, 5, b'a', b'b', b'c', b'd', b'e'])[..6]);
        with_server(bytes, true, async |c: &mut MyWire| {
            let f = c.read_result().await.unwrap_err().at_query();
            assert_eq!(f.class, ErrorClass::ConnectionLost);
            assert!(f.message.starts_with("connection lost: "), "{}", f.message);
        });
        // Garbage: a bad column count, an empty packet, a 0xFB.
        for payload in [&[0xFFu8; 0][..], &[0xFB], &[0xFC, 1], &[0xFD, 0xFF, 0xFF, 0xFF]] {
            with_server(pkt(1, payload), true, async |c: &mut MyWire| {
                let f = c.read_result().await.unwrap_err().at_query();
                assert_eq!(f.class, ErrorClass::ConnectionLost, "{payload:?}: {}", f.message);
            });
        }
    }

    #[test]
    fn prepare_skips_definitions() {
        for deprecate_eof in [false, true] {
            let mut bytes = pkt(1, &[0, 3, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0]);
            for i in 0..3 {
                bytes.extend(pkt(2 + i, b"\x03def"));
                if i != 0 && !deprecate_eof {
                    bytes.extend(pkt(2, &[0xFE, 0, 0, 2, 0]));
                }
            }
            bytes.extend(pkt(1, b"\xff\x28\x04#42000You have an error in your SQL syntax"));
            with_server(bytes, deprecate_eof, async |c: &mut MyWire| {
                let s = c.prepare("SELECT c FROM t WHERE id = ? AND k = ?").await.unwrap();
                assert_eq!((s.id, s.params()), (3, 2));
                let f = c.prepare("SELEC").await.unwrap_err();
                assert_eq!(
                    (f.class, f.message.as_str()),
                    (ErrorClass::SqlError, "ERROR 1064 (42000): You have an error in your SQL syntax")
                );
            });
        }
    }
}
