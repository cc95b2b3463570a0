//! The HTTP/1.1 driver (http:// and https://).
//!
//! Hand-written on tokio + httparse rather than hyper: the reference figures
//! measured on this machine class put a hyper-based client (oha 1.16) at
//! 1.33-1.36x wrk's client CPU per request, and scalelab's target is to cost
//! no more than wrk. Requests are serialized once; a client does one write and
//! reads the response into a reused buffer.

mod response;
pub(crate) mod tls;

pub use response::{read_response, ReadError, ResponseHead};

use crate::driver::{Client, ClientCtx, Driver};
use scalelab_core::result::Failure;
use scalelab_core::{redact_url, ErrorClass};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use url::Url;

/// Why an HTTP configuration is unusable; each message names what to fix.
#[derive(Debug, thiserror::Error)]
pub enum HttpConfigError {
    #[error("invalid URL '{url}': {why}")]
    Url { url: String, why: String },
    #[error("cannot resolve host of '{0}'")]
    Resolve(String),
    #[error("all URLs must share one host and port (one connection per client): '{0}' differs from the first URL")]
    MixedHosts(String),
    #[error("invalid header '{0}': use 'Name: value'")]
    Header(String),
    #[error("header '{0}': the value holds a CR or LF character, which would inject headers; give it on one line")]
    HeaderValue(String),
    #[error("invalid method '{0}': use one word such as GET, POST or PUT")]
    Method(String),
    #[error("{file}:{line}: {why}")]
    UrlFile { file: String, line: usize, why: String },
    #[error("invalid expected status '{0}': use a code (200), a class (2xx), or a list (200,301)")]
    Status(String),
}

/// One request of the workload, with its share of the traffic.
#[derive(Clone, Debug)]
pub struct RequestSpec {
    pub method: String,
    pub url: String,
    pub weight: u32,
}

/// Everything that defines the HTTP workload and how it is sent.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    pub requests: Vec<RequestSpec>,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub keepalive: bool,
    /// Whole-request timeout (write to last byte); a late response is a read timeout.
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// Statuses that count as success.
    pub expect: StatusMatch,
    /// Accept any TLS certificate.
    pub insecure: bool,
    /// Local addresses the connections are made from, in turn (empty: the
    /// kernel's choice). One source address has ~28k ephemeral ports toward
    /// one server address; 50k connections need two or more (127.0.0.0/8 on
    /// loopback).
    pub source_addrs: Vec<std::net::IpAddr>,
}

/// Which response statuses count as success.
#[derive(Clone, Debug, PartialEq)]
pub enum StatusMatch {
    /// Any of these classes (2 = 2xx) or exact codes.
    Any(Vec<StatusRule>),
}

/// A class (`2xx`) or an exact code (`200`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StatusRule {
    Class(u16),
    Code(u16),
}

impl StatusMatch {
    /// Parses `200`, `2xx`, `200,301,3xx`.
    pub fn parse(text: &str) -> Result<Self, HttpConfigError> {
        let err = || HttpConfigError::Status(text.to_string());
        let mut rules = Vec::new();
        for part in text.split(',').map(str::trim) {
            if let Some(c) = part.strip_suffix("xx") {
                let c: u16 = c.parse().map_err(|_| err())?;
                if !(1..=5).contains(&c) {
                    return Err(err());
                }
                rules.push(StatusRule::Class(c));
            } else {
                let c: u16 = part.parse().map_err(|_| err())?;
                if !(100..=599).contains(&c) {
                    return Err(err());
                }
                rules.push(StatusRule::Code(c));
            }
        }
        Ok(StatusMatch::Any(rules))
    }

    /// True when `status` counts as success.
    pub fn accepts(&self, status: u16) -> bool {
        let StatusMatch::Any(rules) = self;
        rules.iter().any(|r| match *r {
            StatusRule::Class(c) => status / 100 == c,
            StatusRule::Code(c) => status == c,
        })
    }
}

