//! The server's host (`--server-agent`): the same
//! [`Collector`](scalelab_probe::Collector) the coordinator runs locally,
//! here on the agent, its typed records sent as they come (a sample as its
//! kind and stored JSON, a note as its source and why), and read back into
//! the same typed records by the coordinator.

use crate::proto::FromAgent;
use scalelab_core::{Sample, SampleKind, Source};
use scalelab_probe::{Collector, CollectorConfig, Record};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;

/// A record as a frame's element.
pub fn to_wire(r: &Record) -> Option<Value> {
    match r {
        Record::Sample(s) => Some(json!({ "kind": s.kind().name(), "json": s.to_json().ok()? })),
        Record::Unavailable(src, why) => Some(json!({ "unavailable": src.name(), "why": why })),
    }
}

/// A frame's element as the record it was, its time moved by `offset_ms`
/// (agent clock minus coordinator clock); None for what this build does not know.
pub fn from_wire(v: &Value, offset_ms: i64) -> Option<Record> {
    if let Some(src) = v.get("unavailable").and_then(Value::as_str) {
        return Some(Record::Unavailable(Source::from_name(src)?, v.get("why")?.as_str()?.to_string()));
    }
    let kind = SampleKind::from_name(v.get("kind")?.as_str()?)?;
    let mut sample = Sample::from_json(kind, v.get("json")?.as_str()?).ok()?;
    sample.shift_clock(offset_ms);
    Some(Record::Sample(sample))
}

/// The probes running on the agent, and the thread that sends their records.
pub struct Probing {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

impl Probing {
    /// Starts collecting for the server `server_pid`, or the process that
    /// listens on `port` on this host; returns the probing and this host's cores.
    pub fn start(
        server_pid: Option<u32>,
        port: Option<u16>,
        (interval_ms, thread_hz): (u64, f64),
        db: Option<&str>,
        tx: UnboundedSender<FromAgent>,
    ) -> Result<(Probing, u32), String> {
        let db = db.map(scalelab_probe::collect::parse_url).transpose()?;
        let target =
            port.map(|p| scalelab_core::Target::parse(&format!("http://127.0.0.1:{p}/"))).transpose().map_err(|e| e.to_string())?;
        let pid = scalelab_probe::server_pid(target.as_ref(), None, server_pid);
        let mut first = Vec::new();
        if let Err(why) = &pid {
            first.push(Record::Unavailable(Source::Process, format!("server process not found on the server agent: {why}")));
        }
        let collector = Collector::start(CollectorConfig {
            server_pid: pid.ok(),
            interval: Duration::from_millis(interval_ms.max(100)),
            thread_hz,
            db,
            specimen: None,
            redis: None,
        });
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let send = |records: Vec<Record>| {
                let records: Vec<Value> = records.iter().filter_map(to_wire).collect();
                if !records.is_empty() {
                    let _ = tx.send(FromAgent::Records { records });
                }
            };
            send(first);
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(250));
                send(collector.drain());
            }
            send(collector.stop());
        });
        Ok((Probing { stop, handle }, scalelab_drive::cpu::allowed_cpus()))
    }

    /// Stops the probes after sending their last records.
    pub fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.handle.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalelab_core::sample::DbSample;

    #[test]
    fn a_server_agents_samples_move_onto_this_clock_wait_chunks_included() {
        // The agent's clock 2 s ahead: a PostgreSQL wait chunk of the span
        // 1.000-1.250 s on the agent's clock is -1.000 to -0.750 s here,
        // its start moved with its end (it was left behind before).
        let chunk = DbSample { unix_ms: 1_250, engine: "postgres".into(), since_unix_ms: Some(1_000), ..Default::default() };
        let wire = to_wire(&Record::Sample(Sample::Db(Box::new(chunk)))).unwrap();
        let Some(Record::Sample(Sample::Db(back))) = from_wire(&wire, 2_000) else { panic!("a db sample back") };
        assert_eq!((back.since_unix_ms, back.unix_ms), (Some(-1_000), -750));
        // Every kind is moved by the same method.
        let mut threads = Sample::Threads(Default::default());
        threads.shift_clock(2_000);
        assert_eq!(threads.unix_ms(), -2_000);
    }
}
