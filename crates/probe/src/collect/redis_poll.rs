//! The Redis poller of a `Collector`: its own thread and connection (never
//! one of the load clients) reads `INFO`, `SLOWLOG LEN` and `LATENCY
//! LATEST` every second, and once more when stopped so that the last
//! step has a reading at its end (and the latency monitor's threshold
//! once), into a [`DbSample`] of engine `redis`. A connection that cannot be
//! opened, or is lost, is one `unavailable` note ([`Source::Db`]) and the
//! probe ends; the sweep goes on.

use super::record::{unix_ms, Record};
use crate::db::redis::parse_redis_info;
use crate::db::DbSample;
use scalelab_core::sample::RedisLatencyEvent;
use scalelab_core::{Sample, Source};
use scalelab_wire::resp::{RedisUrl, Reply, RespConn};
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

/// One reading a second until `stop`, then a closing one; the error says
/// why it ended early.
async fn poll(url: &RedisUrl, tx: &Sender<Record>, stop: &AtomicBool) -> Result<(), String> {
    let in_time = |what: &'static str| move |_| format!("{}: {what} took over {} s", url.redacted, TIMEOUT.as_secs());
    let mut c = tokio::time::timeout(TIMEOUT, RespConn::connect(url, TIMEOUT, false))
        .await
        .map_err(in_time("connecting"))?
        .map_err(|f| format!("cannot connect to {}: {}", url.redacted, f.message))?;
    // Read once: LATENCY LATEST stays empty while the threshold is 0.
    let threshold = tokio::time::timeout(TIMEOUT, c.query(&[b"CONFIG", b"GET", b"latency-monitor-threshold"])).await;
    let latency_threshold_ms = match threshold {
        Ok(Ok(r)) => config_value(&r),
        _ => None,
    };
    let mut next = Instant::now();
    loop {
        // Seen before the reading: a stop ends the loop after one closing reading.
        let last = stop.load(Ordering::Relaxed);
        let lost = |f: scalelab_core::Failure| format!("{}: {}", url.redacted, f.message);
        let text = tokio::time::timeout(TIMEOUT, c.query_text(&[b"INFO", b"all"])).await.map_err(in_time("INFO"))?.map_err(lost)?;
        let mut info = parse_redis_info(&text);
        let slow = tokio::time::timeout(TIMEOUT, c.query_text(&[b"SLOWLOG", b"LEN"])).await.map_err(in_time("SLOWLOG LEN"))?;
        info.slowlog_len = slow.ok().and_then(|s| s.trim().trim_start_matches(':').parse().ok());
        let latest = tokio::time::timeout(TIMEOUT, c.query(&[b"LATENCY", b"LATEST"])).await.map_err(in_time("LATENCY LATEST"))?;
        // An error reply (the command renamed away, an ACL) leaves it unknown.
        info.latency_latest = latest.ok().and_then(|r| latency_events(&r));
        info.latency_threshold_ms = latency_threshold_ms;
        let sample = DbSample { unix_ms: unix_ms(), engine: "redis".into(), redis: Some(info), ..Default::default() };
        if tx.send(Record::Sample(Sample::Db(Box::new(sample)))).is_err() || last {
            return Ok(());
        }
        next += Duration::from_secs(1);
        // Sleep in short slices so that a stop is seen within 50 ms.
        while Instant::now() < next && !stop.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(50).min(next.saturating_duration_since(Instant::now()))).await;
        }
    }
}

/// The value of a `CONFIG GET name` reply (`[name, value]`, or a RESP3 map).
fn config_value(r: &Reply) -> Option<u64> {
    match r {
        Reply::List(kv) => match kv.get(1)? {
            Reply::Text(v) => v.parse().ok(),
            Reply::Int(v) => u64::try_from(*v).ok(),
            _ => None,
        },
        _ => None,
    }
}

/// `LATENCY LATEST`'s rows: `[event, unix seconds, latest ms, max ms]`.
/// None when the reply has another shape.
fn latency_events(r: &Reply) -> Option<Vec<RedisLatencyEvent>> {
    let Reply::List(rows) = r else { return None };
    rows.iter()
        .map(|row| match row {
            Reply::List(f) => match f.as_slice() {
                [Reply::Text(event), Reply::Int(at), Reply::Int(latest), Reply::Int(max), ..] => Some(RedisLatencyEvent {
                    event: event.clone(),
                    latest_unix_s: *at,
                    latest_ms: u64::try_from(*latest).ok()?,
                    max_ms: u64::try_from(*max).ok()?,
                }),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_latest_and_the_threshold_are_read_from_their_replies() {
        let row = |e: &str, at, l, m| Reply::List(vec![Reply::Text(e.into()), Reply::Int(at), Reply::Int(l), Reply::Int(m)]);
        let r = Reply::List(vec![row("command", 1_700_000_000, 250, 1000), row("fork", 1_700_000_001, 12, 12)]);
        let ev = latency_events(&r).unwrap();
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[0], RedisLatencyEvent { event: "command".into(), latest_unix_s: 1_700_000_000, latest_ms: 250, max_ms: 1000 });
        assert_eq!(latency_events(&Reply::List(vec![])), Some(vec![]));
        assert_eq!(latency_events(&Reply::List(vec![Reply::Int(3)])), None);
        assert_eq!(latency_events(&Reply::Text("x".into())), None);
        let kv = |v: Reply| Reply::List(vec![Reply::Text("latency-monitor-threshold".into()), v]);
        assert_eq!(config_value(&kv(Reply::Text("100".into()))), Some(100));
        assert_eq!(config_value(&kv(Reply::Int(0))), Some(0));
        assert_eq!(config_value(&Reply::List(vec![])), None);
    }
}
