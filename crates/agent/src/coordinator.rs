//! The coordinator's side: its agents connected (in parallel), each step
//! split across the load agents and started at the same instant on all of
//! them (each one's `start_at` in its own clock), their results merged,
//! a lost agent recorded, and the server agent's records handed over.

use crate::connect::{open_agent, AgentAddr, Opened, Reach};
use crate::merge::{split, AgentShare};
use crate::proto::{read_frame, write_frame, FromAgent, ToAgent};
use crate::records::from_wire;
use crate::serve::unix_us;
use scalelab_core::{LiveTick, StepPlan, StepResult};
use scalelab_probe::Record;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc as tmpsc;

/// What to do when a load agent is lost mid-run (`--agent-loss`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loss {
    /// The step is kept as partial and the run ends, incomplete.
    Abort,
    /// The step is kept as partial and the run goes on with the others.
    Continue,
}

/// What an agent is for in this run.
#[derive(Clone, Debug)]
pub enum Role {
    /// Sends load to `target` as `http` says; `http2`: as HTTP/2 with that
    /// many streams per connection.
    Load { target: String, http: scalelab_drive::http::HttpConfig, http2: Option<u32>, threads: Option<u32>, no_pin: bool },
    /// Sends SQL load to the database `target` as `sql` says.
    LoadSql { target: String, sql: crate::proto::SqlSpec, threads: Option<u32>, no_pin: bool },
    /// Redis load: the workload as the coordinator checked it.
    LoadRedis { target: String, redis: scalelab_drive::redis::RedisConfig, threads: Option<u32>, no_pin: bool },
    /// Runs the probes for the server on its host.
    Probe { server_pid: Option<u32>, port: Option<u16>, interval_ms: u64, thread_hz: f64, db: Option<String> },
}

/// One connected agent.
pub struct Link {
    /// As the user named it.
    pub name: String,
    /// Its host name, as it says.
    pub host: String,
    pub offset_us: i64,
    pub rtt_us: i64,
    pub cores: u32,
    /// What the target said it is, from this agent (load agents).
    pub server: Option<String>,
    /// Control bytes both ways.
    pub bytes: Arc<AtomicU64>,
    alive: bool,
    tx: tmpsc::UnboundedSender<ToAgent>,
    _child: Option<tokio::process::Child>,
}

enum Event {
    Frame(FromAgent),
    Lost(String),
}

/// The server agent's loss, seen by its reader as it happens (the sweep
/// may be running steps on this machine, not asking the coordinator).
#[derive(Default)]
struct ServerWatch {
    /// The step running (0-based), as the sweep says.
    step: AtomicUsize,
    /// The step at which it was lost, and why.
    lost: Mutex<Option<(usize, String)>>,
    /// The sweep's stop, raised on its loss with [`Loss::Abort`].
    stop: Mutex<Option<Arc<AtomicBool>>>,
    abort: bool,
    /// Bye was said: its channel closing is the end, not a loss.
    finishing: AtomicBool,
}

impl ServerWatch {
    fn lose(&self, why: String) {
        if self.finishing.load(Ordering::Relaxed) {
            return;
        }
        let mut lost = self.lost.lock().expect("not poisoned");
        if lost.is_none() {
            *lost = Some((self.step.load(Ordering::Relaxed), why));
        }
        if self.abort {
            if let Some(stop) = &*self.stop.lock().expect("not poisoned") {
                stop.store(true, Ordering::Relaxed);
            }
        }
    }
}

/// The connected agents of one run.
pub struct Coordinator {
    rt: tokio::runtime::Runtime,
    load: Vec<Link>,
    server: Option<Link>,
    events: mpsc::Receiver<(usize, Event)>,
    loss: Loss,
    /// Per step: which agent did what (JSON, for the run's options);
    /// shared so whoever stores the run can read it while a sweep runs.
    pub shares: Arc<Mutex<Vec<serde_json::Value>>>,
    /// The agents lost so far, with the step (0-based) and why.
    pub lost: Vec<(String, usize, String)>,
    /// The server agent's records, as they arrive (drained by the session).
    records: Arc<Mutex<Vec<Record>>>,
    steps_run: usize,
    watch: Arc<ServerWatch>,
    /// HTTP/2 streams per connection of the load (1 otherwise): steps are
    /// split among the agents in whole connections.
    streams: u32,
}

/// Index of the server agent in events.
const SERVER: usize = usize::MAX;

