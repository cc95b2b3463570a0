//! `watch` in text, CSV and JSON: the live rows, the summary page of a
//! recorded watch (`show`), its per-interval export. The intervals are
//! [`scalelab_analyze::telemetry::Interval`]s; nothing here reads samples.

use crate::columns::{columns_for, Applies, Figures, Source};
use crate::fmt::columns;
use scalelab_analyze::telemetry::{intervals, summarize_recording, Interval};
use scalelab_core::{escape_control, Run};

/// The header line of the interval rows: `time`, then the telemetry
/// columns ([`crate::columns`]) that apply to an interval: `DB waits` when a
/// database is probed, the server's when one is observed.
pub fn header(applies: Applies) -> String {
    let mut cells = vec!["time".to_string()];
    cells.extend(columns_for(Source::Interval, applies).iter().map(|c| c.name.to_string()));
    aligned(&cells, applies)
}

/// One interval as a row under [`header`]; the database's words escaped.
pub fn row(iv: &Interval, applies: Applies) -> String {
    let f = Figures::of_interval(iv);
    let mut cells = vec![format!("{:.1}s", iv.elapsed_s)];
    cells.extend(columns_for(Source::Interval, applies).iter().map(|c| c.cell(&f)));
    aligned(&cells, applies)
}

/// One row of cells padded to the columns' widths, fixed up front so rows
/// printed one at a time line up under the header (a figure wider than its
/// column pushes only its own row): the time left-aligned, figures
/// right-aligned, the database's words (last) as they are.
fn aligned(cells: &[String], applies: Applies) -> String {
    let cols = columns_for(Source::Interval, applies);
    let mut line = String::new();
    for (i, c) in cells.iter().enumerate() {
        if i == 0 {
            line.push_str(&format!("{c:<6}"));
            continue;
        }
        let col = cols[i - 1];
        if col.width == 0 {
            line.push_str("  ");
            line.push_str(c);
        } else {
            let w = col.width.max(col.name.chars().count());
            line.push_str(&format!("  {c:>w$}"));
        }
    }
    line.trim_end().to_string()
}

/// The database column: the top wait of the interval's last second.
fn db_cell(iv: &Interval) -> Option<String> {
    iv.db.as_ref().map(crate::columns::db_waits_cell)
}

