//! The HTTP/2 driver against a small h2 server of the test's own (the
//! `h2` crate's server side, on 127.0.0.1:0): how clients share
//! connections, and what the server's SETTINGS say. Real servers (nginx,
//! h2c and TLS) are swept in crates/cli/tests/http2.rs.

use super::*;
use crate::engine::{run_step, EngineOptions};
use scalelab_core::StepPlan;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the test server did, counted as it served.
#[derive(Default)]
struct Served {
    connections: AtomicU64,
    requests: AtomicU64,
    /// The most streams one connection had open at once.
    max_open: AtomicU64,
}

/// How the test server behaves.
#[derive(Clone, Copy, Default)]
struct Behaviour {
    /// SETTINGS_MAX_CONCURRENT_STREAMS it announces.
    max_streams: Option<u32>,
}

/// Starts the server on its own thread (it stops by itself after 30 s);
/// its address and what it served.
fn serve(b: Behaviour) -> (SocketAddr, Arc<Served>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let served = Arc::new(Served::default());
    let s = served.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let accept = async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let (sock, _) = listener.accept().await.unwrap();
                s.connections.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(connection(sock, b, s.clone()));
            }
        };
        rt.block_on(async { tokio::time::timeout(Duration::from_secs(30), accept).await.ok() });
    });
    (addr, served)
}

/// Serves one connection: each request answered `ok` after a millisecond,
/// so a connection's streams overlap.
async fn connection(sock: tokio::net::TcpStream, b: Behaviour, served: Arc<Served>) {
    let mut builder = h2::server::Builder::new();
    if let Some(m) = b.max_streams {
        builder.max_concurrent_streams(m);
    }
    let Ok(mut conn) = builder.handshake::<_, Bytes>(sock).await else { return };
    let open = Arc::new(AtomicU64::new(0));
    while let Some(Ok((_req, mut respond))) = conn.accept().await {
        let (open, served) = (open.clone(), served.clone());
        let now = open.fetch_add(1, Ordering::Relaxed) + 1;
        served.max_open.fetch_max(now, Ordering::Relaxed);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1)).await;
            served.requests.fetch_add(1, Ordering::Relaxed);
            open.fetch_sub(1, Ordering::Relaxed);
            let response = http::Response::builder().status(200).header("server", "h2-test").body(()).unwrap();
            if let Ok(mut body) = respond.send_response(response, false) {
                let _ = body.send_data(Bytes::from_static(b"ok"), true);
            }
        });
    }
}

fn plan(concurrency: u32, window_s: f64) -> StepPlan {
    StepPlan { concurrency, warmup_s: 0.05, window_s, pause_s: 0.0, think_time_s: 0.0, open_loop: None }
}

#[test]
fn streams_share_connections_and_a_connections_clients_share_a_thread() {
    let (addr, served) = serve(Behaviour::default());
    let config = HttpConfig::get(&format!("http://{addr}/"), Duration::from_secs(5));
    let driver = Arc::new(H2Driver::new(&config, 2).unwrap());
    assert_eq!((driver.protocol(), driver.clients_per_connection()), ("h2c", 2));
    // Five clients two to a connection: three connections, the last with one.
    let r = run_step(&driver, &plan(5, 0.3), &EngineOptions::new(2), &mut |_| {}).unwrap();
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert!(r.requests > 20, "{}", r.requests);
    assert_eq!(served.connections.load(Ordering::Relaxed), 3, "one connection per two streams");
    assert_eq!(served.max_open.load(Ordering::Relaxed), 2, "two streams at once on a connection, never more");
    assert!(served.requests.load(Ordering::Relaxed) >= r.requests);
    assert_eq!((r.reconnects, r.concurrency), (0, 5));
}

#[test]
fn the_preflight_reads_the_servers_stream_limit() {
    let (addr, _) = serve(Behaviour { max_streams: Some(7) });
    let config = HttpConfig::get(&format!("http://{addr}/x?y=1"), Duration::from_secs(5));
    let p = H2Driver::new(&config, 4).unwrap().preflight().unwrap();
    assert_eq!((p.answer.status, p.answer.server.as_deref(), p.answer.accepted, p.max_streams), (200, Some("h2-test"), true, Some(7)));
    let (addr, _) = serve(Behaviour::default());
    let config = HttpConfig::get(&format!("http://{addr}/"), Duration::from_secs(5));
    assert_eq!(H2Driver::new(&config, 1).unwrap().preflight().unwrap().max_streams, None, "no limit set");
}

#[test]
fn bad_input_is_refused_before_any_connection() {
    let config = HttpConfig::get("http://127.0.0.1:1/", Duration::from_millis(100));
    assert!(matches!(H2Driver::new(&config, 0), Err(H2ConfigError::Streams)));
    assert!(matches!(H2Driver::new(&config, MAX_STREAMS + 1), Err(H2ConfigError::Streams)));
    let with = |k: &str, v: &str| HttpConfig { headers: vec![(k.into(), v.into())], ..config.clone() };
    // Connection-specific headers are dropped (HTTP/2 has none), a Host becomes the authority.
    let d = H2Driver::new(&with("Connection", "close"), 1).unwrap();
    assert!(d.inner.headers.iter().all(|(k, _)| k != "connection") && d.inner.headers.iter().any(|(k, _)| k == "user-agent"));
    let d = H2Driver::new(&with("Host", "example.org"), 1).unwrap();
    assert_eq!(d.inner.prepared[0].uri.to_string(), "http://example.org/");
    let creds = HttpConfig {
        requests: vec![crate::http::RequestSpec { method: "GET".into(), url: "http://u:p%40ss@127.0.0.1:1/a?b".into(), weight: 1 }],
        ..config.clone()
    };
    let d = H2Driver::new(&creds, 1).unwrap();
    assert_eq!(d.inner.prepared[0].uri.to_string(), "http://127.0.0.1:1/a?b", "no credentials in :authority");
    assert_eq!(d.inner.prepared[0].auth.as_ref().unwrap(), "Basic dTpwQHNz");
    assert_eq!(HttpVersion::parse("2"), Ok(HttpVersion::Http2));
    assert_eq!(HttpVersion::parse(" 1.1"), Ok(HttpVersion::Http11));
    assert_eq!(HttpVersion::parse("3").unwrap_err(), "--http '3': give 1.1, 2 or auto");
}