/// Parses a `--url-file`: one request per line, `[WEIGHT] [METHOD] URL`;
/// blank lines and `#` comments are skipped.
pub fn parse_url_file(name: &str, text: &str) -> Result<Vec<RequestSpec>, HttpConfigError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let err = |why: &str| HttpConfigError::UrlFile { file: name.to_string(), line: i + 1, why: why.to_string() };
        let mut parts: Vec<&str> = line.split_whitespace().collect();
        let mut weight = 1u32;
        if let Ok(w) = parts[0].parse::<u32>() {
            if w == 0 {
                return Err(err("weight must be at least 1"));
            }
            weight = w;
            parts.remove(0);
        }
        let (method, url) = match parts.as_slice() {
            [url] => ("GET".to_string(), url.to_string()),
            [m, url] if m.chars().all(|c| c.is_ascii_uppercase()) => (m.to_string(), url.to_string()),
            _ => return Err(err("expected '[WEIGHT] [METHOD] URL'")),
        };
        out.push(RequestSpec { method, url, weight });
    }
    if out.is_empty() {
        return Err(HttpConfigError::UrlFile { file: name.to_string(), line: 0, why: "no URL in file".into() });
    }
    Ok(out)
}

/// One serialized request and its cumulative weight for weighted picking.
struct Prepared {
    bytes: Vec<u8>,
    head: bool,
    cumulative: u32,
}

/// Shared, immutable state of the driver.
struct Inner {
    addr: SocketAddr,
    tls: Option<(tokio_rustls::TlsConnector, rustls::pki_types::ServerName<'static>)>,
    prepared: Vec<Prepared>,
    total_weight: u32,
    keepalive: bool,
    timeout: Duration,
    connect_timeout: Duration,
    expect: StatusMatch,
    source_addrs: Vec<std::net::IpAddr>,
    next_source: std::sync::atomic::AtomicUsize,
}

/// Drives an HTTP/1.1 server: each client holds one keep-alive connection
/// (or opens one per request with `keepalive: false`).
#[derive(Clone)]
pub struct HttpDriver {
    inner: Arc<Inner>,
}

/// What the preflight request learned about the target.
#[derive(Debug)]
pub struct Preflight {
    pub status: u16,
    pub server: Option<String>,
    pub accepted: bool,
}

impl HttpDriver {
    /// Validates the configuration and resolves the host (once, before any load).
    pub fn new(config: &HttpConfig) -> Result<Self, HttpConfigError> {
        let first = config.requests.first().ok_or_else(|| HttpConfigError::Url { url: String::new(), why: "no URL given".into() })?;
        let base = parse_url(&first.url)?;
        let host = base.host_str().unwrap_or_default().to_string();
        let port = base.port_or_known_default().unwrap_or(80);
        let addr = {
            use std::net::ToSocketAddrs;
            (host.trim_start_matches('[').trim_end_matches(']'), port)
                .to_socket_addrs()
                .map_err(|_| HttpConfigError::Resolve(redact_url(&first.url)))?
                .next()
                .ok_or_else(|| HttpConfigError::Resolve(redact_url(&first.url)))?
        };
        let host_header = match base.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.clone(),
        };
        check_headers(&config.headers)?;
        let mut prepared = Vec::new();
        let mut cumulative = 0u32;
        for spec in &config.requests {
            check_method(&spec.method)?;
            let url = parse_url(&spec.url)?;
            if url.scheme() != base.scheme() || url.host_str() != base.host_str() || url.port_or_known_default() != Some(port) {
                return Err(HttpConfigError::MixedHosts(redact_url(&spec.url)));
            }
            cumulative += spec.weight;
            prepared.push(Prepared {
                bytes: serialize_request(&spec.method, &url, &host_header, config),
                head: spec.method.eq_ignore_ascii_case("HEAD"),
                cumulative,
            });
        }
        let tls = (base.scheme() == "https").then(|| {
            let name = rustls::pki_types::ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']').to_string())
                .unwrap_or_else(|_| rustls::pki_types::ServerName::try_from("localhost").expect("valid name"));
            (tls::connector(config.insecure), name)
        });
        Ok(HttpDriver {
            inner: Arc::new(Inner {
                addr,
                tls,
                prepared,
                total_weight: cumulative,
                keepalive: config.keepalive,
                timeout: config.timeout,
                connect_timeout: config.connect_timeout,
                expect: config.expect.clone(),
                source_addrs: config.source_addrs.clone(),
                next_source: std::sync::atomic::AtomicUsize::new(0),
            }),
        })
    }

    /// The resolved address load will go to.
    pub fn addr(&self) -> SocketAddr {
        self.inner.addr
    }

    /// Sends the first request once, before any load: proves the target
    /// answers and learns its `Server` header.
    pub fn preflight(&self) -> Result<Preflight, Failure> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
        rt.block_on(async {
            let mut conn = connect(&self.inner).await?;
            let p = &self.inner.prepared[0];
            let mut buf = Vec::new();
            let head = tokio::time::timeout(self.inner.timeout, async {
                conn.write_all(&p.bytes).await.map_err(|e| io_failure(&e))?;
                read_response(&mut conn, &mut buf, p.head, true).await.map_err(|e| read_failure(e, false))
            })
            .await
            .map_err(|_| Failure::new(ErrorClass::ReadTimeout, format!("no response within {:?}", self.inner.timeout)))??;
            Ok(Preflight { status: head.status, server: head.server, accepted: self.inner.expect.accepts(head.status) })
        })
    }
}

