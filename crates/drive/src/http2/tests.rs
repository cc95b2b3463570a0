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
    /// PINGs the client acknowledged.
    pongs: AtomicU64,
}

/// How the test server behaves.
#[derive(Clone, Copy, Default)]
struct Behaviour {
    /// SETTINGS_MAX_CONCURRENT_STREAMS it announces.
    max_streams: Option<u32>,
    /// Resets every n-th stream of a connection (REFUSED_STREAM) instead of answering.
    reset_every: Option<u64>,
    /// SETTINGS_INITIAL_WINDOW_SIZE it announces; a request body is then
    /// read 1 KiB every 2 ms, its window given back as it is read.
    window: Option<u32>,
    /// Bytes of each response's body (2 when 0: `ok`).
    body_bytes: usize,
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
    if let Some(w) = b.window {
        builder.initial_window_size(w);
    }
    let Ok(mut conn) = builder.handshake::<_, Bytes>(sock).await else { return };
    let open = Arc::new(AtomicU64::new(0));
    let mut accepted = 0u64;
    while let Some(Ok((req, mut respond))) = conn.accept().await {
        accepted += 1;
        if b.reset_every.is_some_and(|n| accepted.is_multiple_of(n)) {
            respond.send_reset(h2::Reason::REFUSED_STREAM);
            continue;
        }
        let (open, served) = (open.clone(), served.clone());
        let now = open.fetch_add(1, Ordering::Relaxed) + 1;
        served.max_open.fetch_max(now, Ordering::Relaxed);
        let reply = async move {
            let mut body = req.into_body();
            while let Some(Ok(chunk)) = body.data().await {
                tokio::time::sleep(Duration::from_millis(2)).await;
                let _ = body.flow_control().release_capacity(chunk.len());
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
            served.requests.fetch_add(1, Ordering::Relaxed);
            open.fetch_sub(1, Ordering::Relaxed);
            let response = http::Response::builder().status(200).header("server", "h2-test").body(()).unwrap();
            if let Ok(mut body) = respond.send_response(response, false) {
                // The h2 server sends no more than the client's windows allow.
                let data = if b.body_bytes == 0 { Bytes::from_static(b"ok") } else { Bytes::from(vec![b'x'; b.body_bytes]) };
                let _ = body.send_data(data, true);
            }
        };
        tokio::spawn(reply);
    }
}

/// A frame as bytes.
fn raw_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    f.extend([kind, flags]);
    f.extend(stream.to_be_bytes());
    f.extend(payload);
    f
}

/// How a raw server answers a frame (type, flags, stream, payload), given
/// its connection's state and the counters: the bytes to write, or `None`
/// to close.
type Answer<S> = fn(&mut S, &Served, u8, u8, u32, &[u8]) -> Option<Vec<u8>>;

/// A server of raw frames, a thread per connection (for 30 s): it reads
/// the preface, sends an empty SETTINGS, then hands each frame the client
/// sends (type, flags, stream, payload) to `answer` with the connection's
/// own state `S` and the counters; it writes what `answer` returns, and
/// `None` ends the connection.
fn raw_server<S: Default + 'static>(answer: Answer<S>) -> (SocketAddr, Arc<Served>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let served = Arc::new(Served::default());
    let s = served.clone();
    std::thread::spawn(move || {
        let until = std::time::Instant::now() + Duration::from_secs(30);
        for sock in listener.incoming().take(1000) {
            let (Ok(mut sock), true) = (sock, std::time::Instant::now() < until) else { break };
            s.connections.fetch_add(1, Ordering::Relaxed);
            let served = s.clone();
            std::thread::spawn(move || {
                let _ = sock.set_read_timeout(Some(Duration::from_secs(2)));
                let mut preface = [0u8; 24];
                if sock.read_exact(&mut preface).is_err() || sock.write_all(&raw_frame(4, 0, 0, &[])).is_err() {
                    return;
                }
                let mut state = S::default();
                loop {
                    let mut head = [0u8; 9];
                    if sock.read_exact(&mut head).is_err() {
                        return;
                    }
                    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
                    let mut payload = vec![0u8; len];
                    if sock.read_exact(&mut payload).is_err() {
                        return;
                    }
                    let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
                    match answer(&mut state, &served, head[3], head[4], stream, &payload) {
                        None => return,
                        Some(out) if !out.is_empty() && sock.write_all(&out).is_err() => return,
                        Some(_) => {}
                    }
                }
            });
        }
    });
    (addr, served)
}

