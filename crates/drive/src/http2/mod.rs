//! The HTTP/2 driver: h2c by prior knowledge (`h2c://`, or `http://` with
//! `--http 2`), h2 over TLS negotiated by ALPN (`https://`).
//!
//! A virtual client is one stream at a time, and `streams` clients share
//! one connection (h2load's `-m`). The engine places the clients of one
//! connection on one worker thread ([`Driver::clients_per_connection`]);
//! [`Driver::clients`] ties them to one [`Slot`], the connection they
//! share, opened by the first of them that needs it.
//!
//! The protocol is this crate's own (as the HTTP/1.1, PostgreSQL and MySQL
//! clients are), the Huffman decoding of a kept value aside (`loona-hpack`):
//! with the `h2` crate,
//! whose connection runs as a task of its own, one connection of one
//! stream cost 1.46x h2load's CPU per request and reached 0.82x its
//! throughput (bench/notes/h2-vs-h2load.md).
//!
//! - this file: [`HttpVersion`] (`--http`), the driver and its clients;
//! - `conn`: opening a connection (TCP, TLS with ALPN, the HTTP/2
//!   preface), the connection driven by the requests that share it, one
//!   request on it, its errors by class, and the ALPN question
//!   `--http auto` asks an `https://` server;
//! - `state`: the connection's frames, streams and windows;
//! - `frame`: frames and the requests' HPACK encoding;
//! - `hpack`: the responses' `:status` and `server`, read from their
//!   header blocks with no dynamic table.

mod conn;
mod frame;
mod hpack;
mod state;
#[cfg(test)]
mod tests;

pub use conn::server_offers_h2;

use crate::driver::{Client, ClientCtx, Driver};
use crate::http::{HttpConfig, HttpConfigError, Preflight, StatusMatch};
use bytes::Bytes;
use conn::{Attempt, Conn, Prepared};
use scalelab_core::result::Failure;
use scalelab_core::{redact_url, ErrorClass};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `--http`: the HTTP version a sweep asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HttpVersion {
    /// HTTP/1.1 (`drive::http`), even where the server offers HTTP/2.
    Http11,
    /// HTTP/2: by prior knowledge on `http://` (h2c), by ALPN on
    /// `https://` (a server that does not choose h2 is refused).
    Http2,
    /// HTTP/2 where an `https://` server offers it by ALPN, HTTP/1.1
    /// otherwise; `http://` stays HTTP/1.1 (there is no offer to read).
    #[default]
    Auto,
}

impl HttpVersion {
    /// Parses `1.1`, `2` or `auto` (as `--http` takes them).
    pub fn parse(text: &str) -> Result<HttpVersion, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "1.1" | "http/1.1" => Ok(HttpVersion::Http11),
            "2" | "h2" | "http/2" => Ok(HttpVersion::Http2),
            "auto" => Ok(HttpVersion::Auto),
            _ => Err(format!("--http '{text}': give 1.1, 2 or auto")),
        }
    }

    /// The name `--http` takes and runs record (`1.1`, `2`, `auto`).
    pub fn name(self) -> &'static str {
        match self {
            HttpVersion::Http11 => "1.1",
            HttpVersion::Http2 => "2",
            HttpVersion::Auto => "auto",
        }
    }
}

/// The most streams `--streams` may put on one connection.
pub const MAX_STREAMS: u32 = 1000;