/// Refuses header names that are not one token and values holding CR or LF
/// (they would end the header, or the whole request head, early: header
/// injection). Called before anything is stored or sent.
pub fn check_headers(headers: &[(String, String)]) -> Result<(), HttpConfigError> {
    for (name, value) in headers {
        if name.is_empty() || name.contains(|c: char| c.is_whitespace() || c.is_control() || c == ':') {
            return Err(HttpConfigError::Header(name.escape_debug().to_string()));
        }
        if value.contains(['\r', '\n']) {
            return Err(HttpConfigError::HeaderValue(name.clone()));
        }
    }
    Ok(())
}

/// Refuses a method that is not one HTTP token (`-X 'GET / HTTP/1.1\r\n…'`
/// would inject a request line).
pub fn check_method(method: &str) -> Result<(), HttpConfigError> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if method.is_empty() || !method.chars().all(token) {
        return Err(HttpConfigError::Method(method.escape_debug().to_string()));
    }
    Ok(())
}

fn parse_url(text: &str) -> Result<Url, HttpConfigError> {
    let err = |why: String| HttpConfigError::Url { url: redact_url(text), why };
    let url = Url::parse(text).map_err(|e| err(e.to_string()))?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(err("scheme must be http or https".into()));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(err("no host".into()));
    }
    Ok(url)
}

/// `Authorization: Basic …` from the URL's `user:password@` (percent-decoded),
/// as curl sends it; None without credentials in the URL.
fn basic_auth(url: &Url) -> Option<String> {
    use base64::Engine as _;
    if url.username().is_empty() && url.password().is_none() {
        return None;
    }
    let decode = |s: &str| percent_encoding::percent_decode_str(s).collect::<Vec<u8>>();
    let mut pair = decode(url.username());
    pair.push(b':');
    pair.extend(decode(url.password().unwrap_or("")));
    Some(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair)))
}

