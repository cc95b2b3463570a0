//! Writing runs step by step and reading them back.

use crate::{Store, StoreError};
use rusqlite::{named_params, params, OptionalExtension};
use scalelab_core::{
    ErrorCounts, LatencyHistogram, Record, Run, RunKind, RunPlan, RunSamples, RunSummary, Sample, SampleKind, SecondResult, Source,
    StepResult,
};
use std::time::{SystemTime, UNIX_EPOCH};

/// How a user names a run: `last`, an id, or a label.
#[derive(Clone, Debug, PartialEq)]
pub enum RunSelector {
    Last,
    Id(i64),
    Label(String),
}

impl RunSelector {
    /// `last` → Last, digits → Id, anything else → Label.
    pub fn parse(text: &str) -> RunSelector {
        if text == "last" {
            RunSelector::Last
        } else if let Ok(id) = text.parse::<i64>() {
            RunSelector::Id(id)
        } else {
            RunSelector::Label(text.to_string())
        }
    }
}

/// Records [`Store::add_records`] could not store: how many, and the first reason.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("{records} record(s) could not be stored: {why}")]
pub struct NotStored {
    pub records: u64,
    pub why: String,
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

impl Store {
    /// Records a new run before its first step; it stays incomplete until
    /// [`Store::finish_run`].
    pub fn begin_run(
        &self,
        kind: RunKind,
        plan: &RunPlan,
        env: &scalelab_core::Environment,
        source: Option<&str>,
    ) -> Result<i64, StoreError> {
        let plan_json = serde_json::to_string(plan).expect("plans serialize");
        let env_json = serde_json::to_string(env).expect("environments serialize");
        self.conn
            .execute(
                "INSERT INTO runs(kind, label, target, workload, started_unix_ms, complete, plan_json, environment_json, source)
                 VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6, ?7, ?8)",
                params![kind.name(), plan.label, plan.target, plan.workload, now_ms(), plan_json, env_json, source],
            )
            .map_err(|e| self.sql(e))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Commits one finished step (and its per-second series) in one transaction.
    pub fn add_step(&mut self, run_id: i64, idx: usize, step: &StepResult) -> Result<(), StoreError> {
        let path = self.path.clone();
        let sql = |cause| StoreError::Sql { path: path.clone(), cause };
        let tx = self.conn.transaction().map_err(sql)?;
        let errors_json = serde_json::to_string(&step.errors).expect("error counts serialize");
        let hdr = (!step.latency.is_empty()).then(|| step.latency.to_bytes());
        let connect_hdr = (!step.connect_latency.is_empty()).then(|| step.connect_latency.to_bytes());
        let statements_json =
            (!step.statements.is_empty()).then(|| serde_json::to_string(&step.statements).expect("statement latencies serialize"));
        // Columns by name, never by position: a column added in the middle
        // cannot shift the others.
        tx.execute(
            "INSERT INTO steps(run_id, idx, concurrency, window_s, window_start_unix_ms, window_end_unix_ms, requests, queries, errors_json, latency_hdr, client_cpu_s, client_cores, reconnects, connect_ms, partial, published_throughput_per_s, client_lag_ms, client_runq_wait_pct, statements_json, offered_rate_per_s, service_hdr, dropped, late_sends, connect_hdr, clients_json, flow_stalls, flow_stall_ms, client_poll_idle_s)
             VALUES (:run_id, :idx, :concurrency, :window_s, :window_start_unix_ms, :window_end_unix_ms, :requests, :queries, :errors_json, :latency_hdr, :client_cpu_s, :client_cores, :reconnects, :connect_ms, :partial, :published_throughput_per_s, :client_lag_ms, :client_runq_wait_pct, :statements_json, :offered_rate_per_s, :service_hdr, :dropped, :late_sends, :connect_hdr, :clients_json, :flow_stalls, :flow_stall_ms, :client_poll_idle_s)",
            named_params! {
                ":run_id": run_id,
                ":idx": idx as i64,
                ":concurrency": step.concurrency,
                ":window_s": step.window_s,
                ":window_start_unix_ms": step.window_start_unix_ms,
                ":window_end_unix_ms": step.window_end_unix_ms,
                ":requests": step.requests as i64,
                ":queries": step.queries as i64,
                ":errors_json": errors_json,
                ":latency_hdr": hdr,
                ":client_cpu_s": (step.client_cores > 0).then_some(step.client_cpu_s),
                ":client_cores": (step.client_cores > 0).then_some(step.client_cores),
                ":reconnects": step.reconnects as i64,
                ":connect_ms": step.connect_ms,
                ":partial": step.partial,
                ":published_throughput_per_s": step.published_throughput_per_s,
                ":client_lag_ms": step.client_lag_ms,
                ":client_runq_wait_pct": step.client_runq_wait_pct,
                ":statements_json": statements_json,
                ":offered_rate_per_s": step.offered_rate_per_s,
                ":service_hdr": step.service.as_ref().map(|h| h.to_bytes()),
                ":dropped": step.dropped.map(|n| n as i64),
                ":late_sends": step.late_sends.map(|n| n as i64),
                ":connect_hdr": connect_hdr,
                ":clients_json": step.clients.map(|c| serde_json::to_string(&c).expect("a client spread serializes")),
                ":flow_stalls": step.flow_stalls.map(|n| n as i64),
                ":flow_stall_ms": step.flow_stall_ms,
                ":client_poll_idle_s": step.client_poll_idle_s,
            },
        )
        .map_err(sql)?;
        {
            let mut stmt = tx
                .prepare(
                    "INSERT INTO step_seconds(run_id, step_idx, second, requests, errors, latency_hdr, service_hdr)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .map_err(sql)?;
            for s in &step.seconds {
                let hdr = (!s.latency.is_empty()).then(|| s.latency.to_bytes());
                let service = (!s.service.is_empty()).then(|| s.service.to_bytes());
                stmt.execute(params![run_id, idx as i64, s.second, s.requests as i64, s.errors as i64, hdr, service]).map_err(sql)?;
            }
        }
        tx.commit().map_err(sql)
    }

    /// Closes a run: `complete` only when every planned step finished.
    pub fn finish_run(&self, run_id: i64, complete: bool, outcome: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET complete = ?2, outcome = ?3, finished_unix_ms = ?4 WHERE id = ?1",
                params![run_id, complete, outcome, now_ms()],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// Replaces a run's plan (a capacity search records what it found in
    /// the plan's options once it knows).
    pub fn update_plan(&self, run_id: i64, plan: &RunPlan) -> Result<(), StoreError> {
        let plan_json = serde_json::to_string(plan).expect("plans serialize");
        self.conn.execute("UPDATE runs SET plan_json = ?2 WHERE id = ?1", params![run_id, plan_json]).map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// Stores the JSON report of a micro-benchmark run.
    pub fn save_micro_report(&self, run_id: i64, report_json: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO micro_reports(run_id, report_json) VALUES (?1, ?2)
                 ON CONFLICT(run_id) DO UPDATE SET report_json = excluded.report_json",
                params![run_id, report_json],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// The JSON report of a micro-benchmark run, if `run_id` is one.
    pub fn load_micro_report(&self, run_id: i64) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row("SELECT report_json FROM micro_reports WHERE run_id = ?1", [run_id], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))
    }

    /// Stores a collector's records, the store's typed write side: samples
    /// in one transaction (a row each: their time, kind and the reading as
    /// JSON), notes by source (the latest reason kept). Every record is
    /// tried; the error counts those that could not be stored, and why.
    pub fn add_records(&mut self, run_id: i64, records: &[Record]) -> Result<(), NotStored> {
        let mut lost = NotStored { records: 0, why: String::new() };
        let mut fail = |n: u64, why: String| {
            lost.records += n;
            if lost.why.is_empty() {
                lost.why = why;
            }
        };
        let mut rows = Vec::with_capacity(records.len());
        for r in records {
            match r {
                Record::Sample(s) => match s.to_json() {
                    Ok(json) => rows.push((s.unix_ms(), s.kind().name(), json)),
                    Err(e) => fail(1, e.to_string()),
                },
                Record::Unavailable(source, why) => {
                    if let Err(e) = self.add_probe_note(run_id, source.name(), why) {
                        fail(1, e.to_string());
                    }
                }
            }
        }
        if let Err(e) = self.add_samples(run_id, &rows) {
            fail(rows.len() as u64, e.to_string());
        }
        if lost.records > 0 {
            Err(lost)
        } else {
            Ok(())
        }
    }

    /// Stores raw sample rows `(unix_ms, kind, json)` in one transaction:
    /// what [`Store::add_records`] writes, open for tests of rows as older
    /// versions wrote them. Everything else writes records.
    pub fn add_samples(&mut self, run_id: i64, samples: &[(i64, &str, String)]) -> Result<(), StoreError> {
        if samples.is_empty() {
            return Ok(());
        }
        let path = self.path.clone();
        let sql = |cause| StoreError::Sql { path: path.clone(), cause };
        let tx = self.conn.transaction().map_err(sql)?;
        {
            let mut stmt = tx.prepare_cached("INSERT INTO samples(run_id, unix_ms, kind, json) VALUES (?1, ?2, ?3, ?4)").map_err(sql)?;
            for (at, kind, json) in samples {
                stmt.execute(params![run_id, at, kind, json]).map_err(sql)?;
            }
        }
        tx.commit().map_err(sql)
    }

    /// Every sample of one kind, oldest first: `(unix_ms, json)`.
    pub fn load_samples(&self, run_id: i64, kind: &str) -> Result<Vec<(i64, String)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT unix_ms, json FROM samples WHERE run_id = ?1 AND kind = ?2 ORDER BY unix_ms")
            .map_err(|e| self.sql(e))?;
        let rows = stmt.query_map(params![run_id, kind], |r| Ok((r.get(0)?, r.get(1)?))).map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// Every sample of a run (sweep or recorded watch), decoded into typed
    /// samples: the store boundary, where a row's `kind` and JSON become a
    /// [`Sample`]. A row that does not decode (a kind this version does not
    /// know, a damaged reading) is skipped, as it always was.
    pub fn load_run_samples(&self, run_id: i64) -> Result<RunSamples, StoreError> {
        let mut all = RunSamples::default();
        for kind in SampleKind::ALL {
            for (_, json) in self.load_samples(run_id, kind.name())? {
                if let Ok(s) = Sample::from_json(kind, &json) {
                    all.push(s);
                }
            }
        }
        Ok(all)
    }

    /// The probe notes of a run keyed as `unavailable` maps key them
    /// ([`Source::key`]; a source this version does not know, lowercased).
    pub fn load_run_notes(&self, run_id: i64) -> Result<Vec<(String, String)>, StoreError> {
        Ok(self.load_probe_notes(run_id)?.into_iter().map(|(source, why)| (Source::key_of_stored(&source), why)).collect())
    }

    /// Records that a probe was unavailable during a run, and why (latest reason kept).
    pub fn add_probe_note(&self, run_id: i64, source: &str, reason: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO probe_notes(run_id, source, reason) VALUES (?1, ?2, ?3)
                 ON CONFLICT(run_id, source) DO UPDATE SET reason = excluded.reason",
                params![run_id, source, reason],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// The unavailable probes of a run: `(source, reason)`.
    pub fn load_probe_notes(&self, run_id: i64) -> Result<Vec<(String, String)>, StoreError> {
        let mut stmt =
            self.conn.prepare("SELECT source, reason FROM probe_notes WHERE run_id = ?1 ORDER BY source").map_err(|e| self.sql(e))?;
        let rows = stmt.query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?))).map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// Removes a run and everything it holds (used when a run never started its load).
    pub fn delete_run(&self, run_id: i64) -> Result<(), StoreError> {
        self.conn.execute("DELETE FROM runs WHERE id = ?1", [run_id]).map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// Every run, oldest first.
    pub fn list_runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT r.id, r.kind, r.label, r.target, r.started_unix_ms, r.complete, r.outcome,
                        (SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id),
                        -- A capacity search's figure is its capacity (absent when
                        -- none was found or it cannot be trusted), not its
                        -- busiest try, which may be one that failed.
                        CASE WHEN r.kind = 'capacity' THEN json_extract(r.plan_json, '$.options.capacity_per_s')
                        ELSE (SELECT MAX(COALESCE(s.published_throughput_per_s, CASE WHEN s.window_s > 0 THEN s.requests / s.window_s END))
                           FROM steps s WHERE s.run_id = r.id AND s.partial = 0) END
                 FROM runs r ORDER BY r.id",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(RunSummary {
                    id: r.get(0)?,
                    kind: r.get(1)?,
                    label: r.get(2)?,
                    target: r.get(3)?,
                    started_unix_ms: r.get(4)?,
                    complete: r.get(5)?,
                    outcome: r.get(6)?,
                    steps: r.get(7)?,
                    peak_throughput_per_s: r.get(8)?,
                })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// The id a selector names; a label must name exactly one run.
    pub fn resolve(&self, sel: &RunSelector) -> Result<i64, StoreError> {
        let text = match sel {
            RunSelector::Last => "last".to_string(),
            RunSelector::Id(id) => id.to_string(),
            RunSelector::Label(l) => l.clone(),
        };
        match sel {
            RunSelector::Last => {
                let last = self
                    .conn
                    .query_row("SELECT id FROM runs WHERE kind != 'imported' ORDER BY id DESC LIMIT 1", [], |r| r.get(0))
                    .optional()
                    .map_err(|e| self.sql(e))?;
                if let Some(id) = last {
                    return Ok(id);
                }
                // "no run matches 'last' (use ... 'last')" contradicted itself.
                let any: i64 = self.conn.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0)).map_err(|e| self.sql(e))?;
                Err(if any > 0 { StoreError::OnlyImported(self.path.clone()) } else { StoreError::NoRuns(self.path.clone()) })
            }
            RunSelector::Id(id) => self
                .conn
                .query_row("SELECT id FROM runs WHERE id = ?1", [id], |r| r.get(0))
                .optional()
                .map_err(|e| self.sql(e))?
                .ok_or(StoreError::NoSuchRun(text)),
            RunSelector::Label(label) => {
                let mut stmt = self.conn.prepare("SELECT id FROM runs WHERE label = ?1 ORDER BY id").map_err(|e| self.sql(e))?;
                let ids: Vec<i64> =
                    stmt.query_map([label], |r| r.get(0)).map_err(|e| self.sql(e))?.collect::<Result<_, _>>().map_err(|e| self.sql(e))?;
                match ids.len() {
                    0 => Err(StoreError::NoSuchRun(text)),
                    1 => Ok(ids[0]),
                    n => Err(StoreError::Ambiguous {
                        label: label.clone(),
                        count: n,
                        ids: ids.iter().map(i64::to_string).collect::<Vec<_>>().join(", "),
                    }),
                }
            }
        }
    }

    /// Loads a whole run with its steps, histograms and per-second series.
    pub fn load_run(&self, id: i64) -> Result<Run, StoreError> {
        let corrupt = |why: String| StoreError::Corrupt { path: self.path.clone(), run: id, why };
        let (kind, plan_json, env_json, started, finished, complete, outcome): (
            String,
            String,
            String,
            i64,
            Option<i64>,
            bool,
            Option<String>,
        ) = self
            .conn
            .query_row(
                "SELECT kind, plan_json, environment_json, started_unix_ms, finished_unix_ms, complete, outcome FROM runs WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)),
            )
            .optional()
            .map_err(|e| self.sql(e))?
            .ok_or_else(|| StoreError::NoSuchRun(id.to_string()))?;
        let kind = match kind.as_str() {
            "sweep" => RunKind::Sweep,
            "imported" => RunKind::Imported,
            "micro" => RunKind::Micro,
            "watch" => RunKind::Watch,
            "capacity" => RunKind::Capacity,
            other => return Err(corrupt(format!("unknown run kind '{other}'"))),
        };
        let plan: RunPlan = serde_json::from_str(&plan_json).map_err(|e| corrupt(format!("plan: {e}")))?;
        let environment = serde_json::from_str(&env_json).map_err(|e| corrupt(format!("environment: {e}")))?;

        let mut steps = Vec::new();
        let mut stmt = self
            .conn
            .prepare(
                "SELECT idx, concurrency, window_s, window_start_unix_ms, window_end_unix_ms, requests, queries, errors_json,
                        latency_hdr, client_cpu_s, client_cores, reconnects, connect_ms, partial, published_throughput_per_s,
                        client_lag_ms, client_runq_wait_pct, statements_json, offered_rate_per_s, service_hdr, dropped, late_sends,
                        connect_hdr, clients_json, flow_stalls, flow_stall_ms, client_poll_idle_s
                 FROM steps WHERE run_id = ?1 ORDER BY idx",
            )
            .map_err(|e| self.sql(e))?;
        let mut rows = stmt.query([id]).map_err(|e| self.sql(e))?;
        while let Some(r) = rows.next().map_err(|e| self.sql(e))? {
            let idx: i64 = r.get("idx").map_err(|e| self.sql(e))?;
            let errors_json: String = r.get("errors_json").map_err(|e| self.sql(e))?;
            let errors: ErrorCounts = serde_json::from_str(&errors_json).map_err(|e| corrupt(format!("errors of step {idx}: {e}")))?;
            let hdr: Option<Vec<u8>> = r.get("latency_hdr").map_err(|e| self.sql(e))?;
            let latency = match hdr {
                Some(b) => LatencyHistogram::from_bytes(&b).map_err(|e| corrupt(format!("step {idx}: {e}")))?,
                None => LatencyHistogram::new(),
            };
            let connect_latency = match r.get::<_, Option<Vec<u8>>>("connect_hdr").map_err(|e| self.sql(e))? {
                Some(b) => LatencyHistogram::from_bytes(&b).map_err(|e| corrupt(format!("connect times of step {idx}: {e}")))?,
                None => LatencyHistogram::new(),
            };
            let statements = match r.get::<_, Option<String>>("statements_json").map_err(|e| self.sql(e))? {
                Some(j) => serde_json::from_str(&j).map_err(|e| corrupt(format!("statements of step {idx}: {e}")))?,
                None => Vec::new(),
            };
            let service = match r.get::<_, Option<Vec<u8>>>("service_hdr").map_err(|e| self.sql(e))? {
                Some(b) => Some(LatencyHistogram::from_bytes(&b).map_err(|e| corrupt(format!("service time of step {idx}: {e}")))?),
                None => None,
            };
            let clients = match r.get::<_, Option<String>>("clients_json").map_err(|e| self.sql(e))? {
                Some(j) => Some(serde_json::from_str(&j).map_err(|e| corrupt(format!("clients of step {idx}: {e}")))?),
                None => None,
            };
            let count = |col: &str| r.get::<_, Option<i64>>(col).map(|v| v.map(|n| n.max(0) as u64)).map_err(|e| self.sql(e));
            steps.push(StepResult {
                concurrency: r.get("concurrency").map_err(|e| self.sql(e))?,
                window_s: r.get("window_s").map_err(|e| self.sql(e))?,
                window_start_unix_ms: r.get::<_, Option<i64>>("window_start_unix_ms").map_err(|e| self.sql(e))?.unwrap_or(0),
                window_end_unix_ms: r.get::<_, Option<i64>>("window_end_unix_ms").map_err(|e| self.sql(e))?.unwrap_or(0),
                requests: r.get::<_, i64>("requests").map_err(|e| self.sql(e))? as u64,
                queries: r.get::<_, i64>("queries").map_err(|e| self.sql(e))? as u64,
                errors,
                latency,
                seconds: self.load_seconds(id, idx)?,
                client_cpu_s: r.get::<_, Option<f64>>("client_cpu_s").map_err(|e| self.sql(e))?.unwrap_or(0.0),
                client_cores: r.get::<_, Option<u32>>("client_cores").map_err(|e| self.sql(e))?.unwrap_or(0),
                reconnects: r.get::<_, Option<i64>>("reconnects").map_err(|e| self.sql(e))?.unwrap_or(0) as u64,
                connect_ms: r.get("connect_ms").map_err(|e| self.sql(e))?,
                connect_latency,
                partial: r.get("partial").map_err(|e| self.sql(e))?,
                published_throughput_per_s: r.get("published_throughput_per_s").map_err(|e| self.sql(e))?,
                client_lag_ms: r.get("client_lag_ms").map_err(|e| self.sql(e))?,
                client_runq_wait_pct: r.get("client_runq_wait_pct").map_err(|e| self.sql(e))?,
                telemetry: None,
                statements,
                offered_rate_per_s: r.get("offered_rate_per_s").map_err(|e| self.sql(e))?,
                service,
                dropped: count("dropped")?,
                late_sends: count("late_sends")?,
                clients,
                flow_stalls: count("flow_stalls")?,
                flow_stall_ms: r.get("flow_stall_ms").map_err(|e| self.sql(e))?,
                client_poll_idle_s: r.get("client_poll_idle_s").map_err(|e| self.sql(e))?,
            });
        }
        let samples = self.load_run_samples(id)?;
        let notes = self.load_run_notes(id)?;
        Ok(Run {
            id,
            kind,
            plan,
            environment,
            started_unix_ms: started,
            finished_unix_ms: finished,
            complete,
            outcome,
            steps,
            samples,
            notes,
        })
    }

    fn load_seconds(&self, run: i64, idx: i64) -> Result<Vec<SecondResult>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT second, requests, errors, latency_hdr, service_hdr FROM step_seconds
                 WHERE run_id = ?1 AND step_idx = ?2 ORDER BY second",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params![run, idx], |r| {
                Ok((
                    r.get::<_, u32>("second")?,
                    r.get::<_, i64>("requests")?,
                    r.get::<_, i64>("errors")?,
                    r.get::<_, Option<Vec<u8>>>("latency_hdr")?,
                    r.get::<_, Option<Vec<u8>>>("service_hdr")?,
                ))
            })
            .map_err(|e| self.sql(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (second, requests, errors, hdr, service_hdr) = row.map_err(|e| self.sql(e))?;
            let decode = |bytes: Option<Vec<u8>>, what: &str| match bytes {
                Some(b) => LatencyHistogram::from_bytes(&b).map_err(|e| StoreError::Corrupt {
                    path: self.path.clone(),
                    run,
                    why: format!("step {idx} second {second}{what}: {e}"),
                }),
                None => Ok(LatencyHistogram::new()),
            };
            let latency = decode(hdr, "")?;
            let service = decode(service_hdr, " service time")?;
            out.push(SecondResult { second, requests: requests as u64, errors: errors as u64, latency, service });
        }
        Ok(out)
    }
}