/// Why an HTTP/2 driver cannot be built; the message names what to fix.
#[derive(Debug, thiserror::Error)]
pub enum H2ConfigError {
    #[error(transparent)]
    Config(#[from] HttpConfigError),
    #[error("--streams must be 1 to {MAX_STREAMS} streams per connection")]
    Streams,
    #[error("header '{0}': {1}")]
    Header(String, String),
}

/// Shared, immutable state of the driver.
pub(crate) struct Inner {
    pub(crate) addr: SocketAddr,
    pub(crate) source_addrs: Vec<IpAddr>,
    pub(crate) next_source: AtomicUsize,
    /// TLS offering only h2 by ALPN (None: h2c, prior knowledge).
    pub(crate) tls: Option<(tokio_rustls::TlsConnector, rustls::pki_types::ServerName<'static>)>,
    pub(crate) prepared: Vec<Prepared>,
    total_weight: u32,
    pub(crate) body: Option<Bytes>,
    pub(crate) timeout: Duration,
    pub(crate) connect_timeout: Duration,
    expect: StatusMatch,
    /// Clients (streams) per connection.
    streams: u32,
}

/// Drives an HTTP/2 server: `streams` clients share each connection, one
/// stream in flight each.
#[derive(Clone)]
pub struct H2Driver {
    inner: Arc<Inner>,
}

/// What the preflight request learned about an HTTP/2 target.
#[derive(Debug)]
pub struct H2Preflight {
    /// The status, `server` header and acceptance, as HTTP/1.1's preflight.
    pub answer: Preflight,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (None: it set no limit):
    /// streams past it wait for one of a connection's streams to end.
    pub max_streams: Option<u32>,
}

impl H2Driver {
    /// Validates the configuration (the request set HTTP/1.1 takes, with
    /// `http://` meaning h2c and `https://` h2 by ALPN) and resolves the
    /// host once, before any load.
    pub fn new(config: &HttpConfig, streams: u32) -> Result<Self, H2ConfigError> {
        if !(1..=MAX_STREAMS).contains(&streams) {
            return Err(H2ConfigError::Streams);
        }
        crate::http::check_request_headers(&config.headers, config.body.as_deref())?;
        let first = config.requests.first().ok_or_else(|| HttpConfigError::Url { url: String::new(), why: "no URL given".into() })?;
        let base = crate::http::parse_url(&first.url)?;
        let host = base.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_string();
        let port = base.port_or_known_default().unwrap_or(80);
        let addr = {
            use std::net::ToSocketAddrs;
            (host.as_str(), port)
                .to_socket_addrs()
                .map_err(|_| HttpConfigError::Resolve(redact_url(&first.url)))?
                .next()
                .ok_or_else(|| HttpConfigError::Resolve(redact_url(&first.url)))?
        };
        let given = |name: &str| config.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str());
        let mut prepared = Vec::new();
        let mut cumulative = 0u32;
        for spec in &config.requests {
            crate::http::check_method(&spec.method)?;
            let url = crate::http::parse_url(&spec.url)?;
            if url.scheme() != base.scheme() || url.host_str() != base.host_str() || url.port_or_known_default() != Some(port) {
                return Err(HttpConfigError::MixedHosts(redact_url(&spec.url)).into());
            }
            cumulative += spec.weight;
            prepared.push(Prepared::new(&spec.method, &url, given("host"), given("authorization").is_some(), cumulative)?);
        }
        let headers = request_headers(config)?;
        for p in &mut prepared {
            p.encode(&headers);
        }
        let tls = (base.scheme() == "https").then(|| {
            let name = rustls::pki_types::ServerName::try_from(host.clone())
                .unwrap_or_else(|_| rustls::pki_types::ServerName::try_from("localhost").expect("valid name"));
            let mut c = (*scalelab_wire::tls::config(config.insecure)).clone();
            c.alpn_protocols = vec![b"h2".to_vec()];
            (tokio_rustls::TlsConnector::from(Arc::new(c)), name)
        });
        Ok(H2Driver {
            inner: Arc::new(Inner {
                addr,
                source_addrs: config.source_addrs.clone(),
                next_source: AtomicUsize::new(0),
                tls,
                prepared,
                total_weight: cumulative,
                body: config.body.clone().map(Bytes::from),
                timeout: config.timeout,
                connect_timeout: config.connect_timeout,
                expect: config.expect.clone(),
                streams,
            }),
        })
    }

    /// The resolved address load will go to.
    pub fn addr(&self) -> SocketAddr {
        self.inner.addr
    }

