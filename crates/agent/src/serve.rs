//! The agent's side of one session: the handshake (protocol, and over TCP
//! the token proof), clock probes, then the load steps (the drive engine,
//! unchanged) and the server probes the coordinator asks for. The agent
//! never outlives its coordinator's attention: when the control channel
//! ends, the running step is cut (within a second), and a step never runs
//! past its planned end plus [`GRACE`].

use crate::auth;
use crate::proto::{mismatch, read_frame, read_frame_max, write_frame, FromAgent, SqlSpec, ToAgent, MAX_HANDSHAKE_FRAME};
use crate::records;
use scalelab_drive::http::{HttpConfig, HttpDriver};
use scalelab_drive::http2::H2Driver;
use scalelab_drive::sql::{SqlConfig, SqlDriver, SqlUrl};
use scalelab_drive::{run_step, EngineOptions};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

/// How long past its planned end a step may run before the agent cuts it.
pub const GRACE: Duration = Duration::from_secs(2);

pub type Reader = Box<dyn AsyncRead + Unpin + Send>;
pub type Writer = Box<dyn AsyncWrite + Unpin + Send>;

/// What a TCP session authenticates with: the token and the TLS session's exporter.
pub struct Proof {
    pub token: Vec<u8>,
    pub ekm: Vec<u8>,
}

/// Wall clock, µs since the epoch.
pub fn unix_us() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()).unwrap_or_else(|_| "unknown".into())
}

/// The host's name and this scalelab's version.
fn about() -> (String, String) {
    (host_name(), env!("CARGO_PKG_VERSION").into())
}

/// `scheme://host:port` of a URL, lowercased, without credentials or path.
fn origin(url: &str) -> Option<String> {
    scalelab_core::Target::parse(url).ok().map(|t| t.origin())
}

/// Checks that every request of `config` goes to the session's target and
/// that nothing in it belongs to the coordinator's host.
fn only_the_target(target: &str, config: &HttpConfig) -> Result<(), String> {
    let want = origin(target).ok_or_else(|| format!("the target '{target}' is not a URL"))?;
    // An h2c:// target's requests are planned as http:// (HTTP/2 by prior knowledge on it).
    let want = match want.strip_prefix("h2c://") {
        Some(rest) => format!("http://{rest}"),
        None => want,
    };
    for r in &config.requests {
        if origin(&r.url).as_deref() != Some(want.as_str()) {
            return Err(format!("refused: a request goes to {} but the session's target is {want}", scalelab_core::redact_url(&r.url)));
        }
    }
    // Source addresses are the coordinator's own: this host has others.
    if !config.source_addrs.is_empty() {
        return Err("refused: source addresses belong to the coordinator's host, not to an agent".into());
    }
    Ok(())
}

/// The driver for the session's target; every request must go to that target.
fn driver(target: &str, config: &HttpConfig) -> Result<(HttpDriver, Option<String>), String> {
    only_the_target(target, config)?;
    let d = HttpDriver::new(config).map_err(|e| e.to_string())?;
    let p = d.preflight().map_err(|f| format!("cannot reach {}: {}", scalelab_core::redact_url(target), f.message))?;
    Ok((d, p.server))
}

/// The HTTP/2 driver for the session's target, `streams` per connection;
/// its first request checks this host reaches the target over HTTP/2.
fn h2_driver(target: &str, config: &HttpConfig, streams: u32) -> Result<(H2Driver, Option<String>), String> {
    only_the_target(target, config)?;
    let d = H2Driver::new(config, streams).map_err(|e| e.to_string())?;
    let p = d.preflight().map_err(|f| format!("cannot reach {} over HTTP/2: {}", scalelab_core::redact_url(target), f.message))?;
    Ok((d, p.answer.server))
}

/// The SQL driver for the session's target (a database URL): the workload
/// as sent, nothing prepared on the server; one read-only look (its version)
/// checks this host reaches it.
fn sql_driver(target: &str, sql: SqlSpec) -> Result<(SqlDriver, Option<String>), String> {
    let url = SqlUrl::parse(target).map_err(|e| format!("the target is not a database URL: {e}"))?;
    let connect_timeout = Duration::from_millis(sql.connect_timeout_ms);
    let info = scalelab_drive::sql::inspect(&url, connect_timeout)
        .map_err(|f| format!("cannot reach {}: {}", scalelab_core::redact_url(target), f.message))?;
    let config = SqlConfig { url, workload: sql.workload, prepare: sql.prepare, connect_timeout };
    Ok((SqlDriver::new(config), Some(info.server)))
}