fn serialize_request(method: &str, url: &Url, host: &str, config: &HttpConfig) -> Vec<u8> {
    let mut path = url.path().to_string();
    if let Some(q) = url.query() {
        path.push('?');
        path.push_str(q);
    }
    let mut s = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\n");
    let has = |n: &str| config.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(n));
    if !has("user-agent") {
        s.push_str(concat!("User-Agent: scalelab/", env!("CARGO_PKG_VERSION"), "\r\n"));
    }
    if !config.keepalive && !has("connection") {
        s.push_str("Connection: close\r\n");
    }
    // An Authorization header given with -H wins over the URL's credentials, as with curl.
    if let Some(auth) = basic_auth(url).filter(|_| !has("authorization")) {
        s.push_str(&format!("Authorization: {auth}\r\n"));
    }
    for (k, v) in &config.headers {
        s.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(body) = &config.body {
        if !has("content-length") {
            s.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
    }
    s.push_str("\r\n");
    let mut bytes = s.into_bytes();
    if let Some(body) = &config.body {
        bytes.extend_from_slice(body);
    }
    bytes
}

impl Driver for HttpDriver {
    type Client = HttpClient;

    fn client(&self, ctx: ClientCtx) -> HttpClient {
        let id = ctx.id;
        HttpClient {
            inner: self.inner.clone(),
            conn: None,
            buf: Vec::new(),
            rng: 0x9E37_79B9_7F4A_7C15 ^ (u64::from(id) + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9),
            opened: 0,
        }
    }
}

/// A plain or TLS connection.
enum Conn {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Conn {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => std::pin::Pin::new(s).poll_read(cx, buf),
            Conn::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, b: &[u8]) -> std::task::Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => std::pin::Pin::new(s).poll_write(cx, b),
            Conn::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_write(cx, b),
        }
    }
    fn poll_flush(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => std::pin::Pin::new(s).poll_flush(cx),
            Conn::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => std::pin::Pin::new(s).poll_shutdown(cx),
            Conn::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// A TCP connection to the target, from the next source address when some were given.
async fn tcp_connect(inner: &Inner) -> io::Result<TcpStream> {
    if inner.source_addrs.is_empty() {
        return TcpStream::connect(inner.addr).await;
    }
    let i = inner.next_source.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % inner.source_addrs.len();
    let source = SocketAddr::new(inner.source_addrs[i], 0);
    let socket = if source.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    // The port is chosen at connect time, per destination, not at bind
    // (IP_BIND_ADDRESS_NO_PORT), so one source address serves every
    // destination port range. Best effort: without it bind picks the port.
    if source.is_ipv4() {
        use std::os::fd::AsRawFd;
        let one: libc::c_int = 1;
        // SAFETY: setsockopt reads one c_int from a live local for this socket's fd.
        unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::IPPROTO_IP,
                libc::IP_BIND_ADDRESS_NO_PORT,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
    socket.bind(source)?;
    socket.connect(inner.addr).await
}

async fn connect(inner: &Inner) -> Result<Conn, Failure> {
    let tcp = match tokio::time::timeout(inner.connect_timeout, tcp_connect(inner)).await {
        Err(_) => return Err(Failure::new(ErrorClass::ConnectTimeout, format!("connect to {} timed out", inner.addr))),
        Ok(Err(e)) => {
            let class = match e.kind() {
                _ if crate::cpu::is_fd_limit(&e) => ErrorClass::FdLimit,
                io::ErrorKind::ConnectionRefused => ErrorClass::ConnectRefused,
                io::ErrorKind::TimedOut => ErrorClass::ConnectTimeout,
                _ => ErrorClass::Other,
            };
            return Err(Failure::new(class, format!("connect to {}: {e}", inner.addr)));
        }
        Ok(Ok(s)) => s,
    };
    let _ = tcp.set_nodelay(true);
    match &inner.tls {
        None => Ok(Conn::Plain(tcp)),
        Some((connector, name)) => {
            let s = tokio::time::timeout(inner.connect_timeout, connector.connect(name.clone(), tcp))
                .await
                .map_err(|_| Failure::new(ErrorClass::ConnectTimeout, "TLS handshake timed out"))?
                .map_err(|e| Failure::new(ErrorClass::Other, format!("TLS handshake: {e}")))?;
            Ok(Conn::Tls(Box::new(s)))
        }
    }
}

fn io_failure(e: &io::Error) -> Failure {
    let class = match e.kind() {
        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe | io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionAborted => {
            ErrorClass::Reset
        }
        io::ErrorKind::TimedOut => ErrorClass::ReadTimeout,
        _ => ErrorClass::Other,
    };
    Failure::new(class, e.to_string())
}

fn read_failure(e: ReadError, _reused: bool) -> Failure {
    match e {
        ReadError::ClosedBeforeResponse => Failure::new(ErrorClass::Reset, "connection closed before the response"),
        ReadError::Io(e) => io_failure(&e),
        ReadError::Protocol(m) => Failure::new(ErrorClass::Other, m),
    }
}

/// One virtual HTTP client.
pub struct HttpClient {
    inner: Arc<Inner>,
    conn: Option<Conn>,
    buf: Vec<u8>,
    rng: u64,
    opened: u64,
}

impl HttpClient {
    fn pick(&mut self) -> usize {
        let p = &self.inner.prepared;
        if p.len() == 1 {
            return 0;
        }
        // xorshift64*: cheap and good enough to spread weights.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = (self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) % u64::from(self.inner.total_weight)) as u32;
        p.iter().position(|x| r < x.cumulative).unwrap_or(0)
    }

    async fn open(&mut self) -> Result<(), Failure> {
        self.conn = Some(connect(&self.inner).await?);
        self.opened += 1;
        Ok(())
    }

    /// One attempt on the current (or a new) connection.
    async fn attempt(&mut self, idx: usize) -> Result<ResponseHead, (Failure, bool)> {
        let reused = self.conn.is_some();
        if !reused {
            self.open().await.map_err(|f| (f, false))?;
        }
        let inner = self.inner.clone();
        let p = &inner.prepared[idx];
        let conn = self.conn.as_mut().expect("connection just opened");
        if let Err(e) = conn.write_all(&p.bytes).await {
            self.conn = None;
            return Err((io_failure(&e), reused));
        }
        match read_response(conn, &mut self.buf, p.head, false).await {
            Ok(h) => {
                if h.close || !inner.keepalive {
                    self.conn = None;
                }
                Ok(h)
            }
            Err(e) => {
                self.conn = None;
                let stale = reused && matches!(e, ReadError::ClosedBeforeResponse);
                Err((read_failure(e, reused), stale))
            }
        }
    }
}

impl Client for HttpClient {
    async fn connect(&mut self) -> Result<(), Failure> {
        if self.inner.keepalive {
            self.open().await
        } else {
            // Without keep-alive every request opens its own connection.
            Ok(())
        }
    }

    async fn call(&mut self) -> Result<u32, Failure> {
        let idx = self.pick();
        let timeout = self.inner.timeout;
        let result = tokio::time::timeout(timeout, async {
            match self.attempt(idx).await {
                Ok(h) => Ok(h),
                // A reused keep-alive connection the server had already closed:
                // retry once on a fresh one, as browsers and wrk do.
                Err((_, true)) => self.attempt(idx).await.map_err(|(f, _)| f),
                Err((f, false)) => Err(f),
            }
        })
        .await;
        let head = match result {
            Ok(r) => r?,
            Err(_) => {
                self.conn = None;
                return Err(Failure::new(ErrorClass::ReadTimeout, format!("no complete response within {timeout:?}")));
            }
        };
        if self.inner.expect.accepts(head.status) {
            Ok(1)
        } else {
            let class = match head.status {
                500..=599 => ErrorClass::Http5xx,
                400..=499 => ErrorClass::Http4xx,
                _ => ErrorClass::Other,
            };
            Err(Failure::new(class, format!("HTTP status {}", head.status)))
        }
    }

    fn reconnects(&self) -> u64 {
        self.opened.saturating_sub(1)
    }
}