/// `show` of a recorded watch: the whole recording summarized like a
/// step, then the first 20 intervals.
pub fn show_text(run: &Run) -> String {
    let samples = &run.samples;
    let mut out = format!(
        "run {}: {} — {} — recorded {} system samples\n",
        run.id,
        escape_control(&run.plan.label),
        escape_control(&run.plan.target),
        samples.system.len()
    );
    let Some(t) = summarize_recording(samples) else {
        out.push_str("no samples recorded\n");
        return out;
    };
    let p = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1}%"));
    let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.0}"));
    let ts = t.thread_states_pct;
    let mut rows = vec![
        vec![
            "cpu busy / usr / sys / iowait".to_string(),
            format!("{} / {} / {} / {}", p(t.cpu_busy_pct), p(t.cpu_user_pct), p(t.cpu_sys_pct), p(t.cpu_iowait_pct)),
        ],
        vec!["context switches/s".into(), f(t.cs_per_s)],
        vec!["server cpu (of one core), cs/s".into(), format!("{}, {}", p(t.server_cpu_pct), f(t.server_cs_per_s))],
        vec![
            "server threads running / runnable / futex / io / idle".into(),
            format!(
                "{} / {} / {} / {} / {}",
                p(ts.map(|s| s.running)),
                p(ts.map(|s| s.runnable)),
                p(ts.map(|s| s.futex)),
                p(ts.map(|s| s.io)),
                p(ts.map(|s| s.idle))
            ),
        ],
        vec![
            "hottest thread".into(),
            t.hottest_threads
                .first()
                .map_or("-".into(), |h| format!("{} ({}) {:.0}% of a core", escape_control(&h.name), h.tid, h.cpu_pct)),
        ],
        vec!["TIME_WAIT at the end".into(), t.tcp_time_wait.map_or("-".into(), |v| v.to_string())],
        vec!["listen drops/s".into(), t.listen_drops_per_s.map_or("-".into(), |v| format!("{v:.2}"))],
        vec!["disk IOPS, net MB/s".into(), format!("{}, {}", f(t.disk_iops), t.net_mb_per_s.map_or("-".into(), |v| format!("{v:.2}")))],
    ];
    if let Some(d) = &t.db {
        rows.push(vec!["database".into(), escape_control(&crate::table::db_summary(d)).into_owned()]);
    }
    out.push_str(&columns(&rows));
    for (k, why) in &t.unavailable {
        out.push_str(&format!("unavailable: {}: {}\n", escape_control(k), escape_control(why)));
    }
    out.push_str(&captures_text(run));
    let series = intervals(samples, run.started_unix_ms);
    if !series.is_empty() {
        let server = series.iter().any(|iv| iv.server_cpu_pct.is_some() || iv.threads_running_pct.is_some());
        let applies = Applies { db: series.iter().any(|iv| iv.db.is_some()), server };
        out.push_str(&format!(
            "per interval ({} rows; `scalelab export {} --series` for all of them as CSV):\n{}\n",
            series.len(),
            run.id,
            header(applies)
        ));
        let shown = 20;
        for iv in series.iter().take(shown) {
            out.push_str(&row(iv, applies));
            out.push('\n');
        }
        if series.len() > shown {
            out.push_str(&format!("... {} more\n", series.len() - shown));
        }
        for line in crate::columns::legend(run.environment.logical_cores, Source::Interval) {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out
}

/// What `--trigger` captured: each marked interval (seconds from the
/// run's start), the figure that held, the largest thread groups by
/// kernel stack, the database's lock waits, and the profile window.
pub fn captures_text(run: &Run) -> String {
    let caps = &run.samples.captures;
    if caps.is_empty() {
        return String::new();
    }
    let at = |ms: i64| (ms - run.started_unix_ms) as f64 / 1000.0;
    let mut out = format!("captures ({}; `scalelab show {} --json` has every thread group):\n", caps.len(), run.id);
    for c in caps {
        out.push_str(&format!(
            "  {}: {} held from +{:.0}s to +{:.0}s ({:.1}{} at the end)\n",
            c.index,
            escape_control(&c.trigger),
            at(c.from_unix_ms),
            at(c.unix_ms),
            c.value,
            escape_control(&c.unit)
        ));
        let total = c.threads.iter().map(|g| g.threads).sum::<u32>().max(1);
        if !c.threads.is_empty() {
            out.push_str(&format!("     threads over {} look(s), 100 ms apart (share of thread-looks):\n", c.looks.max(1)));
        }
        for g in c.threads.iter().take(3) {
            let stack = if g.stack.is_empty() { "-".to_string() } else { g.stack.iter().take(4).cloned().collect::<Vec<_>>().join(" < ") };
            out.push_str(&format!(
                "     {:>4.0}% {} {}: {} [{}]\n",
                100.0 * g.threads as f64 / total as f64,
                escape_control(&g.state),
                if g.wchan.is_empty() { "(on a CPU or waiting for one)".into() } else { format!("in {}", escape_control(&g.wchan)) },
                escape_control(&stack),
                escape_control(&g.names.join(", "))
            ));
        }
        match &c.db_locks {
            Some(rows) if rows.is_empty() => out.push_str("     database: no session waited on a lock\n"),
            Some(rows) => {
                for r in rows.iter().take(3) {
                    let longest = r.longest_s.map_or(String::new(), |s| format!(", longest {s:.1}s"));
                    let mode = if r.mode.is_empty() { String::new() } else { format!(" ({})", escape_control(&r.mode)) };
                    out.push_str(&format!(
                        "     database: {} waiting on {}{mode}, {} blocker(s){longest}\n",
                        r.waiting,
                        escape_control(&r.wait),
                        r.blockers
                    ));
                }
            }
            None => {}
        }
        if let Some(w) = c.profile_window {
            // Windows are numbered from 1 where `profile` shows them.
            out.push_str(&format!("     profile: `scalelab profile {} --step {}`\n", run.id, w + 1));
        }
        for why in &c.unavailable {
            out.push_str(&format!("     unavailable: {}\n", escape_control(why)));
        }
    }
    out
}

/// The per-second series of a recorded watch as CSV (units in the column names).
pub fn csv(run: &Run) -> String {
    let mut out = String::from(
        "run_id,unix_ms,elapsed_s,cpu_busy_pct,cpu_user_pct,cpu_sys_pct,cpu_iowait_pct,cs_per_s,server_cpu_pct_of_one_core,\
         server_cs_per_s,threads_running_pct,threads_runnable_pct,threads_futex_pct,threads_io_pct,threads_idle_pct,\
         tcp_time_wait_sockets,listen_drops_per_s,disk_iops,net_mb_per_s,db_waits\n",
    );
    let o = crate::csv::opt;
    for r in intervals(&run.samples, run.started_unix_ms) {
        let db = db_cell(&r).as_deref().map(crate::csv::quote).unwrap_or_default();
        out.push_str(&format!(
            "{},{},{:.3},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{db}\n",
            run.id,
            r.unix_ms,
            r.elapsed_s,
            o(r.cpu_busy_pct),
            o(r.cpu_user_pct),
            o(r.cpu_sys_pct),
            o(r.cpu_iowait_pct),
            o(r.cs_per_s),
            o(r.server_cpu_pct),
            o(r.server_cs_per_s),
            o(r.threads_running_pct),
            o(r.threads_runnable_pct),
            o(r.threads_futex_pct),
            o(r.threads_io_pct),
            o(r.threads_idle_pct),
            r.tcp_time_wait.map(|v| v.to_string()).unwrap_or_default(),
            o(r.listen_drops_per_s),
            o(r.disk_iops),
            o(r.net_mb_per_s),
        ));
    }
    out
}

/// A recorded watch as JSON: the run's fields, the summary of the whole
/// recording (`summary`, the shape of a step's `telemetry`) and every
/// interval (`samples`, with `db_waits` in words).
pub fn json(run: &Run) -> serde_json::Value {
    let mut doc = crate::json::run_json(run);
    let samples = &run.samples;
    let rows: Vec<serde_json::Value> = intervals(samples, run.started_unix_ms)
        .iter()
        .map(|iv| {
            let mut v = serde_json::to_value(iv).expect("an interval serializes");
            if let serde_json::Value::Object(m) = &mut v {
                m.insert("db_waits".into(), db_cell(iv).into());
            }
            v
        })
        .collect();
    let summary = summarize_recording(samples).filter(|_| samples.system.len() >= 2);
    if let serde_json::Value::Object(m) = &mut doc {
        m.insert("summary".into(), serde_json::to_value(summary).expect("telemetry serializes"));
        m.insert("samples".into(), rows.into());
        m.insert("captures".into(), serde_json::to_value(&samples.captures).expect("captures serialize"));
    }
    doc
}
