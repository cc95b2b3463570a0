//! The writer against a local receiver that decodes what it gets.

use super::proto::*;
use super::target::*;
use super::*;
use crate::model::{Family, Kind};
use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::AUTHORIZATION;
use hyper::{HeaderMap, Request};
use hyper::{Response, StatusCode};
use hyper_util::rt::TokioIo;
use prost::Message;
use std::collections::BTreeSet;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the test receiver got: one request.
struct Got {
    path: String,
    headers: HeaderMap,
    request: Option<WriteRequest>,
    status: u16,
}

/// A receiver on 127.0.0.1: answers the scripted statuses in turn (then
/// 204); `{auth}` in a scripted body is replaced by the request's
/// Authorization header (a receiver that echoes credentials).
struct Receiver {
    addr: SocketAddr,
    got: Arc<Mutex<Vec<Got>>>,
    _stop: oneshot::Sender<()>,
}

impl Receiver {
    fn start(answers: &[(u16, &str)], tls: Option<tokio_rustls::TlsAcceptor>) -> Receiver {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let got = Arc::new(Mutex::new(Vec::new()));
        let answers: Arc<Mutex<VecDeque<(u16, String)>>> = Arc::new(Mutex::new(answers.iter().map(|(s, b)| (*s, b.to_string())).collect()));
        let (stop, mut stopped) = oneshot::channel::<()>();
        let record = got.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                loop {
                    let stream = tokio::select! {
                        _ = &mut stopped => return,
                        a = listener.accept() => match a { Ok((s, _)) => s, Err(_) => continue },
                    };
                    let (record, answers, tls) = (record.clone(), answers.clone(), tls.clone());
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                            let (record, answers) = (record.clone(), answers.clone());
                            async move { Ok::<_, Infallible>(answer(req, &record, &answers).await) }
                        });
                        let http = hyper::server::conn::http1::Builder::new();
                        match tls {
                            None => {
                                let _ = http.serve_connection(TokioIo::new(stream), service).await;
                            }
                            Some(acceptor) => {
                                if let Ok(s) = acceptor.accept(stream).await {
                                    let _ = http.serve_connection(TokioIo::new(s), service).await;
                                }
                            }
                        }
                    });
                }
            });
        });
        Receiver { addr, got, _stop: stop }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn count(&self) -> usize {
        self.got.lock().expect("got").len()
    }

    /// (timestamp, value) of every sample of the series named `name`, by request.
    fn samples_of(&self, name: &str) -> Vec<(u16, Vec<(i64, f64)>)> {
        self.got
            .lock()
            .expect("got")
            .iter()
            .map(|g| {
                let samples = g
                    .request
                    .iter()
                    .flat_map(|r| &r.timeseries)
                    .filter(|t| t.labels.iter().any(|l| l.name == "__name__" && l.value == name))
                    .flat_map(|t| t.samples.iter().map(|s| (s.timestamp, s.value)))
                    .collect();
                (g.status, samples)
            })
            .collect()
    }
}

async fn answer(req: Request<Incoming>, record: &Mutex<Vec<Got>>, answers: &Mutex<VecDeque<(u16, String)>>) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let bytes = body.collect().await.map(|c| c.to_bytes()).unwrap_or_default();
    let request = snap::raw::Decoder::new().decompress_vec(&bytes).ok().and_then(|raw| WriteRequest::decode(raw.as_slice()).ok());
    let (status, text) = answers.lock().expect("answers").pop_front().unwrap_or((204, String::new()));
    let auth = parts.headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let path = parts.uri.path_and_query().map(|p| p.to_string()).unwrap_or_default();
    record.lock().expect("got").push(Got { path, headers: parts.headers, request, status });
    let mut response = Response::new(Full::new(Bytes::from(text.replace("{auth}", &auth))));
    *response.status_mut() = StatusCode::from_u16(status).expect("status");
    response
}

