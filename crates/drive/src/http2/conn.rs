//! One HTTP/2 connection: TCP (from a source address when given), TLS
//! offering only h2 by ALPN or cleartext by prior knowledge, the preface
//! and SETTINGS; one request on it, and its errors by class. Also the
//! ALPN question `--http auto` asks an `https://` server.
//!
//! The connection has no task of its own: the clients that share it
//! (one worker thread's, `Rc`) drive it from their own polls. A client
//! waiting for its response writes what is queued and reads what has
//! come, handing each finished response to its stream and waking that
//! stream's client. The socket remembers one waker per direction, the
//! last poller's; when that client leaves, it wakes another waiting one
//! to take its place, so a response that arrives is always read. With
//! the `h2` crate each response crossed from the connection's task to
//! the client's; on one connection of one stream that cost 1.46x
//! h2load's CPU per request (bench/notes/h2-vs-h2load.md).

use super::frame;
use super::state::{goaway, Io, Small, State, Stream, CONN_WINDOW, READ_BUFFER, STREAM_WINDOW};
use super::Inner;
use crate::http::{connect_failure, tcp_connect_from, HttpConfig};
use bytes::Bytes;
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::cell::{Cell, RefCell};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// One request of the mix, ready to send: its header block HPACK-encoded
/// once, sent as is on every connection.
pub(crate) struct Prepared {
    method: String,
    pub(super) uri: http::Uri,
    /// `Authorization: Basic …` from the URL's credentials (None: none, or
    /// an `Authorization` header given, which wins as with curl).
    pub(super) auth: Option<String>,
    pub(super) cumulative: u32,
    block: Vec<u8>,
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
        http::Method::from_bytes(method.as_bytes()).map_err(|e| bad(format!("method {method}: {e}")))?;
        let auth = crate::http::basic_auth(url).filter(|_| !auth_given);
        if let Some(a) = &auth {
            http::HeaderValue::from_str(a).map_err(|e| bad(e.to_string()))?;
        }
        Ok(Prepared { method: method.to_string(), uri, auth, cumulative, block: Vec::new() })
    }

    /// Encodes the header block: the pseudo-headers, then `headers` (every
    /// request's), then the URL's credentials.
    pub(super) fn encode(&mut self, headers: &[(http::HeaderName, http::HeaderValue)]) {
        let mut b = Vec::new();
        frame::put_field(&mut b, ":method", self.method.as_bytes());
        frame::put_field(&mut b, ":scheme", self.uri.scheme_str().unwrap_or("http").as_bytes());
        frame::put_field(&mut b, ":authority", self.uri.authority().map_or("", |a| a.as_str()).as_bytes());
        frame::put_field(&mut b, ":path", self.uri.path_and_query().map_or("/", |p| p.as_str()).as_bytes());
        for (k, v) in headers {
            frame::put_field(&mut b, k.as_str(), v.as_bytes());
        }
        if let Some(a) = &self.auth {
            frame::put_field(&mut b, "authorization", a.as_bytes());
        }
        self.block = b;
    }

    /// The header block decoded: what the server reads.
    #[cfg(test)]
    pub(super) fn fields(&self) -> Vec<(String, String)> {
        let decoded = loona_hpack::Decoder::new().decode(&self.block).expect("the client's own block decodes");
        decoded.into_iter().map(|(k, v)| (String::from_utf8_lossy(&k).into_owned(), String::from_utf8_lossy(&v).into_owned())).collect()
    }
}

/// An open connection, shared by the clients of one worker thread.
pub(crate) struct Conn {
    state: RefCell<State>,
    /// Set when a request found it unusable (GOAWAY received, closed).
    retired: Cell<bool>,
    /// Numbers the requests on it (a request's token names its waker).
    tokens: Cell<u64>,
}

impl Conn {
    /// True while new requests may go on it.
    pub(super) fn usable(&self) -> bool {
        let s = self.state.borrow();
        !self.retired.get() && s.dead.is_none() && s.goaway.is_none()
    }