    /// `h2` (over TLS) or `h2c` (cleartext, prior knowledge): the ALPN
    /// name of what this driver speaks.
    pub fn protocol(&self) -> &'static str {
        if self.inner.tls.is_some() {
            "h2"
        } else {
            "h2c"
        }
    }

    /// Sends the first request once, before any load: proves the target
    /// speaks HTTP/2 and answers; its status, `server` header and stream limit.
    pub fn preflight(&self) -> Result<H2Preflight, Failure> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
        rt.block_on(async {
            let inner = &self.inner;
            let work = async {
                let conn = conn::open(inner).await?;
                conn.want_server();
                let mut waited = Duration::ZERO;
                let answer = conn::request(inner, &conn, &inner.prepared[0], &mut waited).await.map_err(Attempt::failure)?;
                // The server's SETTINGS came before its first response.
                Ok((answer, conn.max_streams()))
            };
            let (answer, max) = tokio::time::timeout(inner.timeout, work)
                .await
                .map_err(|_| Failure::new(ErrorClass::ReadTimeout, format!("no response within {:?}", inner.timeout)))??;
            Ok(H2Preflight {
                answer: Preflight { status: answer.status, server: answer.server, accepted: inner.expect.accepts(answer.status) },
                max_streams: max,
            })
        })
    }
}

/// The headers every request carries, in HTTP/2's form: names lowercase,
/// no connection-specific headers (RFC 9113 8.2.2 forbids them), `Host`
/// carried as `:authority` instead (see [`Prepared::new`]), a user agent
/// and the body's length unless given.
fn request_headers(config: &HttpConfig) -> Result<Vec<(http::HeaderName, http::HeaderValue)>, H2ConfigError> {
    const CONNECTION: [&str; 6] = ["host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"];
    let has = |n: &str| config.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(n));
    let mut headers = Vec::new();
    for (k, v) in &config.headers {
        let lower = k.to_ascii_lowercase();
        if CONNECTION.contains(&lower.as_str()) {
            continue;
        }
        let name = http::HeaderName::from_bytes(lower.as_bytes()).map_err(|e| H2ConfigError::Header(k.clone(), e.to_string()))?;
        let value = http::HeaderValue::from_str(v).map_err(|e| H2ConfigError::Header(k.clone(), e.to_string()))?;
        headers.push((name, value));
    }
    if !has("user-agent") {
        headers.push((http::header::USER_AGENT, http::HeaderValue::from_static(concat!("scalelab/", env!("CARGO_PKG_VERSION")))));
    }
    if let Some(body) = config.body.as_ref().filter(|_| !has("content-length")) {
        headers.push((http::header::CONTENT_LENGTH, http::HeaderValue::from(body.len())));
    }
    Ok(headers)
}

/// The connection some clients of one worker thread share: opened by the
/// first that needs it, replaced by the first that finds it closed (or
/// going away), one opening at a time.
#[derive(Default)]
struct Slot {
    conn: RefCell<Option<Rc<Conn>>>,
    /// Held while a connection is opened, so its clients open one, not one each.
    opening: tokio::sync::Mutex<()>,
    /// Connections opened so far (the first is not a reconnect).
    opened: Cell<u64>,
}

impl Slot {
    /// The connection, while it can still take requests.
    fn live(&self) -> Option<Rc<Conn>> {
        self.conn.borrow().as_ref().filter(|c| c.usable()).cloned()
    }
}

impl Driver for H2Driver {
    type Client = H2Client;

    fn client(&self, ctx: ClientCtx) -> H2Client {
        self.client_on(ctx, Rc::default())
    }

    fn clients_per_connection(&self) -> u32 {
        self.inner.streams
    }

    fn clients(&self, ctxs: &[ClientCtx]) -> Vec<H2Client> {
        let mut slots: HashMap<u32, Rc<Slot>> = HashMap::new();
        ctxs.iter().map(|c| self.client_on(*c, slots.entry(c.connection).or_default().clone())).collect()
    }
}