/// A server of raw frames that answers the first 10 requests of each
/// connection, then sends GOAWAY (NO_ERROR, last stream: the last one it
/// answered) and reads on without processing, as nginx does at its
/// `keepalive_requests`; closes 100 ms later. (The `h2` crate's server
/// names in its GOAWAY every stream it has read, answered or not.)
fn goaway_server() -> (SocketAddr, Arc<Served>) {
    #[derive(Default)]
    struct Conn {
        answered: u32,
        closing: Option<std::time::Instant>,
    }
    raw_server(|c: &mut Conn, served, kind, flags, stream, _| {
        if c.closing.is_some_and(|t| t.elapsed() > Duration::from_millis(100)) {
            return None;
        }
        Some(match kind {
            // SETTINGS (not an ack): acknowledged.
            4 if flags & 1 == 0 => raw_frame(4, 1, 0, &[]),
            // HEADERS of a request: `:status: 200` (HPACK index 8), no body.
            1 if c.closing.is_none() => {
                let mut out = raw_frame(1, 0x5, stream, &[0x88]);
                c.answered += 1;
                served.requests.fetch_add(1, Ordering::Relaxed);
                if c.answered == 10 {
                    let mut goaway = stream.to_be_bytes().to_vec();
                    goaway.extend(0u32.to_be_bytes());
                    out.extend(raw_frame(7, 0, 0, &goaway));
                    c.closing = Some(std::time::Instant::now());
                }
                out
            }
            _ => Vec::new(),
        })
    })
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
    // GETs have no body to hold back: flow control measured, nothing waited.
    assert_eq!((r.flow_stalls, r.flow_stall_ms), (Some(0), Some(0.0)));
}

#[test]
fn a_stream_the_server_resets_is_a_stream_reset_with_its_code_and_the_connection_goes_on() {
    let (addr, served) = serve(Behaviour { reset_every: Some(3), ..Default::default() });
    let config = HttpConfig::get(&format!("http://{addr}/"), Duration::from_secs(5));
    let driver = Arc::new(H2Driver::new(&config, 2).unwrap());
    let r = run_step(&driver, &plan(2, 0.3), &EngineOptions::new(1), &mut |_| {}).unwrap();
    let resets = r.errors.get(ErrorClass::StreamReset);
    assert_eq!(r.errors.total(), resets, "{:?}", r.errors);
    assert!(resets > 5 && r.requests > 2 * resets - 6, "one in three reset: {} ok, {resets} reset", r.requests);
    assert_eq!(r.errors.first_message[&ErrorClass::StreamReset], "stream reset by the server: REFUSED_STREAM (0x7)");
    assert_eq!((served.connections.load(Ordering::Relaxed), r.reconnects), (1, 0), "a reset stream leaves its connection up");
}

#[test]
fn requests_a_goaway_left_unprocessed_are_counted_and_the_load_goes_on_new_connections() {
    let (addr, served) = goaway_server();
    let config = HttpConfig::get(&format!("http://{addr}/"), Duration::from_secs(5));
    let driver = Arc::new(H2Driver::new(&config, 4).unwrap());
    let r = run_step(&driver, &plan(4, 0.4), &EngineOptions::new(1), &mut |_| {}).unwrap();
    let goaway = r.errors.get(ErrorClass::GoAway);
    assert!(goaway > 0, "streams past the GOAWAY's last id: {:?}", r.errors);
    assert!(r.errors.first_message[&ErrorClass::GoAway].starts_with("GOAWAY from the server (NO_ERROR (0x0))"), "{:?}", r.errors);
    assert!(r.reconnects > 3 && r.requests > 30, "the load went on over new connections: {} ok, {} reconnects", r.requests, r.reconnects);
    assert!(served.connections.load(Ordering::Relaxed) > 4);
    // Each connection served its 10, and every one was counted once.
    assert!(r.requests <= served.requests.load(Ordering::Relaxed));
}

#[test]
fn a_body_held_back_by_the_servers_window_is_a_flow_control_stall() {
    let (addr, _) = serve(Behaviour { window: Some(1024), ..Default::default() });
    let config = HttpConfig { body: Some(vec![b'x'; 8 * 1024]), ..HttpConfig::get(&format!("http://{addr}/"), Duration::from_secs(5)) };
    let driver = Arc::new(H2Driver::new(&config, 1).unwrap());
    let r = run_step(&driver, &plan(1, 0.3), &EngineOptions::new(1), &mut |_| {}).unwrap();
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    // 8 KiB through a 1 KiB window read 1 KiB per 2 ms: every request waits ~14 ms.
    let (stalls, ms) = (r.flow_stalls.unwrap(), r.flow_stall_ms.unwrap());
    assert!(r.requests > 2 && stalls == r.requests, "every request waited: {stalls} of {}", r.requests);
    assert!(ms > 5.0 * stalls as f64, "{ms} ms for {stalls} requests");
}

