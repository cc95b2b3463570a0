//! The scrape endpoint of `--metrics-listen`: HTTP/1.1 on the address the
//! user gave, answering GET (and HEAD) of one path with the exposition of
//! that moment, 405 for any other method there and 404 elsewhere. It runs on
//! a thread of its own, so a slow scraper never touches the load.

use crate::model::Exposition;
use crate::text;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{ACCEPT, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::{watch, Semaphore};

/// What the endpoint serves: called once per scrape, on the endpoint's thread.
pub type Source = Arc<dyn Fn() -> Exposition + Send + Sync>;

/// Connections served at once; more wait to be accepted.
const MAX_CONNECTIONS: usize = 16;
/// A client that has not sent its request head by then is dropped.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// A running endpoint; stopped by [`Endpoint::stop`] or on drop.
pub struct Endpoint {
    addr: SocketAddr,
    scrapes: Arc<AtomicU64>,
    stop: watch::Sender<bool>,
    handle: Option<JoinHandle<()>>,
}

impl Endpoint {
    /// Binds `listen` at once (so "address in use" is the caller's error,
    /// before any load) and serves `path` from `source` until stopped.
    pub fn start(listen: SocketAddr, path: &str, source: Source) -> Result<Endpoint, String> {
        let listener = std::net::TcpListener::bind(listen).map_err(|e| format!("cannot listen on {listen}: {e}"))?;
        listener.set_nonblocking(true).map_err(|e| format!("{listen}: {e}"))?;
        let addr = listener.local_addr().map_err(|e| format!("{listen}: {e}"))?;
        let scrapes = Arc::new(AtomicU64::new(0));
        let (stop, stopped) = watch::channel(false);
        let (path, counted) = (path.to_string(), scrapes.clone());
        let handle = std::thread::Builder::new()
            .name("scalelab-metrics".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(rt) => rt,
                    Err(_) => return,
                };
                rt.block_on(serve(listener, path, source, counted, stopped));
            })
            .map_err(|e| format!("cannot start the metrics thread: {e}"))?;
        Ok(Endpoint { addr, scrapes, stop, handle: Some(handle) })
    }

    /// The address it listens on (the port chosen when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Successful scrapes of the metrics path so far.
    pub fn scrapes(&self) -> u64 {
        self.scrapes.load(Ordering::Relaxed)
    }

    /// Stops listening and waits for the thread (connections in progress are cut).
    pub fn stop(mut self) {
        self.shut();
    }

    fn shut(&mut self) {
        let _ = self.stop.send(true);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.shut();
    }
}

async fn serve(listener: std::net::TcpListener, path: String, source: Source, scrapes: Arc<AtomicU64>, mut stopped: watch::Receiver<bool>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let path: Arc<str> = path.into();
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else { return };
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(s) => s,
                // EMFILE and the like: wait a little, never spin.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = stopped.changed() => return,
        };
        let (path, source, scrapes, mut stop_conn) = (path.clone(), source.clone(), scrapes.clone(), stopped.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let service = hyper::service::service_fn(move |req| {
                let answer = answer(&req, &path, &source, &scrapes);
                async move { Ok::<_, std::convert::Infallible>(answer) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                _ = conn => {}
                _ = stop_conn.changed() => {}
            }
        });
    }
}

fn answer(req: &Request<Incoming>, path: &str, source: &Source, scrapes: &AtomicU64) -> Response<Full<Bytes>> {
    let plain = |status: StatusCode, body: &'static str| {
        let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
        *r.status_mut() = status;
        r.headers_mut().insert(CONTENT_TYPE, hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"));
        r
    };
    if req.uri().path() != path {
        return plain(StatusCode::NOT_FOUND, "not found: scalelab serves its metrics only\n");
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "only GET\n");
        r.headers_mut().insert(ALLOW, hyper::header::HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let accept = req.headers().get(ACCEPT).and_then(|v| v.to_str().ok());
    let (content_type, body) = text::negotiate(accept, &source());
    scrapes.fetch_add(1, Ordering::Relaxed);
    let body = if req.method() == Method::HEAD { Bytes::new() } else { Bytes::from(body) };
    let mut r = Response::new(Full::new(body));
    r.headers_mut().insert(CONTENT_TYPE, hyper::header::HeaderValue::from_static(content_type));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Family, Kind};
    use std::io::{Read, Write};

    fn request(addr: SocketAddr, head: &str) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(head.as_bytes()).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    #[test]
    fn serves_its_path_to_get_only_in_the_format_asked_for() {
        let source: Source = Arc::new(|| {
            let mut e = Exposition::default();
            let mut f = Family::new("scalelab_requests", Kind::Counter, None, "Requests.");
            f.add(&[], Some(3.0));
            e.push(f);
            e
        });
        let ep = Endpoint::start("127.0.0.1:0".parse().unwrap(), "/metrics", source).unwrap();
        let addr = ep.local_addr();
        let close = "Connection: close\r\n\r\n";
        let om =
            request(addr, &format!("GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text; version=1.0.0\r\n{close}"));
        assert!(
            om.starts_with("HTTP/1.1 200") && om.contains(text::OPENMETRICS) && om.ends_with("scalelab_requests_total 3\n# EOF\n"),
            "{om}"
        );
        let prom = request(addr, &format!("GET /metrics HTTP/1.1\r\nHost: x\r\n{close}"));
        assert!(prom.contains(text::PROMETHEUS) && prom.contains("# TYPE scalelab_requests_total counter"), "{prom}");
        let post = request(addr, &format!("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n{close}"));
        assert!(post.starts_with("HTTP/1.1 405") && post.to_ascii_lowercase().contains("allow: get, head"), "{post}");
        let other = request(addr, &format!("GET /etc/passwd HTTP/1.1\r\nHost: x\r\n{close}"));
        assert!(other.starts_with("HTTP/1.1 404"), "{other}");
        assert_eq!(ep.scrapes(), 2, "only the two GETs of the path are scrapes");
        // A second endpoint on the same address is the caller's error, at once.
        let taken = Endpoint::start(addr, "/metrics", Arc::new(Exposition::default)).err().unwrap();
        assert!(taken.starts_with(&format!("cannot listen on {addr}")), "{taken}");
        ep.stop();
        assert!(std::net::TcpStream::connect(addr).is_err(), "stopped: nothing listens");
    }
}
