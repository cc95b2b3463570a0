//! One HTTP/2 connection: TCP (from a source address when given), TLS
//! offering only h2 by ALPN or cleartext by prior knowledge, the preface
//! and SETTINGS (`h2`'s handshake), its frames read and written by a task
//! of the worker thread's runtime; one request on it, and its errors by
//! class. Also the ALPN question `--http auto` asks an `https://` server.

use super::Inner;
use crate::http::{connect_failure, tcp_connect_from, HttpConfig};
use bytes::Bytes;
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};

/// One request of the mix, ready to send.
pub(crate) struct Prepared {
    method: http::Method,
    pub(super) uri: http::Uri,
    /// `Authorization: Basic …` from the URL's credentials (None: none, or
    /// an `Authorization` header given, which wins as with curl).
    pub(super) auth: Option<http::HeaderValue>,
    pub(super) cumulative: u32,
}

impl Prepared {
    /// The request for `url`: its `:authority` is the `Host` header when
    /// one was given (as curl does), else the URL's host and port.
    pub(super) fn new(
        method: &str,
        url: &url::Url,
        host: Option<&str>,
        auth_given: bool,
        cumulative: u32,
    ) -> Result<Prepared, crate::http::HttpConfigError> {
        let bad = |why: String| crate::http::HttpConfigError::Url { url: scalelab_core::redact_url(url.as_str()), why };
        let authority = match (host, url.port()) {
            (Some(h), _) => h.to_string(),
            (None, Some(p)) => format!("{}:{p}", url.host_str().unwrap_or_default()),
            (None, None) => url.host_str().unwrap_or_default().to_string(),
        };
        let mut path = url.path().to_string();
        if let Some(q) = url.query() {
            path.push('?');
            path.push_str(q);
        }
        let uri = http::Uri::builder()
            .scheme(url.scheme())
            .authority(authority.as_str())
            .path_and_query(path.as_str())
            .build()
            .map_err(|e| bad(e.to_string()))?;
        let method = http::Method::from_bytes(method.as_bytes()).map_err(|e| bad(format!("method {method}: {e}")))?;
        let auth = match crate::http::basic_auth(url).filter(|_| !auth_given) {
            Some(a) => Some(http::HeaderValue::from_str(&a).map_err(|e| bad(e.to_string()))?),
            None => None,
        };
        Ok(Prepared { method, uri, auth, cumulative })
    }
}

/// An open connection: its request handle and whether it can take more.
pub(crate) struct Conn {
    pub(crate) send: h2::client::SendRequest<Bytes>,
    /// Set by the connection's task when it ends (closed, lost, failed).
    closed: Arc<AtomicBool>,
    /// Set when a request found it unusable (GOAWAY received, closed).
    retired: Cell<bool>,
}

impl Conn {
    /// True while new requests may go on it.
    pub(super) fn usable(&self) -> bool {
        !self.retired.get() && !self.closed.load(Ordering::Relaxed)
    }

    /// No new request goes on it; the next one opens another connection.
    pub(super) fn retire(&self) {
        self.retired.set(true);
    }
}

/// Why an https:// server cannot be loaded with HTTP/2.
const NO_H2: &str = "the server did not choose HTTP/2 (ALPN h2) over TLS: give --http 1.1 (or auto) for this server";