async fn setup(addr: AgentAddr, reach: Reach, role: Role) -> Result<(Opened, Option<String>, u32), String> {
    let mut o = open_agent(&addr, &reach).await?;
    let first = match role {
        Role::Load { target, http, http2, threads, no_pin } => ToAgent::Load { target, http, http2, threads, no_pin },
        Role::LoadSql { target, sql, threads, no_pin } => ToAgent::LoadSql { target, sql, threads, no_pin },
        Role::LoadRedis { target, redis, threads, no_pin } => ToAgent::LoadRedis { target, redis, threads, no_pin },
        Role::Probe { server_pid, port, interval_ms, thread_hz, db } => ToAgent::Probe { server_pid, port, interval_ms, thread_hz, db },
    };
    write_frame(&mut o.w, &first).await.map_err(|e| e.to_string())?;
    match tokio::time::timeout(Duration::from_secs(60), read_frame::<_, FromAgent>(&mut o.r)).await {
        Ok(Ok(Some((FromAgent::Ready { server, cores }, _)))) => Ok((o, server, cores)),
        Ok(Ok(Some((FromAgent::Error { message } | FromAgent::Refused { message }, _)))) => Err(message),
        Ok(Ok(_)) => Err("the agent closed the session while setting up".into()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the agent was not ready within 60 s".into()),
    }
}

impl Coordinator {
    /// Connects every agent (`load` with their role, then the `server`
    /// agent) in parallel. Err: one line naming the agent and why.
    pub fn connect(load: &[(String, Role)], server: Option<(String, Role)>, reach: &Reach, loss: Loss) -> Result<Coordinator, String> {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().map_err(|e| e.to_string())?;
        let all: Vec<(String, Role)> = load.iter().cloned().chain(server).collect();
        let mut addrs = Vec::new();
        for (name, role) in &all {
            addrs.push((name.clone(), AgentAddr::parse(name)?, role.clone()));
        }
        let handles: Vec<_> = addrs.into_iter().map(|(_, a, role)| rt.spawn(setup(a, reach.clone(), role))).collect();
        let (ev_tx, events) = mpsc::channel();
        let records: Arc<Mutex<Vec<Record>>> = Arc::default();
        let watch = Arc::new(ServerWatch { abort: loss == Loss::Abort, ..Default::default() });
        let mut links = Vec::new();
        for ((name, _), h) in all.iter().zip(handles) {
            let (o, server, cores) = rt
                .block_on(h)
                .map_err(|e| format!("agent {name}: {e}"))?
                .map_err(|e| format!("agent {}: {}", scalelab_core::escape_control(name), scalelab_core::escape_control(&e)))?;
            let idx = if links.len() < load.len() { links.len() } else { SERVER };
            let w = (idx == SERVER).then(|| watch.clone());
            links.push(Self::run_link(&rt, (idx, name.clone()), o, (server, cores), ev_tx.clone(), records.clone(), w));
        }
        let server = (links.len() > load.len()).then(|| links.pop()).flatten();
        let streams = load.iter().find_map(|(_, r)| if let Role::Load { http2, .. } = r { *http2 } else { None }).unwrap_or(1);
        Ok(Coordinator {
            rt,
            load: links,
            server,
            events,
            loss,
            shares: Arc::default(),
            lost: Vec::new(),
            records,
            steps_run: 0,
            watch,
            streams,
        })
    }

    fn run_link(
        rt: &tokio::runtime::Runtime,
        (idx, name): (usize, String),
        o: Opened,
        (server, cores): (Option<String>, u32),
        ev: mpsc::Sender<(usize, Event)>,
        records: Arc<Mutex<Vec<Record>>>,
        watch: Option<Arc<ServerWatch>>,
    ) -> Link {
        let Opened { mut r, mut w, host, offset_us, rtt_us, child, stderr } = o;
        let bytes = Arc::new(AtomicU64::new(0));
        let (tx, mut rx) = tmpsc::unbounded_channel::<ToAgent>();
        let counted = bytes.clone();
        rt.spawn(async move {
            while let Some(m) = rx.recv().await {
                match write_frame(&mut w, &m).await {
                    Ok(n) => counted.fetch_add(n as u64, Ordering::Relaxed),
                    Err(_) => break,
                };
            }
        });
        let counted = bytes.clone();
        let named = name.clone();
        rt.spawn(async move {
            let why = loop {
                match read_frame::<_, FromAgent>(&mut r).await {
                    Ok(Some((FromAgent::Records { records: r }, n))) => {
                        counted.fetch_add(n as u64, Ordering::Relaxed);
                        // Onto the coordinator's clock.
                        let r = r.iter().filter_map(|v| from_wire(v, offset_us / 1000));
                        records.lock().expect("not poisoned").extend(r);
                    }
                    Ok(Some((f, n))) => {
                        counted.fetch_add(n as u64, Ordering::Relaxed);
                        if ev.send((idx, Event::Frame(f))).is_err() {
                            return;
                        }
                    }
                    Ok(None) => break "the control channel closed".to_string(),
                    Err(e) => break e.to_string(),
                }
            };
            // ssh's last words, if any, say more than a closed pipe.
            let last = stderr.get().await;
            let why = if last.is_empty() { why } else { format!("{why} ({})", scalelab_core::escape_control(&last)) };
            if let Some(w) = watch.filter(|w| !w.finishing.load(Ordering::Relaxed)) {
                // Told to the telemetry now: the sweep may not ask the coordinator before its end.
                let note = format!("server agent {named} lost: {why}");
                records.lock().expect("not poisoned").push(Record::Unavailable(scalelab_core::Source::Process, note));
                w.lose(why.clone());
            }
            let _ = ev.send((idx, Event::Lost(why)));
        });
        Link { name, host, offset_us, rtt_us, cores, server, bytes, alive: true, tx, _child: child }
    }

    /// The load agents, in order.
    pub fn load_agents(&self) -> &[Link] {
        &self.load
    }

    /// The server agent, if any.
    pub fn server_agent(&self) -> Option<&Link> {
        self.server.as_ref()
    }

    /// Step `index` (0-based) starts: a server agent lost from now on is
    /// lost at this step.
    pub fn step_started(&self, index: usize) {
        self.watch.step.store(index, Ordering::Relaxed);
    }

    /// The sweep's stop, raised when the server agent is lost and the
    /// run aborts on a loss (`--agent-loss abort`).
    pub fn stop_on_loss(&self, stop: Arc<AtomicBool>) {
        *self.watch.stop.lock().expect("not poisoned") = Some(stop.clone());
        if self.watch.abort && self.watch.lost.lock().expect("not poisoned").is_some() {
            stop.store(true, Ordering::Relaxed);
        }
    }

    /// The server agent, if it was lost: its name, the step (0-based) and why.
    pub fn server_lost(&self) -> Option<(String, usize, String)> {
        let lost = self.watch.lost.lock().expect("not poisoned").clone()?;
        Some((self.server.as_ref().map(|s| s.name.clone()).unwrap_or_default(), lost.0, lost.1))
    }

    /// Where the server agent's records arrive, for the session to drain.
    pub fn records(&self) -> Arc<Mutex<Vec<Record>>> {
        self.records.clone()
    }

    /// An event outside a step's bookkeeping: records, or the server agent lost.
    fn handle_other(&mut self, i: usize, e: Event) {
        match (i, e) {
            (SERVER, Event::Lost(_)) => {
                // Its loss was recorded by its reader (ServerWatch).
                if let Some(s) = self.server.as_mut() {
                    s.alive = false;
                }
            }
            (i, Event::Lost(why)) if i < self.load.len() && self.load[i].alive => {
                self.load[i].alive = false;
                self.lost.push((self.load[i].name.clone(), self.steps_run, why));
            }
            _ => {}
        }
    }

    /// Runs step `index` on the live load agents and merges their results.
    /// `stop` (SIGINT) cuts the step on every agent; a lost agent marks the
    /// step partial, and with [`Loss::Abort`] raises `stop` so the sweep ends.
    pub fn run_step(&mut self, index: usize, plan: &StepPlan, stop: &AtomicBool, live: &mut dyn FnMut(&LiveTick)) -> StepResult {
        while let Ok((i, e)) = self.events.try_recv() {
            self.handle_other(i, e);
        }
        self.step_started(index);
        let alive: Vec<usize> = (0..self.load.len()).filter(|&i| self.load[i].alive).collect();
        let plans = split(plan, alive.len(), self.streams);
        let max_rtt = alive.iter().map(|&i| self.load[i].rtt_us).max().unwrap_or(0);
        let start = unix_us() + 300_000 + 2 * max_rtt;
        let mut pending: BTreeMap<usize, u32> = BTreeMap::new();
        for (&i, p) in alive.iter().zip(&plans) {
            if let Some(p) = p {
                let link = &self.load[i];
                let _ = link.tx.send(ToAgent::Step { index, plan: p.clone(), start_at_unix_us: start + link.offset_us });
                pending.insert(i, p.concurrency);
            }
        }
        let deadline = Instant::now() + Duration::from_millis(300) + plan.warmup() + plan.window() + Duration::from_secs(30);
        let mut ticks: BTreeMap<usize, LiveTick> = BTreeMap::new();
        let mut parts: Vec<(usize, StepResult)> = Vec::new();
        let mut lost_now: Vec<(usize, u32)> = Vec::new();
        let (mut stopped, mut last_live) = (false, Instant::now());
        while !pending.is_empty() {
            if stop.load(Ordering::Relaxed) && !stopped {
                for &i in pending.keys() {
                    let _ = self.load[i].tx.send(ToAgent::Stop);
                }
                stopped = true;
            }
            let mut lose = |s: &mut Self, i: usize, why: String, pending: &mut BTreeMap<usize, u32>| {
                if let Some(c) = pending.remove(&i) {
                    lost_now.push((i, c));
                }
                if s.load[i].alive {
                    s.load[i].alive = false;
                    s.lost.push((s.load[i].name.clone(), index, why));
                }
            };
            match self.events.recv_timeout(Duration::from_millis(50)) {
                Ok((i, Event::Frame(FromAgent::Tick { index: j, tick }))) if j == index => {
                    ticks.insert(i, tick);
                }
                Ok((i, Event::Frame(FromAgent::StepDone { index: j, result }))) if j == index && pending.contains_key(&i) => {
                    let mut r = *result;
                    r.shift_clock(self.load[i].offset_us / 1000);
                    pending.remove(&i);
                    parts.push((i, r));
                }
                Ok((i, Event::Frame(FromAgent::Error { message }))) if i < self.load.len() => lose(self, i, message, &mut pending),
                Ok((i, Event::Lost(why))) if i < self.load.len() => lose(self, i, why, &mut pending),
                Ok((i, e)) => self.handle_other(i, e),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if Instant::now() > deadline {
                for i in pending.keys().copied().collect::<Vec<_>>() {
                    lose(self, i, "no result 30 s after the step's end".into(), &mut pending);
                }
            }
            if last_live.elapsed() >= Duration::from_millis(250) && !ticks.is_empty() {
                live(&LiveTick {
                    elapsed_s: ticks.values().map(|t| t.elapsed_s).fold(0.0, f64::max),
                    warming_up: ticks.values().any(|t| t.warming_up),
                    throughput_per_s: ticks.values().map(|t| t.throughput_per_s).sum(),
                    errors: ticks.values().map(|t| t.errors).sum(),
                    p50_ms: None,
                    // The live view's p99 is the worst agent's; the stored step's is the merged histogram's.
                    p99_ms: ticks.values().filter_map(|t| t.p99_ms).reduce(f64::max),
                    completed: ticks.values().map(|t| t.completed).sum(),
                    window_completed: ticks.values().map(|t| t.window_completed).sum(),
                });
                last_live = Instant::now();
            }
        }
        parts.sort_by_key(|(i, _)| *i);
        let results: Vec<StepResult> = parts.iter().map(|(_, r)| r.clone()).collect();
        let merged = StepResult::merge(plan.concurrency, &results, !lost_now.is_empty());
        let mut shares: Vec<(usize, AgentShare)> = parts.iter().map(|(i, r)| (*i, AgentShare::of(&self.load[*i].name, r))).collect();
        shares.extend(lost_now.iter().map(|&(i, c)| (i, AgentShare::lost(&self.load[i].name, c))));
        shares.sort_by_key(|(i, _)| *i);
        let shares: Vec<AgentShare> = shares.into_iter().map(|(_, s)| s).collect();
        self.shares.lock().expect("not poisoned").push(serde_json::json!({ "step": index, "agents": shares }));
        self.steps_run = index + 1;
        let none_left = !self.load.iter().any(|l| l.alive);
        if !lost_now.is_empty() && (self.loss == Loss::Abort || none_left) {
            stop.store(true, Ordering::Relaxed);
        }
        merged
    }

    /// Ends every session (bye), waiting up to a second for the agents to
    /// close; returns the server agent's last records.
    pub fn finish(mut self) -> Vec<Record> {
        self.watch.finishing.store(true, Ordering::Relaxed);
        for l in self.load.iter().chain(self.server.iter()).filter(|l| l.alive) {
            let _ = l.tx.send(ToAgent::Bye);
        }
        let until = Instant::now() + Duration::from_secs(1);
        while self.load.iter().chain(self.server.iter()).any(|l| l.alive) && Instant::now() < until {
            if let Ok((i, e)) = self.events.recv_timeout(Duration::from_millis(50)) {
                match (i, e) {
                    (SERVER, Event::Lost(_)) => {
                        if let Some(s) = self.server.as_mut() {
                            s.alive = false;
                        }
                    }
                    (i, Event::Lost(_)) if i < self.load.len() => self.load[i].alive = false,
                    (i, e) => self.handle_other(i, e),
                }
            }
        }
        let Coordinator { rt, load, server, records, .. } = self;
        drop((load, server));
        rt.shutdown_timeout(Duration::from_millis(200));
        let last = std::mem::take(&mut *records.lock().expect("not poisoned"));
        last
    }
}