    /// No new request goes on it; the next one opens another connection.
    pub(super) fn retire(&self) {
        self.retired.set(true);
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (None: it set none).
    pub(super) fn max_streams(&self) -> Option<u32> {
        self.state.borrow().max_streams
    }

    /// Responses on it keep their `server` header from now on.
    pub(super) fn want_server(&self) {
        self.state.borrow_mut().hpack.want_server = true;
    }

    fn token(&self) -> u64 {
        let t = self.tokens.get();
        self.tokens.set(t + 1);
        t
    }

    /// Opens a stream for `p` once the server's limit has room: its HEADERS
    /// (and body, as the windows allow) queued, and written unless other
    /// streams are open on the connection (`Opened::deferred`).
    fn poll_open(&self, cx: &mut Context<'_>, token: u64, p: &Prepared, body: Option<&Bytes>) -> Poll<Result<Opened, Failure>> {
        let mut s = self.state.borrow_mut();
        s.drive(cx, token);
        if let Some(f) = &s.dead {
            return Poll::Ready(Err(f.clone()));
        }
        if let Some((_, code)) = s.goaway {
            return Poll::Ready(Err(goaway(code)));
        }
        if s.max_streams.is_some_and(|m| s.streams.len() >= m as usize) {
            s.waiting.insert(token, cx.waker().clone());
            if !s.slot_waiters.contains(&token) {
                s.slot_waiters.push(token);
            }
            return Poll::Pending;
        }
        s.slot_waiters.retain(|t| *t != token);
        let id = s.next_id;
        if id > frame::MAX_WINDOW as u32 {
            self.retired.set(true);
            return Poll::Ready(Err(Failure::new(ErrorClass::Other, "HTTP/2: the connection ran out of stream ids")));
        }
        s.next_id += 2;
        s.put_headers(id, &p.block, body.is_none());
        let send_window = s.peer_window;
        s.streams.insert(
            id,
            Stream {
                token,
                status: None,
                server: None,
                end: false,
                failed: None,
                body: body.cloned(),
                send_window,
                unacked: 0,
                blocked_since: None,
                flow_wait: Duration::ZERO,
            },
        );
        if body.is_some() {
            s.bodies += 1;
        }
        s.send_bodies();
        // With other streams open, their clients are likely woken by the
        // same read and about to open theirs: the first of them to poll
        // again writes every queued HEADERS in one send, as h2load does
        // with its writev (+1-3 % throughput over TLS at 10x10, within the
        // noise on h2c: bench/notes/h2-vs-h2load.md).
        let deferred = s.streams.len() > 1;
        if !deferred {
            s.flush(cx, token);
        }
        Poll::Ready(Ok(Opened { id, deferred }))
    }

    /// The response of stream `id`, once it has ended or failed.
    fn poll_response(&self, cx: &mut Context<'_>, token: u64, id: u32) -> Poll<Result<(Answer, Duration), Failure>> {
        let mut s = self.state.borrow_mut();
        s.drive(cx, token);
        let finished = s.streams.get(&id).is_none_or(|st| st.end || st.failed.is_some());
        if !finished {
            s.waiting.insert(token, cx.waker().clone());
            return Poll::Pending;
        }
        let Some(st) = s.close(id) else {
            return Poll::Ready(Err(Failure::new(ErrorClass::Other, "HTTP/2: the stream was lost")));
        };
        let waited = st.flow_wait + st.blocked_since.map_or(Duration::ZERO, |t| t.elapsed());
        Poll::Ready(match (st.end, st.failed, st.status) {
            (true, _, Some(status)) => Ok((Answer { status, server: st.server }, waited)),
            (_, Some(f), _) => Err(f),
            _ => Err(Failure::new(ErrorClass::Other, "HTTP/2: a response without a :status")),
        })
    }

    /// A request is done with the connection (answered, failed, or given
    /// up by its timeout): its stream, if still open, is cancelled, and if
    /// the socket held its waker another waiting request takes over.
    fn leave(&self, token: u64, id: Option<u32>) {
        let mut s = self.state.borrow_mut();
        if let Some(id) = id {
            if s.close(id).is_some_and(|st| !st.end && st.failed.is_none()) && s.dead.is_none() {
                frame::put_rst_stream(&mut s.wbuf, id, frame::CANCEL);
            }
        }
        s.waiting.remove(&token);
        s.slot_waiters.retain(|t| *t != token);
        let held = s.reader == Some(token) || s.writer == Some(token);
        if s.reader == Some(token) {
            s.reader = None;
        }
        if s.writer == Some(token) {
            s.writer = None;
        }
        if held {
            if let Some(w) = s.waiting.values().next() {
                w.wake_by_ref();
            }
        }
    }
}

/// Why an https:// server cannot be loaded with HTTP/2.
const NO_H2: &str = "the server did not choose HTTP/2 (ALPN h2) over TLS: give --http 1.1 (or auto) for this server";

/// Opens a connection: TCP, TLS with ALPN h2 when https, the preface.
pub(crate) async fn open(inner: &Inner) -> Result<Conn, Failure> {
    let source = (!inner.source_addrs.is_empty()).then(|| {
        let i = inner.next_source.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % inner.source_addrs.len();
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
            None => start(Box::pin(tcp)).await,
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
                start(Box::pin(s)).await
            }
        }
    };
    tokio::time::timeout(inner.connect_timeout, handshake)
        .await
        .map_err(|_| Failure::new(ErrorClass::ConnectTimeout, "HTTP/2 handshake timed out"))?
}