/// Opens a connection: TCP, TLS with ALPN h2 when https, the HTTP/2 preface.
pub(crate) async fn open(inner: &Inner) -> Result<Conn, Failure> {
    let source = (!inner.source_addrs.is_empty()).then(|| {
        let i = inner.next_source.fetch_add(1, Ordering::Relaxed) % inner.source_addrs.len();
        inner.source_addrs[i]
    });
    let tcp = match tokio::time::timeout(inner.connect_timeout, tcp_connect_from(inner.addr, source)).await {
        Err(_) => return Err(connect_failure(inner.addr, None)),
        Ok(Err(e)) => return Err(connect_failure(inner.addr, Some(&e))),
        Ok(Ok(s)) => s,
    };
    let _ = tcp.set_nodelay(true);
    let handshake = async {
        match &inner.tls {
            None => start(tcp).await,
            Some((connector, name)) => {
                let s = connector.connect(name.clone(), tcp).await.map_err(|e| {
                    // A server without h2 may end the handshake rather than choose http/1.1.
                    let tls = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
                    if matches!(tls, Some(rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol))) {
                        Failure::new(ErrorClass::Other, NO_H2)
                    } else {
                        Failure::new(ErrorClass::Other, format!("TLS handshake: {e}"))
                    }
                })?;
                if s.get_ref().1.alpn_protocol() != Some(b"h2") {
                    return Err(Failure::new(ErrorClass::Other, NO_H2));
                }
                start(s).await
            }
        }
    };
    tokio::time::timeout(inner.connect_timeout, handshake)
        .await
        .map_err(|_| Failure::new(ErrorClass::ConnectTimeout, "HTTP/2 handshake timed out"))?
}

/// The HTTP/2 handshake on `io`, its frames then driven by a task of this
/// thread's runtime (not of a `LocalSet`: the engine connects in one and
/// loads in another).
async fn start<T: AsyncRead + AsyncWrite + Unpin + Send + 'static>(io: T) -> Result<Conn, Failure> {
    let mut builder = h2::client::Builder::new();
    // Responses are read as they come: a window of 1 MiB per stream and
    // room for many streams on the connection, so the server's sending is
    // never held up by the client's window.
    builder.initial_window_size(1 << 20).initial_connection_window_size(1 << 24);
    let (send, connection) = builder.handshake::<_, Bytes>(io).await.map_err(|e| h2_failure(&e))?;
    let closed = Arc::new(AtomicBool::new(false));
    let done = closed.clone();
    tokio::spawn(async move {
        let _ = connection.await;
        done.store(true, Ordering::Relaxed);
    });
    Ok(Conn { send, closed, retired: Cell::new(false) })
}

/// What a request's response said.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) server: Option<String>,
}

/// How a request failed.
pub(crate) enum Attempt {
    /// Before it went out: the connection was closed or going away (the
    /// request may go on another).
    NotSent(Failure),
    /// After it went out: a failed request.
    Failed(Failure),
}

impl Attempt {
    /// The failure, whenever it happened.
    pub(super) fn failure(self) -> Failure {
        match self {
            Attempt::NotSent(f) | Attempt::Failed(f) => f,
        }
    }
}

/// One request on a connection: its status and `server` header once the
/// whole response has arrived; the time its body waited for the server's
/// send window is added to `flow_wait`.
pub(crate) async fn request(
    inner: &Inner,
    send: &h2::client::SendRequest<Bytes>,
    p: &Prepared,
    flow_wait: &mut std::time::Duration,
) -> Result<Answer, Attempt> {
    let mut send = send.clone().ready().await.map_err(|e| Attempt::NotSent(h2_failure(&e)))?;
    let mut req = http::Request::builder().method(p.method.clone()).uri(p.uri.clone());
    for (k, v) in &inner.headers {
        req = req.header(k, v);
    }
    if let Some(auth) = &p.auth {
        req = req.header(http::header::AUTHORIZATION, auth);
    }
    let req = req.body(()).map_err(|e| Attempt::NotSent(Failure::new(ErrorClass::Other, e.to_string())))?;
    let (response, mut stream) = send.send_request(req, inner.body.is_none()).map_err(|e| Attempt::NotSent(h2_failure(&e)))?;
    // A server may answer (and end the stream) before it reads the whole
    // body: the response decides, and a stream that failed fails it too.
    if let Some(body) = &inner.body {
        let _ = send_body(&mut stream, body.clone(), flow_wait).await;
    }
    let response = response.await.map_err(|e| Attempt::Failed(h2_failure(&e)))?;
    let status = response.status().as_u16();
    let server = response.headers().get(http::header::SERVER).and_then(|v| v.to_str().ok()).map(str::to_string);
    let mut body = response.into_body();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(|e| Attempt::Failed(h2_failure(&e)))?;
        // Read is read: the window reopens at once, as a browser's does.
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    Ok(Answer { status, server })
}