fn wait_for(what: &str, max: Duration, cond: impl Fn() -> bool) {
    let end = std::time::Instant::now() + max;
    while !cond() {
        assert!(std::time::Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A counter `scalelab_requests` whose value is the number of calls so
/// far (each snapshot tells which call it was), and a histogram.
fn counting_source(calls: Arc<AtomicU64>) -> Arc<dyn Fn() -> Exposition + Send + Sync> {
    Arc::new(move || {
        let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
        let mut e = Exposition::default();
        let mut c = Family::new("scalelab_requests", Kind::Counter, None, "Requests.");
        c.add(&[("run", "7"), ("empty", "")], Some(n as f64));
        e.push(c);
        let mut h = Family::new("scalelab_latency_seconds", Kind::Histogram, Some("seconds"), "Latency.");
        h.add_histogram(&[("run", "7")], vec![(0.001, 3), (f64::INFINITY, 5)], 5, 0.004);
        e.push(h);
        e
    })
}

fn config(url: &str, interval_ms: u64) -> RemoteWriteConfig {
    RemoteWriteConfig { interval: Duration::from_millis(interval_ms), timeout: Duration::from_secs(2), ..RemoteWriteConfig::new(url) }
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

#[test]
fn urls_are_parsed_shown_without_credentials_and_others_refused() {
    let t = Target::parse("http://127.0.0.1:9090/api/v1/write").expect("plain");
    assert_eq!((t.host.as_str(), t.port, t.path.as_str(), t.host_header.as_str()), ("127.0.0.1", 9090, "/api/v1/write", "127.0.0.1:9090"));
    assert!(t.authorization.is_none() && t.server_name.is_none());
    let t = Target::parse("HTTP://[::1]/w?tenant=a#frag").expect("ipv6");
    assert_eq!((t.host.as_str(), t.port, t.path.as_str(), t.host_header.as_str()), ("::1", 80, "/w?tenant=a", "[::1]"));
    assert_eq!(t.shown, "http://[::1]:80/w");
    let t = Target::parse("https://u:p%40ss@prom.example:8443").expect("https");
    assert_eq!((t.port, t.path.as_str(), t.shown.as_str()), (8443, "/", "https://prom.example:8443/"));
    assert!(t.server_name.is_some());
    // "u:p@ss", as Basic auth.
    assert_eq!(t.authorization.as_deref(), Some("Basic dTpwQHNz"));
    assert_eq!(Target::parse("https://h").expect("default port").port, 443);

    for (bad, says) in [
        ("ftp://u:secret@h/x", "ftp:// is not supported"),
        ("u:secret@h:9090/x", "expected a URL"),
        ("http://u:secret@/x", "no host"),
        ("http://u:secret@h:0/x", "port"),
        ("http://u:secret@h:99999/x", "port"),
        ("http://u:secret@::1:9090/x", "brackets"),
        ("http://u:secret@[::1/x", "closing ]"),
        ("http://u:secret@[nope]:1/x", "not an IPv6 address"),
        ("http://u:secret@h%2f/x", "host must be"),
        ("http://u:secret@h/a b", "visible ASCII"),
    ] {
        let e = Target::parse(bad).err().unwrap_or_else(|| panic!("{bad} accepted"));
        assert!(e.starts_with("--remote-write: ") && e.contains(says), "{bad}: {e}");
        assert!(!e.contains("secret") && !e.contains('\n'), "{bad}: {e}");
    }
    let shown = format!("{:?}", RemoteWriteConfig::new("http://u:secret@h:1/w?token=secret2"));
    assert!(shown.contains("http://h:1/w") && !shown.contains("secret"), "{shown}");
    assert!(RemoteWriter::start(RemoteWriteConfig::new("http://u:secret@/x"), Arc::new(Exposition::default)).is_err());
}

#[test]
fn labels_are_sorted_with_the_name_and_the_extra_labels() {
    let own = |v: &[(&str, &str)]| v.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
    let labels = series_labels(
        "m_total",
        &own(&[("zone", "b"), ("Run", "1"), ("empty", ""), ("zone", "dup")]),
        &own(&[("job", "lab"), ("zone", "x")]),
    );
    let got: Vec<(&str, &str)> = labels.iter().map(|l| (l.name.as_str(), l.value.as_str())).collect();
    assert_eq!(got, [("Run", "1"), ("__name__", "m_total"), ("job", "lab"), ("zone", "b")]);
}

#[test]
fn a_snapshot_arrives_with_headers_sorted_labels_counters_and_buckets() {
    let rx = Receiver::start(&[], None);
    let before = now_ms();
    let calls = Arc::new(AtomicU64::new(0));
    let mut c = config(&rx.url("/api/v1/write"), 50);
    c.labels = vec![("instance".into(), "lab1".into())];
    let w = RemoteWriter::start(c, counting_source(calls.clone())).expect("start");
    wait_for("a request", Duration::from_secs(3), || rx.count() >= 1);
    let stats = w.stop();
    let after = now_ms();
    assert_eq!(stats.failures, 0, "{stats:?}");
    assert!(stats.batches_sent >= 1 && stats.samples_sent >= 6, "{stats:?}");

    let got = rx.got.lock().expect("got");
    let first = &got[0];
    assert_eq!(first.path, "/api/v1/write");
    let h = |n: &str| first.headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    assert_eq!(h("content-encoding"), "snappy");
    assert_eq!(h("content-type"), "application/x-protobuf");
    assert_eq!(h("x-prometheus-remote-write-version"), "0.1.0");
    assert_eq!(h("user-agent"), format!("scalelab/{}", env!("CARGO_PKG_VERSION")));
    assert_eq!(h("host"), rx.addr.to_string());
    assert_eq!(h("authorization"), "");

    let request = first.request.as_ref().expect("a snappy-compressed WriteRequest");
    for t in &request.timeseries {
        let names: Vec<&str> = t.labels.iter().map(|l| l.name.as_str()).collect();
        assert!(names.windows(2).all(|w| w[0] < w[1]), "unsorted: {names:?}");
        assert!(names.contains(&"__name__") && names.contains(&"instance"), "{names:?}");
        assert!(!names.contains(&"empty"), "{names:?}");
    }
    let find = |name: &str, le: Option<&str>| {
        request.timeseries.iter().find(|t| {
            t.labels.iter().any(|l| l.name == "__name__" && l.value == name)
                && le.is_none_or(|le| t.labels.iter().any(|l| l.name == "le" && l.value == le))
        })
    };
    let counter = find("scalelab_requests_total", None).expect("the counter, as NAME_total");
    let labels: Vec<(&str, &str)> = counter.labels.iter().map(|l| (l.name.as_str(), l.value.as_str())).collect();
    assert_eq!(labels, [("__name__", "scalelab_requests_total"), ("instance", "lab1"), ("run", "7")]);
    // The first snapshot is the first call of the source.
    assert_eq!(counter.samples[0].value, 1.0);
    let ts = counter.samples[0].timestamp;
    assert!(before <= ts && ts <= after, "{before} <= {ts} <= {after}");
    assert_eq!(find("scalelab_latency_seconds_bucket", Some("0.001")).expect("bucket le=0.001").samples[0].value, 3.0);
    assert_eq!(find("scalelab_latency_seconds_bucket", Some("+Inf")).expect("bucket le=+Inf").samples[0].value, 5.0);
    assert_eq!(find("scalelab_latency_seconds_count", None).expect("count").samples[0].value, 5.0);
    assert!(find("scalelab_latency_seconds", None).is_none());
}

#[test]
fn a_500_is_retried_and_nothing_is_lost() {
    let rx = Receiver::start(&[(500, "overloaded\nretry later")], None);
    let calls = Arc::new(AtomicU64::new(0));
    let w = RemoteWriter::start(config(&rx.url("/w"), 50), counting_source(calls.clone())).expect("start");
    wait_for("the retry", Duration::from_secs(3), || rx.count() >= 2);
    let stats = w.stop();
    assert_eq!((stats.failures, stats.dropped_snapshots), (1, 0), "{stats:?}");
    let e = stats.last_error.as_deref().unwrap_or("");
    assert!(e.contains("HTTP 500 Internal Server Error: overloaded retry later") && e.contains(&format!("http://{}/w", rx.addr)), "{e}");

    let requests = rx.samples_of("scalelab_requests_total");
    assert_eq!(requests[0].0, 500);
    let delivered: BTreeSet<(i64, u64)> =
        requests.iter().filter(|(s, _)| *s == 204).flat_map(|(_, v)| v.iter().map(|(t, v)| (*t, *v as u64))).collect();
    for (t, v) in &requests[0].1 {
        assert!(delivered.contains(&(*t, *v as u64)), "sample {t}={v} of the failed request was not sent again");
    }
    // Every snapshot taken (one per call of the source) was delivered, once each.
    let values: BTreeSet<u64> = delivered.iter().map(|(_, v)| *v).collect();
    assert_eq!(values, (1..=calls.load(Ordering::SeqCst)).collect::<BTreeSet<u64>>());
    assert_eq!(values.len(), delivered.len());
    assert_eq!(stats.samples_sent, 5 * delivered.len() as u64, "{stats:?}");
}

#[test]
fn a_400_drops_the_batch_and_counts_it() {
    let rx = Receiver::start(&[(400, "out of order sample")], None);
    let w = RemoteWriter::start(config(&rx.url("/w"), 50), counting_source(Arc::new(AtomicU64::new(0)))).expect("start");
    wait_for("a second request", Duration::from_secs(3), || rx.count() >= 2);
    let stats = w.stop();
    assert_eq!(stats.failures, 1, "{stats:?}");
    assert_eq!(stats.dropped_snapshots, 1, "{stats:?}");
    let e = stats.last_error.as_deref().unwrap_or("");
    assert!(e.contains("HTTP 400 Bad Request: out of order sample") && e.contains("dropped"), "{e}");
    let requests = rx.samples_of("scalelab_requests_total");
    assert_eq!(requests[0], (400, vec![(requests[0].1[0].0, 1.0)]));
    assert!(requests[1..].iter().all(|(_, s)| s.iter().all(|(_, v)| *v > 1.0)), "the rejected batch was sent again");
}

#[test]
fn with_no_receiver_the_queue_stays_bounded_and_the_oldest_are_dropped() {
    let calls = Arc::new(AtomicU64::new(0));
    let c = RemoteWriteConfig { max_queue: 3, ..config(&format!("http://127.0.0.1:{}/w", closed_port()), 20) };
    let w = RemoteWriter::start(c, counting_source(calls.clone())).expect("start");
    let end = std::time::Instant::now() + Duration::from_millis(400);
    while std::time::Instant::now() < end {
        assert!(w.stats().queued_snapshots <= 3, "{:?}", w.stats());
        std::thread::sleep(Duration::from_millis(5));
    }
    let stats = w.stats();
    assert!(calls.load(Ordering::SeqCst) >= 6, "{} snapshots", calls.load(Ordering::SeqCst));
    assert!(stats.dropped_snapshots > 0 && stats.failures >= 1 && stats.batches_sent == 0, "{stats:?}");
    let e = stats.last_error.as_deref().unwrap_or("");
    assert!(e.starts_with("remote write to http://127.0.0.1:") && e.contains("refused"), "{e}");
    let begun = std::time::Instant::now();
    let last = w.stop();
    assert!(begun.elapsed() < FLUSH_AT_STOP + Duration::from_millis(500), "{:?}", begun.elapsed());
    // Every snapshot is accounted for: none was delivered, so all are dropped.
    assert_eq!(last.dropped_snapshots, calls.load(Ordering::SeqCst), "{last:?}");
    assert_eq!(last.queued_snapshots, 0);
}

#[test]
fn stop_flushes_a_last_snapshot() {
    let rx = Receiver::start(&[], None);
    let value = Arc::new(AtomicU64::new(1));
    let v = value.clone();
    let source = Arc::new(move || {
        let mut e = Exposition::default();
        let mut g = Family::new("scalelab_in_flight", Kind::Gauge, None, "In flight.");
        g.add(&[], Some(v.load(Ordering::SeqCst) as f64));
        e.push(g);
        e
    });
    let w = RemoteWriter::start(config(&rx.url("/w"), 60_000), source).expect("start");
    wait_for("the first snapshot", Duration::from_secs(3), || rx.count() >= 1);
    value.store(42, Ordering::SeqCst);
    let stats = w.stop();
    assert_eq!((stats.batches_sent, stats.samples_sent, stats.failures), (2, 2, 0), "{stats:?}");
    let got: Vec<f64> = rx.samples_of("scalelab_in_flight").iter().flat_map(|(_, s)| s.iter().map(|(_, v)| *v)).collect();
    assert_eq!(got, [1.0, 42.0]);
}

#[test]
fn credentials_go_as_basic_auth_and_never_into_errors() {
    let rx = Receiver::start(&[(401, "bad credentials {auth}")], None);
    let url = format!("http://scalelab:s3cr%40t@{}/w", rx.addr);
    let w = RemoteWriter::start(config(&url, 50), counting_source(Arc::new(AtomicU64::new(0)))).expect("start");
    wait_for("a request", Duration::from_secs(3), || rx.count() >= 1);
    let stats = w.stop();
    let token = base64::engine::general_purpose::STANDARD.encode("scalelab:s3cr@t");
    let auth = rx.got.lock().expect("got")[0].headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    assert_eq!(auth, format!("Basic {token}"));
    let e = stats.last_error.unwrap_or_default();
    assert!(e.contains("HTTP 401") && e.contains("bad credentials Basic ***"), "{e}");
    for secret in ["s3cr", &token, "scalelab:"] {
        assert!(!e.contains(secret), "{secret} in {e}");
    }

    let url = format!("http://scalelab:s3cr%40t@127.0.0.1:{}/w", closed_port());
    let w = RemoteWriter::start(config(&url, 50), counting_source(Arc::new(AtomicU64::new(0)))).expect("start");
    assert_eq!(w.url(), url.replace("scalelab:s3cr%40t@", ""));
    wait_for("a failure", Duration::from_secs(3), || w.stats().failures >= 1);
    let e = w.stop().last_error.unwrap_or_default();
    assert!(e.contains("refused") && !e.contains("s3cr") && !e.contains("scalelab:"), "{e}");
}

#[test]
fn https_checks_the_certificate_unless_insecure() {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("certificate");
    let key = rustls::pki_types::PrivateKeyDer::try_from(made.key_pair.serialize_der()).expect("key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![made.cert.der().clone()], key)
        .expect("server config");
    let rx = Receiver::start(&[], Some(tokio_rustls::TlsAcceptor::from(Arc::new(server))));
    let url = format!("https://localhost:{}/w", rx.addr.port());

    let checked = RemoteWriter::start(config(&url, 50), counting_source(Arc::new(AtomicU64::new(0)))).expect("start");
    wait_for("a failure", Duration::from_secs(3), || checked.stats().failures >= 1);
    let stats = checked.stop();
    assert_eq!(rx.count(), 0);
    let e = stats.last_error.unwrap_or_default();
    assert!(e.starts_with(&format!("remote write to https://localhost:{}/w: TLS", rx.addr.port())) && e.contains("certificate"), "{e}");

    let c = RemoteWriteConfig { insecure: true, ..config(&url, 50) };
    let insecure = RemoteWriter::start(c, counting_source(Arc::new(AtomicU64::new(0)))).expect("start");
    wait_for("a request over TLS", Duration::from_secs(3), || rx.count() >= 1);
    let stats = insecure.stop();
    assert_eq!(stats.failures, 0, "{stats:?}");
    assert_eq!(rx.samples_of("scalelab_requests_total")[0].1[0].1, 1.0);
}

#[test]
fn a_panicking_source_is_a_skipped_snapshot() {
    let source: Arc<dyn Fn() -> Exposition + Send + Sync> = Arc::new(|| -> Exposition { panic!("source broke") });
    let w = RemoteWriter::start(config(&format!("http://127.0.0.1:{}/w", closed_port()), 50), source).expect("start");
    wait_for("the error", Duration::from_secs(3), || w.stats().last_error.is_some());
    let stats = w.stop();
    assert!(stats.last_error.unwrap_or_default().contains("panicked"));
    assert_eq!((stats.failures, stats.dropped_snapshots), (0, 0));
}