/// Writes the preface: the magic, SETTINGS (no header table, no push, this
/// client's stream window) and the connection's window raised. The server's SETTINGS are
/// read with its first response.
async fn start(mut io: Pin<Box<dyn Io>>) -> Result<Conn, Failure> {
    let mut preface = frame::PREFACE.to_vec();
    // A header table of 0 bytes: the server keeps none for this client
    // (see `hpack`).
    let settings =
        [(frame::SETTINGS_HEADER_TABLE_SIZE, 0), (frame::SETTINGS_ENABLE_PUSH, 0), (frame::SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW)];
    frame::put_settings(&mut preface, &settings);
    frame::put_window_update(&mut preface, 0, CONN_WINDOW - frame::DEFAULT_WINDOW as u32);
    io.write_all(&preface).await.map_err(|e| Failure::new(ErrorClass::Reset, format!("HTTP/2 connection: {e}")))?;
    io.flush().await.map_err(|e| Failure::new(ErrorClass::Reset, format!("HTTP/2 connection: {e}")))?;
    Ok(Conn {
        state: RefCell::new(State {
            io,
            rbuf: vec![0; READ_BUFFER],
            rstart: 0,
            rend: 0,
            wbuf: Vec::with_capacity(4096),
            wpos: 0,
            hpack: super::hpack::Reader::default(),
            streams: Small::new(),
            next_id: 1,
            max_streams: None,
            peer_window: frame::DEFAULT_WINDOW,
            peer_max_frame: frame::DEFAULT_MAX_FRAME,
            settings_seen: false,
            send_window: frame::DEFAULT_WINDOW,
            unacked: 0,
            bodies: 0,
            block: None,
            goaway: None,
            dead: None,
            waiting: Small::new(),
            slot_waiters: Vec::new(),
            reader: None,
            writer: None,
        }),
        retired: Cell::new(false),
        tokens: Cell::new(0),
    })
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

/// A stream opened: its id, and whether its HEADERS wait in the write
/// buffer for the connection's next flush.
struct Opened {
    id: u32,
    deferred: bool,
}

/// A request's hold on its connection, let go however the request ends
/// (its future dropped by a timeout included).
struct Hold<'a> {
    conn: &'a Conn,
    token: u64,
    stream: Option<u32>,
}

impl Drop for Hold<'_> {
    fn drop(&mut self) {
        self.conn.leave(self.token, self.stream);
    }
}

/// One request on a connection: its status and `server` header once the
/// whole response has arrived; the time its body waited for the server's
/// send window is added to `flow_wait`.
pub(crate) async fn request(inner: &Inner, conn: &Conn, p: &Prepared, flow_wait: &mut Duration) -> Result<Answer, Attempt> {
    let mut hold = Hold { conn, token: conn.token(), stream: None };
    let token = hold.token;
    let Opened { id, deferred } =
        std::future::poll_fn(|cx| conn.poll_open(cx, token, p, inner.body.as_ref())).await.map_err(Attempt::NotSent)?;
    hold.stream = Some(id);
    if deferred {
        // To the back of the worker's queue, behind the clients woken with
        // this one; the response's first poll then writes what they queued.
        // A wake of its own, not `tokio::task::yield_now`, which defers the
        // wake until the runtime has next polled its I/O driver.
        let mut yielded = false;
        std::future::poll_fn(|cx| {
            if std::mem::replace(&mut yielded, true) {
                return Poll::Ready(());
            }
            cx.waker().wake_by_ref();
            Poll::Pending
        })
        .await;
    }
    let (answer, waited) = std::future::poll_fn(|cx| conn.poll_response(cx, token, id)).await.map_err(Attempt::Failed)?;
    *flow_wait += waited;
    Ok(answer)
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
