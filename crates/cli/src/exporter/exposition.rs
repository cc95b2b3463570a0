//! The exposition: what the exporter knows of the run as the metric
//! families of docs/metrics.md, built on the endpoint's (or the remote
//! writer's) thread each time it is asked.

use super::{Phase, State};
use scalelab_metrics::model::{Exposition, Family, Kind, LATENCY_BUCKETS_S};

impl State {
    /// The families of docs/metrics.md, in its order.
    pub(super) fn exposition(&self) -> Exposition {
        let mut e = Exposition::default();
        if self.run.is_empty() {
            return e;
        }
        let run = self.run.as_str();
        let base = [("run", run)];
        let mut f = Family::new("scalelab_run", Kind::Info, None, "The run: its kind, label and target (credentials removed).");
        f.add(
            &[("run", run), ("kind", &self.kind), ("label", &self.label), ("target", &self.target), ("version", env!("CARGO_PKG_VERSION"))],
            Some(1.0),
        );
        e.push(f);
        let mut f = Family::new(
            "scalelab_phase",
            Kind::Gauge,
            None,
            "1 for the phase the run is in (a sweep: idle, warmup, window, pause, done; watch: watching, done), 0 for the others.",
        );
        let phases: &[(Phase, &str)] = if self.kind == "watch" { &Phase::WATCH } else { &Phase::SWEEP };
        for &(p, name) in phases {
            f.add(&[("run", run), ("phase", name)], Some(if p == self.phase { 1.0 } else { 0.0 }));
        }
        e.push(f);
        let current = self.step.and_then(|i| self.steps.get(&i).map(|f| (i, f)));
        let mut f = Family::new("scalelab_step", Kind::Gauge, None, "The running (or last) step's index, from 0.");
        f.add(&base, current.map(|(i, _)| i as f64));
        e.push(f);
        let mut f =
            Family::new("scalelab_concurrency", Kind::Gauge, None, "The running step's clients (closed loop) or connections (open loop).");
        f.add(&base, current.map(|(_, s)| f64::from(s.concurrency)));
        e.push(f);
        let mut f = Family::new("scalelab_offered_rate_per_second", Kind::Gauge, None, "The running open-loop step's offered rate.");
        f.add(&base, current.and_then(|(_, s)| s.rate));
        e.push(f);

        let mut f = Family::new("scalelab_requests", Kind::Counter, None, "Requests (or transactions) completed, warm-ups included.");
        f.add(&base, Some((self.done_completed + self.live_completed) as f64));
        e.push(f);
        let mut req = Family::new(
            "scalelab_window_requests",
            Kind::Counter,
            None,
            "Completions inside a step's recorded window: live while it runs, the stored figure once it ends.",
        );
        let mut secs = Family::new(
            "scalelab_window_seconds",
            Kind::Counter,
            Some("seconds"),
            "Seconds of a step's recorded window so far: window_requests / window_seconds is its throughput.",
        );
        for (i, s) in &self.steps {
            let (step, conc) = (i.to_string(), s.concurrency.to_string());
            let labels = [("run", run), ("step", step.as_str()), ("concurrency", conc.as_str())];
            req.add(&labels, Some(s.window_requests as f64));
            secs.add(&labels, Some(s.window_s));
        }
        e.push(req);
        e.push(secs);
        let mut f =
            Family::new("scalelab_errors", Kind::Counter, None, "Failed requests of finished steps' windows, by class (docs/json.md).");
        for (class, n) in &self.errors {
            f.add(&[("run", run), ("class", class)], Some(*n as f64));
        }
        e.push(f);
        let mut f = Family::new("scalelab_step_errors", Kind::Gauge, None, "Failed requests so far in the running step (all classes).");
        f.add(&base, self.tick.as_ref().map(|t| t.errors as f64));
        e.push(f);
        let mut f = Family::new(
            "scalelab_dropped",
            Kind::Counter,
            None,
            "Open loop: requests never sent because every connection was out (finished steps).",
        );
        f.add(&base, self.dropped.map(|d| d as f64));
        e.push(f);
        let mut f = Family::new(
            "scalelab_late_sends",
            Kind::Counter,
            None,
            "Open loop: requests sent late with a connection free: the client fell behind (finished steps).",
        );
        f.add(&base, self.late_sends.map(|d| d as f64));
        e.push(f);
        let mut f = Family::new(
            "scalelab_latency_seconds",
            Kind::Histogram,
            Some("seconds"),
            "Latency of the completions in finished steps' windows.",
        );
        let mut buckets: Vec<(f64, u64)> =
            LATENCY_BUCKETS_S.iter().map(|&le| (le, self.latency.count_at_or_below_ns((le * 1e9) as u64))).collect();
        buckets.push((f64::INFINITY, self.latency.count()));
        f.add_histogram(&base, buckets, self.latency.count(), self.latency.sum_s());
        e.push(f);
        let mut f = Family::new(
            "scalelab_throughput_per_second",
            Kind::Gauge,
            None,
            "Completions per second over the last quarter second of the running step.",
        );
        f.add(&base, self.tick.as_ref().filter(|_| self.phase != Phase::Done).map(|t| t.throughput_per_s));
        e.push(f);
        let mut f = Family::new(
            "scalelab_latency_p50_seconds",
            Kind::Gauge,
            Some("seconds"),
            "Median latency of the last finished second of the running step's window.",
        );
        f.add(&base, self.tick.as_ref().and_then(|t| t.p50_ms).map(|ms| ms / 1000.0));
        e.push(f);
        let mut f = Family::new(
            "scalelab_latency_p99_seconds",
            Kind::Gauge,
            Some("seconds"),
            "99th percentile latency of the last finished second of the running step's window.",
        );
        f.add(&base, self.tick.as_ref().and_then(|t| t.p99_ms).map(|ms| ms / 1000.0));
        e.push(f);
        let mut f = Family::new(
            "scalelab_client_cpu_ratio",
            Kind::Gauge,
            Some("ratio"),
            "The load generator's CPU in the last finished step, share of its cores: near 1 it may be the limit.",
        );
        f.add(&base, self.client_cpu_ratio);
        e.push(f);
        let mut f = Family::new(
            "scalelab_client_lag_seconds",
            Kind::Gauge,
            Some("seconds"),
            "Worst lateness of the client's event loops in the last finished step.",
        );
        f.add(&base, self.client_lag_s);
        e.push(f);
        self.telemetry_families(&mut e, run);
        let mut f = Family::new(
            "scalelab_verdict",
            Kind::Info,
            None,
            "The run's verdicts once it is diagnosed at its end, by load level (clients, or offered rate): docs/verdicts.md.",
        );
        for (level, verdict, confidence) in &self.verdicts {
            let level = level.to_string();
            f.add(&[("run", run), ("level", &level), ("verdict", verdict), ("confidence", confidence)], Some(1.0));
        }
        e.push(f);
        e
    }