#[test]
fn the_preflight_reads_the_servers_stream_limit() {
    let (addr, _) = serve(Behaviour { max_streams: Some(7), ..Default::default() });
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
    let fields = d.inner.prepared[0].fields();
    assert!(fields.iter().all(|(k, _)| k != "connection") && fields.iter().any(|(k, _)| k == "user-agent"), "{fields:?}");
    let names: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).take(4).collect();
    assert_eq!(names, [":method", ":scheme", ":authority", ":path"]);
    let d = H2Driver::new(&with("Host", "example.org"), 1).unwrap();
    assert_eq!(d.inner.prepared[0].uri.to_string(), "http://example.org/");
    let creds = HttpConfig {
        requests: vec![crate::http::RequestSpec { method: "GET".into(), url: "http://u:p%40ss@127.0.0.1:1/a?b".into(), weight: 1 }],
        ..config.clone()
    };
    let d = H2Driver::new(&creds, 1).unwrap();
    assert_eq!(d.inner.prepared[0].uri.to_string(), "http://127.0.0.1:1/a?b", "no credentials in :authority");
    assert_eq!(d.inner.prepared[0].auth.as_deref(), Some("Basic dTpwQHNz"));
    assert!(d.inner.prepared[0].fields().contains(&("authorization".into(), "Basic dTpwQHNz".into())));
    assert_eq!(HttpVersion::parse("2"), Ok(HttpVersion::Http2));
    assert_eq!(HttpVersion::parse(" 1.1"), Ok(HttpVersion::Http11));
    assert_eq!(HttpVersion::parse("3").unwrap_err(), "--http '3': give 1.1, 2 or auto");
}

#[test]
fn responses_larger_than_the_windows_are_read_whole_as_the_client_gives_its_windows_back() {
    // 3 MiB a response: three times a stream's window (1 MiB), and the
    // connection's (16 MiB) passed after six: without WINDOW_UPDATEs the
    // server would stop sending and the requests time out.
    let (addr, served) = serve(Behaviour { body_bytes: 3 << 20, ..Default::default() });
    let config = HttpConfig::get(&format!("http://{addr}/"), Duration::from_secs(5));
    let driver = Arc::new(H2Driver::new(&config, 2).unwrap());
    let r = run_step(&driver, &plan(2, 1.0), &EngineOptions::new(1), &mut |_| {}).unwrap();
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert!(r.requests >= 8, "{} responses of 3 MiB", r.requests);
    assert_eq!(served.connections.load(Ordering::Relaxed), 1);
}

#[test]
fn a_server_that_does_not_speak_http2_is_said_so_in_one_line() {
    // An HTTP/1.1 server meets the h2c preface: its answer is not frames.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        if let Ok((mut sock, _)) = listener.accept() {
            let mut buf = [0u8; 1024];
            let _ = sock.read(&mut buf);
            let _ = sock.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    let config = HttpConfig::get(&format!("http://{addr}/"), Duration::from_secs(5));
    let e = H2Driver::new(&config, 1).unwrap().preflight().unwrap_err();
    assert!(e.message.contains("did not answer in HTTP/2"), "{}", e.message);
}

/// A server of raw frames that answers each request the long way round: a
/// PING first, an interim `103` (added to the HPACK table), the final
/// `200` in a padded HEADERS continued by a CONTINUATION that carries
/// `server: raw` (added too: with the 0-byte table the client announced,
/// each is evicted at once), and a padded DATA that ends the stream.
fn roundabout_server() -> (SocketAddr, Arc<Served>) {
    raw_server(|_: &mut (), served, kind, flags, stream, payload| {
        let mut out = Vec::new();
        match (kind, flags) {
            (4, f) if f & 1 == 0 => out = raw_frame(4, 1, 0, &[]),
            (6, 1) if payload == b"roundabt" => {
                served.pongs.fetch_add(1, Ordering::Relaxed);
            }
            (1, _) => {
                served.requests.fetch_add(1, Ordering::Relaxed);
                out.extend(raw_frame(6, 0, 0, b"roundabt"));
                // :status 103, literal with incremental indexing (name: static 8).
                out.extend(raw_frame(1, 0x4, stream, &[0x48, 3, b'1', b'0', b'3']));
                // :status 200 (static 8), padded by 3, continued...
                out.extend(raw_frame(1, 0x8, stream, &[3, 0x88, 0, 0, 0]));
                // ...by `server: raw`, literal with incremental indexing (name: static 54).
                out.extend(raw_frame(9, 0x4, stream, &[0x76, 3, b'r', b'a', b'w']));
                out.extend(raw_frame(0, 0x9, stream, &[2, b'o', b'k', 0, 0]));
            }
            _ => {}
        }
        Some(out)
    })
}

#[test]
fn interim_padded_and_continued_responses_and_pings_are_read_as_the_rfc_says() {
    let (addr, served) = roundabout_server();
    let config = HttpConfig::get(&format!("http://{addr}/"), Duration::from_secs(5));
    let driver = Arc::new(H2Driver::new(&config, 2).unwrap());
    let pre = driver.preflight().unwrap();
    assert_eq!((pre.answer.status, pre.answer.server.as_deref(), pre.max_streams), (200, Some("raw"), None));
    // Over 60 responses on one connection, every block read (thousands
    // quiet; a CPU hog leaves hundreds).
    let r = run_step(&driver, &plan(2, 0.5), &EngineOptions::new(1), &mut |_| {}).unwrap();
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert!(r.requests > 60, "{}", r.requests);
    // Every PING answered (those of the window's last requests aside).
    std::thread::sleep(Duration::from_millis(200));
    let (asked, pongs) = (served.requests.load(Ordering::Relaxed), served.pongs.load(Ordering::Relaxed));
    assert!(pongs + 4 >= asked && pongs > 60, "{pongs} PINGs acknowledged of {asked}");
}
