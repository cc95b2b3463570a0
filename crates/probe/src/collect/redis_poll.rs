//! The Redis poller of a `Collector`: its own thread and connection (never
//! one of the load clients) reads `INFO` and `SLOWLOG LEN` every second
//! into a [`DbSample`] of engine `redis`. A connection that cannot be
//! opened, or is lost, is one `unavailable` note ([`Source::Db`]) and the
//! probe ends; the sweep goes on.

use super::record::{unix_ms, Record};
use crate::db::redis::parse_redis_info;
use crate::db::DbSample;
use scalelab_core::{Sample, Source};
use scalelab_wire::resp::{RedisUrl, RespConn};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Limit for connecting and for each command of the probe.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Starts the poller; it stops when `stop` is set or the connection is lost.
pub fn start(url: RedisUrl, tx: Sender<Record>, stop: Arc<AtomicBool>) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("scalelab-redis-probe".into())
        .spawn(move || {
            if let Err(why) = scalelab_wire::runtime().block_on(poll(&url, &tx, &stop)) {
                let _ = tx.send(Record::Unavailable(Source::Db, why));
            }
        })
        .expect("spawning the Redis probe thread")
}

/// One reading a second until `stop`; the error says why it ended early.
async fn poll(url: &RedisUrl, tx: &Sender<Record>, stop: &AtomicBool) -> Result<(), String> {
    let in_time = |what: &'static str| move |_| format!("{}: {what} took over {} s", url.redacted, TIMEOUT.as_secs());
    let mut c = tokio::time::timeout(TIMEOUT, RespConn::connect(url, TIMEOUT, false))
        .await
        .map_err(in_time("connecting"))?
        .map_err(|f| format!("cannot connect to {}: {}", url.redacted, f.message))?;
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let lost = |f: scalelab_core::Failure| format!("{}: {}", url.redacted, f.message);
        let text = tokio::time::timeout(TIMEOUT, c.query_text(&[b"INFO", b"all"])).await.map_err(in_time("INFO"))?.map_err(lost)?;
        let mut info = parse_redis_info(&text);
        let slow = tokio::time::timeout(TIMEOUT, c.query_text(&[b"SLOWLOG", b"LEN"])).await.map_err(in_time("SLOWLOG LEN"))?;
        info.slowlog_len = slow.ok().and_then(|s| s.trim().trim_start_matches(':').parse().ok());
        let sample = DbSample { unix_ms: unix_ms(), engine: "redis".into(), redis: Some(info), ..Default::default() };
        if tx.send(Record::Sample(Sample::Db(Box::new(sample)))).is_err() {
            return Ok(());
        }
        next += Duration::from_secs(1);
        // Sleep in short slices so that a stop is seen within 50 ms.
        while Instant::now() < next && !stop.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(50).min(next.saturating_duration_since(Instant::now()))).await;
        }
    }
    Ok(())
}