/// The Redis driver for the session's target (its URL, not the one in
/// `redis`: an agent loads only its session's target); the server is asked
/// what it is, which checks this host reaches it.
fn redis_driver(
    target: &str,
    redis: scalelab_drive::redis::RedisConfig,
) -> Result<(scalelab_drive::redis::RedisDriver, Option<String>), String> {
    let url = scalelab_wire::resp::RedisUrl::parse(target)?;
    let server =
        scalelab_drive::redis::inspect(&url, redis.connect_timeout).map_err(|f| format!("cannot reach {}: {}", url.redacted, f.message))?;
    Ok((scalelab_drive::redis::RedisDriver::new(scalelab_drive::redis::RedisConfig { url, ..redis }), Some(server)))
}

/// The load a session runs its steps with.
#[derive(Clone)]
enum Loaded {
    Http(Arc<HttpDriver>),
    H2(Arc<H2Driver>),
    Sql(Arc<SqlDriver>),
    Redis(Arc<scalelab_drive::redis::RedisDriver>),
}

/// The handshake: hello both ways, then (TCP) the proofs. Err: why the
/// session was refused, already logged by the caller.
async fn handshake(r: &mut Reader, w: &mut Writer, proof: Option<&Proof>, protocol: u32) -> Result<(), String> {
    let first = tokio::time::timeout(Duration::from_secs(10), read_frame_max::<_, ToAgent>(r, MAX_HANDSHAKE_FRAME)).await;
    let c_nonce = match first {
        Ok(Ok(Some((ToAgent::Hello { protocol: p, nonce }, _)))) => {
            let a_nonce = auth::nonce();
            // Over TCP nothing about the host before the token is proven.
            let (host, version) = if proof.is_some() { (String::new(), String::new()) } else { about() };
            let hello = FromAgent::Hello { protocol, nonce: a_nonce.clone(), host, version };
            write_frame(w, &hello).await.map_err(|e| e.to_string())?;
            if p != protocol {
                let m = mismatch(protocol, p);
                let _ = write_frame(w, &FromAgent::Refused { message: m.clone() }).await;
                return Err(m);
            }
            (nonce, a_nonce)
        }
        Ok(Ok(None)) => return Err("closed before saying hello".into()),
        Ok(Ok(Some(_))) => return Err("the first frame was not a hello".into()),
        Ok(Err(e)) => return Err(format!("not a scalelab coordinator: {e}")),
        Err(_) => return Err("no hello within 10 s".into()),
    };
    let Some(p) = proof else { return Ok(()) };
    let (c, a) = c_nonce;
    match tokio::time::timeout(Duration::from_secs(10), read_frame_max::<_, ToAgent>(r, MAX_HANDSHAKE_FRAME)).await {
        Ok(Ok(Some((ToAgent::Auth { proof: given }, _)))) if auth::verify(&p.token, "coordinator", &c, &a, &p.ekm, &given) => {
            let mine = auth::proof(&p.token, "agent", &c, &a, &p.ekm);
            let (host, version) = about();
            write_frame(w, &FromAgent::Auth { proof: mine, host, version }).await.map_err(|e| e.to_string())?;
            Ok(())
        }
        _ => {
            let m = "the agent refused the coordinator: its token proof did not match (the tokens differ; check --agent-token-file)";
            let _ = write_frame(w, &FromAgent::Refused { message: m.into() }).await;
            Err("wrong token (the coordinator's proof did not match)".into())
        }
    }
}

