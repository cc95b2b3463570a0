//! The HTTP/1.1 driver (http:// and https://).
//!
//! Hand-written on tokio + httparse rather than hyper: the reference figures
//! measured on this machine class put a hyper-based client (oha 1.16) at
//! 1.33-1.36x wrk's client CPU per request, and scalelab's target is to cost
//! no more than wrk. Requests are serialized once; a client does one write and
//! reads the response into a reused buffer.

mod config;
mod response;
pub(crate) mod tls;

use config::serialize_request;
pub(crate) use config::{basic_auth, parse_url};
pub use config::{
    check_headers, check_method, check_request_headers, parse_url_file, HttpConfig, HttpConfigError, RequestSpec, StatusMatch, StatusRule,
};
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
        check_request_headers(&config.headers, config.body.as_deref())?;
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
            connect_times: Vec::new(),
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
    let source = (!inner.source_addrs.is_empty()).then(|| {
        let i = inner.next_source.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % inner.source_addrs.len();
        inner.source_addrs[i]
    });
    tcp_connect_from(inner.addr, source).await
}

/// A TCP connection to `addr` from `source` (None: the kernel's choice of
/// address); shared with the HTTP/2 driver.
pub(crate) async fn tcp_connect_from(addr: SocketAddr, source: Option<std::net::IpAddr>) -> io::Result<TcpStream> {
    let Some(source) = source else { return TcpStream::connect(addr).await };
    let source = SocketAddr::new(source, 0);
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
    socket.connect(addr).await
}

/// A TCP connect that failed or timed out (`None`), by class.
pub(crate) fn connect_failure(addr: SocketAddr, e: Option<&io::Error>) -> Failure {
    let Some(e) = e else { return Failure::new(ErrorClass::ConnectTimeout, format!("connect to {addr} timed out")) };
    let class = match e.kind() {
        _ if crate::cpu::is_fd_limit(e) => ErrorClass::FdLimit,
        io::ErrorKind::ConnectionRefused => ErrorClass::ConnectRefused,
        io::ErrorKind::TimedOut => ErrorClass::ConnectTimeout,
        _ => ErrorClass::Other,
    };
    Failure::new(class, format!("connect to {addr}: {e}"))
}

async fn connect(inner: &Inner) -> Result<Conn, Failure> {
    let tcp = match tokio::time::timeout(inner.connect_timeout, tcp_connect(inner)).await {
        Err(_) => return Err(connect_failure(inner.addr, None)),
        Ok(Err(e)) => return Err(connect_failure(inner.addr, Some(&e))),
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
    /// Connect times of the connections opened by the current call.
    connect_times: Vec<Duration>,
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
        let t0 = std::time::Instant::now();
        self.conn = Some(connect(&self.inner).await?);
        self.connect_times.push(t0.elapsed());
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
            // Timed by the engine as the step's connect_ms, not as a window connect.
            let r = self.open().await;
            self.connect_times.clear();
            r
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

    fn connect_times(&mut self) -> Option<&mut Vec<Duration>> {
        Some(&mut self.connect_times)
    }
}