    /// The machine's, the server's and the database's figures of the last second.
    fn telemetry_families(&self, e: &mut Exposition, run: &str) {
        let iv = self.interval.as_ref();
        let base = [("run", run)];
        let ratio = |v: Option<f64>| v.map(|p| p / 100.0);
        let mut f = Family::new(
            "scalelab_cpu_ratio",
            Kind::Gauge,
            Some("ratio"),
            "The machine's CPU over the last second, share of all cores, by mode.",
        );
        for (mode, v) in [
            ("busy", iv.and_then(|i| i.cpu_busy_pct)),
            ("user", iv.and_then(|i| i.cpu_user_pct)),
            ("system", iv.and_then(|i| i.cpu_sys_pct)),
            ("iowait", iv.and_then(|i| i.cpu_iowait_pct)),
        ] {
            f.add(&[("run", run), ("mode", mode)], ratio(v));
        }
        e.push(f);
        let mut f =
            Family::new("scalelab_context_switches_per_second", Kind::Gauge, None, "The machine's context switches over the last second.");
        f.add(&base, iv.and_then(|i| i.cs_per_s));
        e.push(f);
        let mut f =
            Family::new("scalelab_server_cpu_cores", Kind::Gauge, None, "The server process tree's CPU over the last second, in cores.");
        f.add(&base, ratio(iv.and_then(|i| i.server_cpu_pct)));
        e.push(f);
        let mut f = Family::new(
            "scalelab_server_context_switches_per_second",
            Kind::Gauge,
            None,
            "The server's voluntary and involuntary context switches over the last second.",
        );
        f.add(&base, iv.and_then(|i| i.server_cs_per_s));
        e.push(f);
        let mut f = Family::new(
            "scalelab_server_threads_ratio",
            Kind::Gauge,
            Some("ratio"),
            "The server's thread states over the last second (running, runnable, futex, io, idle): futex is time blocked on locks.",
        );
        for (state, v) in [
            ("running", iv.and_then(|i| i.threads_running_pct)),
            ("runnable", iv.and_then(|i| i.threads_runnable_pct)),
            ("futex", iv.and_then(|i| i.threads_futex_pct)),
            ("io", iv.and_then(|i| i.threads_io_pct)),
            ("idle", iv.and_then(|i| i.threads_idle_pct)),
        ] {
            f.add(&[("run", run), ("state", state)], ratio(v));
        }
        e.push(f);
        let states = |t: &scalelab_core::sample::StateTimes| {
            use scalelab_core::sample::ThreadState as S;
            [("running", S::Running), ("runnable", S::Runnable), ("futex", S::Futex), ("io", S::Io), ("idle", S::Idle), ("other", S::Other)]
                .map(|(name, s)| (name, t.get(s) as f64 / 1e9))
        };
        let mut f = Family::new(
            "scalelab_server_thread_seconds",
            Kind::Counter,
            Some("seconds"),
            "The server's thread-time by state (running, runnable, futex, io, idle, other), summed over its threads: rate() of futex over the sum is the share blocked on locks.",
        );
        if self.threads.total_ns() > 0 {
            for (state, v) in states(&self.threads) {
                f.add(&[("run", run), ("state", state)], Some(v));
            }
        }
        e.push(f);
        let mut f = Family::new(
            "scalelab_window_thread_seconds",
            Kind::Counter,
            Some("seconds"),
            "The server's thread-time by state inside a step's recorded window: futex over the sum of states is the step's futex share.",
        );
        for (i, s) in self.steps.iter().filter(|(_, s)| s.window_threads.total_ns() > 0) {
            let (step, conc) = (i.to_string(), s.concurrency.to_string());
            for (state, v) in states(&s.window_threads) {
                f.add(&[("run", run), ("step", step.as_str()), ("concurrency", conc.as_str()), ("state", state)], Some(v));
            }
        }
        e.push(f);
        let mut f = Family::new("scalelab_tcp_time_wait_sockets", Kind::Gauge, None, "Sockets in TIME_WAIT toward the target.");
        f.add(&base, iv.and_then(|i| i.tcp_time_wait).map(|n| n as f64));
        e.push(f);
        let mut f = Family::new(
            "scalelab_listen_drops_per_second",
            Kind::Gauge,
            None,
            "Connections dropped by full listen queues over the last second (the machine's).",
        );
        f.add(&base, iv.and_then(|i| i.listen_drops_per_s));
        e.push(f);
        let mut f = Family::new("scalelab_disk_iops", Kind::Gauge, None, "Disk reads and writes per second over the last second.");
        f.add(&base, iv.and_then(|i| i.disk_iops));
        e.push(f);
        let mut f = Family::new(
            "scalelab_network_bytes_per_second",
            Kind::Gauge,
            None,
            "Bytes received and sent per second over the last second, all interfaces.",
        );
        f.add(&base, iv.and_then(|i| i.net_mb_per_s).map(|mb| mb * 1e6));
        e.push(f);
        let mut f = Family::new(
            "scalelab_db_wait_ratio",
            Kind::Gauge,
            Some("ratio"),
            "PostgreSQL: share of active backends waiting on each event (or on CPU) over the last second.",
        );
        if let Some(db) = iv.and_then(|i| i.db.as_ref()) {
            for w in &db.waits {
                f.add(&[("run", run), ("event", &w.wait)], Some(w.pct / 100.0));
            }
        }
        e.push(f);
    }
}