/// One session on an open control channel. Returns when the coordinator
/// says bye or the channel ends; Err: the session was refused, and why.
/// `log` takes the session's lines (a step cut short).
pub async fn serve(mut r: Reader, mut w: Writer, proof: Option<Proof>, protocol: u32, log: crate::Log) -> Result<(), String> {
    handshake(&mut r, &mut w, proof.as_ref(), protocol).await?;
    let (tx, mut rx) = mpsc::unbounded_channel::<FromAgent>();
    let writer = tokio::spawn(async move {
        while let Some(m) = rx.recv().await {
            if write_frame(&mut w, &m).await.is_err() {
                break;
            }
        }
    });
    let gone = Arc::new(AtomicBool::new(false));
    let step_stop: Arc<Mutex<Arc<AtomicBool>>> = Arc::default();
    let mut load: Option<(Loaded, EngineOptions)> = None;
    let mut probes: Option<records::Probing> = None;
    let mut running: Option<std::thread::JoinHandle<()>> = None;
    loop {
        let frame = match read_frame::<_, ToAgent>(&mut r).await {
            Ok(Some((f, _))) => f,
            _ => break,
        };
        match frame {
            ToAgent::Ping { seq } => {
                let _ = tx.send(FromAgent::Pong { seq, agent_unix_us: unix_us() });
            }
            ToAgent::Load { target, http, http2, threads, no_pin } => {
                let (done_tx, done_rx) = tokio::sync::oneshot::channel();
                std::thread::spawn(move || {
                    let built = match http2 {
                        Some(streams) => h2_driver(&target, &http, streams).map(|(d, s)| (Loaded::H2(Arc::new(d)), s)),
                        None => driver(&target, &http).map(|(d, s)| (Loaded::Http(Arc::new(d)), s)),
                    };
                    let _ = done_tx.send(built);
                });
                load = loaded(done_rx.await, threads, no_pin, &tx);
            }
            ToAgent::LoadSql { target, sql, threads, no_pin } => {
                let (done_tx, done_rx) = tokio::sync::oneshot::channel();
                std::thread::spawn(move || {
                    let _ = done_tx.send(sql_driver(&target, sql).map(|(d, s)| (Loaded::Sql(Arc::new(d)), s)));
                });
                load = loaded(done_rx.await, threads, no_pin, &tx);
            }
            ToAgent::LoadRedis { target, redis, threads, no_pin } => {
                let (done_tx, done_rx) = tokio::sync::oneshot::channel();
                std::thread::spawn(move || {
                    let _ = done_tx.send(redis_driver(&target, redis).map(|(d, s)| (Loaded::Redis(Arc::new(d)), s)));
                });
                load = loaded(done_rx.await, threads, no_pin, &tx);
            }
            ToAgent::Probe { server_pid, port, interval_ms, thread_hz, db } => {
                match records::Probing::start(server_pid, port, (interval_ms, thread_hz), db.as_deref(), tx.clone()) {
                    Ok((p, cores)) => {
                        probes = Some(p);
                        let _ = tx.send(FromAgent::Ready { server: None, cores });
                    }
                    Err(message) => {
                        let _ = tx.send(FromAgent::Error { message });
                    }
                }
            }
            ToAgent::Step { index, plan, start_at_unix_us } => {
                let Some((d, opts)) = load.clone() else {
                    let _ = tx.send(FromAgent::Error { message: "a step before the session's load".into() });
                    continue;
                };
                if running.as_ref().is_some_and(|h| !h.is_finished()) {
                    let _ = tx.send(FromAgent::Error { message: format!("step {} asked while one runs", index + 1) });
                    continue;
                }
                let stop = Arc::new(AtomicBool::new(false));
                *step_stop.lock().expect("not poisoned") = stop.clone();
                let (tx, gone, log) = (tx.clone(), gone.clone(), log.clone());
                running = Some(std::thread::spawn(move || {
                    let wait = Duration::from_micros(start_at_unix_us.saturating_sub(unix_us()).clamp(0, 60_000_000) as u64);
                    let until = Instant::now() + wait;
                    while Instant::now() < until {
                        if gone.load(Ordering::Relaxed) || stop.load(Ordering::Relaxed) {
                            return;
                        }
                        std::thread::sleep((until - Instant::now()).min(Duration::from_millis(20)));
                    }
                    let deadline = Instant::now() + plan.warmup() + plan.window() + GRACE;
                    let opts = EngineOptions { stop: stop.clone(), ..opts };
                    let mut cut = false;
                    let mut tick = |t: &scalelab_drive::LiveTick| {
                        // Never load past the step's end plus the grace, nor without a coordinator.
                        if !cut && (gone.load(Ordering::Relaxed) || Instant::now() > deadline) {
                            cut = true;
                            stop.store(true, Ordering::Relaxed);
                            let why = if gone.load(Ordering::Relaxed) { "the coordinator is gone" } else { "past its end and the grace" };
                            log(&format!("agent: step {} cut: {why}", index + 1));
                        }
                        let _ = tx.send(FromAgent::Tick { index, tick: t.clone() });
                    };
                    let result = match &d {
                        Loaded::Http(d) => run_step(d, &plan, &opts, &mut tick),
                        Loaded::H2(d) => run_step(d, &plan, &opts, &mut tick),
                        Loaded::Sql(d) => run_step(d, &plan, &opts, &mut tick),
                        Loaded::Redis(d) => run_step(d, &plan, &opts, &mut tick),
                    };
                    let _ = match result {
                        Ok(result) => tx.send(FromAgent::StepDone { index, result: Box::new(result) }),
                        // The coordinator names this agent lost, with the reason.
                        Err(e) => tx.send(FromAgent::Error { message: format!("step {}: {e}", index + 1) }),
                    };
                }));
            }
            ToAgent::Stop => step_stop.lock().expect("not poisoned").store(true, Ordering::Relaxed),
            ToAgent::Bye => break,
            ToAgent::Hello { .. } | ToAgent::Auth { .. } => {
                let _ = tx.send(FromAgent::Error { message: "a second hello".into() });
            }
        }
    }
    // The coordinator is gone (or done): cut the load now.
    gone.store(true, Ordering::Relaxed);
    step_stop.lock().expect("not poisoned").store(true, Ordering::Relaxed);
    if let Some(p) = probes.take() {
        let _ = tokio::task::spawn_blocking(move || p.stop()).await;
    }
    if let Some(h) = running.take() {
        let _ = tokio::task::spawn_blocking(move || h.join()).await;
    }
    drop(tx);
    let _ = writer.await;
    Ok(())
}