impl H2Driver {
    fn client_on(&self, ctx: ClientCtx, slot: Rc<Slot>) -> H2Client {
        H2Client {
            inner: self.inner.clone(),
            slot,
            rng: 0x9E37_79B9_7F4A_7C15 ^ (u64::from(ctx.id) + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9),
            reopened: 0,
            connect_times: Vec::new(),
            flow_wait: Duration::ZERO,
        }
    }
}

/// One virtual client: one stream at a time, on the connection it shares.
pub struct H2Client {
    inner: Arc<Inner>,
    slot: Rc<Slot>,
    rng: u64,
    /// Connections this client opened in place of a lost one.
    reopened: u64,
    /// Connect times of the connections the current call opened.
    connect_times: Vec<Duration>,
    /// How long the current call's body waited for the server's send window.
    flow_wait: Duration,
}

impl H2Client {
    /// The shared connection, opened (or replaced) if needed.
    async fn conn(&mut self) -> Result<Rc<Conn>, Failure> {
        if let Some(c) = self.slot.live() {
            return Ok(c);
        }
        let slot = self.slot.clone();
        let _one = slot.opening.lock().await;
        // Another client of the connection may have opened it meanwhile.
        if let Some(c) = slot.live() {
            return Ok(c);
        }
        let t0 = Instant::now();
        let c = Rc::new(conn::open(&self.inner).await?);
        self.connect_times.push(t0.elapsed());
        if slot.opened.get() > 0 {
            self.reopened += 1;
        }
        slot.opened.set(slot.opened.get() + 1);
        *slot.conn.borrow_mut() = Some(c.clone());
        Ok(c)
    }

    fn pick(&mut self) -> usize {
        if self.inner.prepared.len() == 1 {
            return 0;
        }
        // xorshift64*: a cheap, per-client stream of weighted picks.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = (self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) % u64::from(self.inner.total_weight)) as u32;
        self.inner.prepared.iter().position(|p| r < p.cumulative).unwrap_or(0)
    }

    /// One request; a connection found closed or going away before the
    /// request went out is replaced once (the request was never sent, so
    /// it is not a failure of the server's).
    async fn attempt(&mut self, idx: usize) -> Result<conn::Answer, Failure> {
        let inner = self.inner.clone();
        let mut replaced = false;
        loop {
            let c = self.conn().await?;
            match conn::request(&inner, &c, &inner.prepared[idx], &mut self.flow_wait).await {
                Ok(answer) => return Ok(answer),
                Err(Attempt::NotSent(f)) => {
                    c.retire();
                    if replaced {
                        return Err(f);
                    }
                    replaced = true;
                }
                Err(Attempt::Failed(f)) => {
                    // Requests after a GOAWAY go on a new connection.
                    if f.class == ErrorClass::GoAway {
                        c.retire();
                    }
                    return Err(f);
                }
            }
        }
    }
}

impl Client for H2Client {
    async fn connect(&mut self) -> Result<(), Failure> {
        // Timed by the engine as the step's connect_ms, not as a window connect.
        let r = self.conn().await.map(|_| ());
        self.connect_times.clear();
        r
    }

    async fn call(&mut self) -> Result<u32, Failure> {
        let idx = self.pick();
        let timeout = self.inner.timeout;
        let answer = tokio::time::timeout(timeout, self.attempt(idx))
            .await
            .map_err(|_| Failure::new(ErrorClass::ReadTimeout, format!("no complete response within {timeout:?}")))??;
        if self.inner.expect.accepts(answer.status) {
            return Ok(1);
        }
        let class = match answer.status {
            500..=599 => ErrorClass::Http5xx,
            400..=499 => ErrorClass::Http4xx,
            _ => ErrorClass::Other,
        };
        Err(Failure::new(class, format!("HTTP status {}", answer.status)))
    }

    fn reconnects(&self) -> u64 {
        self.reopened
    }

    fn connect_times(&mut self) -> Option<&mut Vec<Duration>> {
        Some(&mut self.connect_times)
    }

    fn take_flow_wait(&mut self) -> Option<Duration> {
        Some(std::mem::take(&mut self.flow_wait))
    }
}