/// Sends a request body as the server's window allows (HTTP/2 flow
/// control: the stream's and the connection's send windows), adding the
/// time spent waiting for window to `wait`. Ends early, without error,
/// when the stream closes first (the server answered without reading it).
async fn send_body(stream: &mut h2::SendStream<Bytes>, mut body: Bytes, wait: &mut std::time::Duration) -> Result<(), h2::Error> {
    while !body.is_empty() {
        stream.reserve_capacity(body.len());
        let mut room = stream.capacity();
        if room == 0 {
            let t0 = std::time::Instant::now();
            room = match std::future::poll_fn(|cx| stream.poll_capacity(cx)).await {
                Some(r) => r?,
                None => return Ok(()),
            };
            *wait += t0.elapsed();
        }
        if room > 0 {
            let chunk = body.split_to(room.min(body.len()));
            stream.send_data(chunk, body.is_empty())?;
        }
    }
    Ok(())
}

/// An h2 error code as the RFC names it, and its number: `REFUSED_STREAM (0x7)`.
fn code(reason: h2::Reason) -> String {
    format!("{reason:?} (0x{:x})", u32::from(reason))
}

/// An HTTP/2 error by class: the connection lost (`reset`), the request's
/// stream reset by the server (`stream_reset`, with its code), the request
/// left unprocessed by the server's GOAWAY (`goaway`, with its code), or a
/// protocol error (`other`).
pub(crate) fn h2_failure(e: &h2::Error) -> Failure {
    if let Some(io) = e.get_io() {
        let class = match io.kind() {
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::UnexpectedEof => ErrorClass::Reset,
            _ => ErrorClass::Other,
        };
        return Failure::new(class, format!("HTTP/2 connection: {io}"));
    }
    match e.reason() {
        Some(reason) if e.is_go_away() && e.is_remote() => {
            Failure::new(ErrorClass::GoAway, format!("GOAWAY from the server ({}): the request was not processed", code(reason)))
        }
        Some(reason) if e.is_reset() && e.is_remote() => {
            Failure::new(ErrorClass::StreamReset, format!("stream reset by the server: {}", code(reason)))
        }
        _ => Failure::new(ErrorClass::Other, format!("HTTP/2: {e}")),
    }
}

/// Whether the `https://` server of `config`'s first URL chooses HTTP/2
/// when offered both h2 and http/1.1 by ALPN (`--http auto`): one TLS
/// handshake, no request. `http://` has no offer to read: false.
pub fn server_offers_h2(config: &HttpConfig) -> Result<bool, Failure> {
    let first = config.requests.first().ok_or_else(|| Failure::new(ErrorClass::Other, "no URL given"))?;
    let url = crate::http::parse_url(&first.url).map_err(|e| Failure::new(ErrorClass::Other, e.to_string()))?;
    if url.scheme() != "https" {
        return Ok(false);
    }
    let host = url.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_string();
    let port = url.port_or_known_default().unwrap_or(443);
    let addr = {
        use std::net::ToSocketAddrs;
        (host.as_str(), port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| Failure::new(ErrorClass::Other, format!("cannot resolve {host}")))?
    };
    let name = rustls::pki_types::ServerName::try_from(host)
        .unwrap_or_else(|_| rustls::pki_types::ServerName::try_from("localhost").expect("valid name"));
    let mut tls = (*scalelab_wire::tls::config(config.insecure)).clone();
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(tls));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    rt.block_on(async {
        let work = async {
            let source = config.source_addrs.first().copied();
            let tcp = tcp_connect_from(addr, source).await.map_err(|e| connect_failure(addr, Some(&e)))?;
            let s = connector.connect(name, tcp).await.map_err(|e| Failure::new(ErrorClass::Other, format!("TLS handshake: {e}")))?;
            Ok(s.get_ref().1.alpn_protocol() == Some(b"h2"))
        };
        tokio::time::timeout(config.connect_timeout, work).await.map_err(|_| connect_failure(addr, None))?
    })
}