/// The session's load once its driver is built (Ready sent), or None (the
/// error sent instead).
fn loaded(
    built: Result<Result<(Loaded, Option<String>), String>, tokio::sync::oneshot::error::RecvError>,
    threads: Option<u32>,
    no_pin: bool,
    tx: &mpsc::UnboundedSender<FromAgent>,
) -> Option<(Loaded, EngineOptions)> {
    match built.unwrap_or_else(|_| Err("the driver thread panicked".into())) {
        Ok((d, server)) => {
            let threads = threads.unwrap_or_else(scalelab_drive::cpu::allowed_cpus);
            let pin_cpus = scalelab_drive::engine::pin_plan(threads, no_pin);
            let opts = EngineOptions { pin_cpus, ..EngineOptions::new(threads) };
            let _ = tx.send(FromAgent::Ready { server, cores: scalelab_drive::cpu::allowed_cpus() });
            Some((d, opts))
        }
        Err(message) => {
            let _ = tx.send(FromAgent::Error { message });
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::driver;
    use scalelab_drive::http::HttpConfig;
    use std::time::Duration;

    #[test]
    fn the_session_refuses_another_origin_and_the_coordinators_source_addresses() {
        // Refused before any connection: nothing listens on port 1.
        let target = "http://127.0.0.1:1/";
        let mut config = HttpConfig::get("http://127.0.0.1:2/", Duration::from_millis(100));
        let err = driver(target, &config).err().unwrap();
        assert!(err.starts_with("refused: a request goes to http://127.0.0.1:2/"), "{err}");
        // An h2c:// target's requests are http:// on the same host and port.
        assert_eq!(super::only_the_target("h2c://127.0.0.1:2", &config), Ok(()));
        assert!(super::only_the_target("h2c://127.0.0.1:3", &config).unwrap_err().starts_with("refused: a request goes to"));
        config.requests[0].url = target.into();
        config.source_addrs = vec!["127.0.0.2".parse().unwrap()];
        let err = driver(target, &config).err().unwrap();
        assert_eq!(err, "refused: source addresses belong to the coordinator's host, not to an agent");
        // Through the frame, the config arrives whole.
        let frame = crate::proto::ToAgent::Load { target: target.into(), http: config, http2: None, threads: None, no_pin: false };
        let back: crate::proto::ToAgent = serde_json::from_str(&serde_json::to_string(&frame).unwrap()).unwrap();
        let crate::proto::ToAgent::Load { http, .. } = back else { panic!() };
        assert_eq!(
            (http.source_addrs.len(), http.timeout, http.expect),
            (1, Duration::from_millis(100), HttpConfig::get("", Duration::ZERO).expect)
        );
    }

    /// Over TCP a stranger (no token) learns nothing about the host: the
    /// hello carries no host name and no version; they come after the proof.
    #[tokio::test]
    async fn nothing_about_the_host_before_the_token_is_proven() {
        use crate::auth;
        use crate::proto::{read_frame, write_frame, FromAgent, ToAgent};
        let (token, ekm) = (b"9f1c2e7a5b3d4c6e8f0a1b2c3d4e5f60".to_vec(), vec![3u8; 32]);
        let (mut c_w, a_r) = tokio::io::duplex(1 << 16);
        let (a_w, mut c_r) = tokio::io::duplex(1 << 16);
        let proof = super::Proof { token: token.clone(), ekm: ekm.clone() };
        let agent =
            tokio::spawn(super::serve(Box::new(a_r), Box::new(a_w), Some(proof), crate::PROTOCOL, std::sync::Arc::new(|_: &str| {})));
        let c_nonce = auth::nonce();
        write_frame(&mut c_w, &ToAgent::Hello { protocol: crate::PROTOCOL, nonce: c_nonce.clone() }).await.unwrap();
        let Some((FromAgent::Hello { nonce: a_nonce, host, version, .. }, _)) = read_frame(&mut c_r).await.unwrap() else {
            panic!("a hello")
        };
        assert_eq!((host.as_str(), version.as_str()), ("", ""), "the hello names nothing before the proof");
        let mine = auth::proof(&token, "coordinator", &c_nonce, &a_nonce, &ekm);
        write_frame(&mut c_w, &ToAgent::Auth { proof: mine }).await.unwrap();
        let Some((FromAgent::Auth { host, version, .. }, _)) = read_frame(&mut c_r).await.unwrap() else { panic!("a proof") };
        assert!(!host.is_empty() && version == env!("CARGO_PKG_VERSION"), "after the proof: {host} {version}");
        write_frame(&mut c_w, &ToAgent::Bye).await.unwrap();
        drop(c_w);
        let _ = agent.await;
    }
}
