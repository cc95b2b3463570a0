//! `watch` in text, CSV and JSON: the live rows, the summary page of a
//! recorded watch (`show`), its per-interval export. The intervals are
//! [`scalelab_analyze::telemetry::Interval`]s; nothing here reads samples.

use crate::fmt::columns;
use scalelab_analyze::telemetry::{intervals, summarize_recording, Interval};
use scalelab_core::{escape_control, Run};

/// The columns of `watch`, live and in `show`.
const HEADER: [&str; 18] = [
    "time",
    "cpu busy",
    "usr",
    "sys",
    "iowait",
    "cs/s",
    "server cpu",
    "server cs/s",
    "running",
    "runnable",
    "futex",
    "io",
    "idle",
    "time_wait",
    "drops/s",
    "disk iops",
    "net MB/s",
    "DB waits",
];

/// Column widths fixed up front, so rows printed one at a time line up
/// under the header (a figure wider than its column pushes only its own row).
const WIDTHS: [usize; 18] = [6, 8, 4, 4, 6, 9, 10, 11, 7, 8, 5, 4, 4, 9, 7, 9, 8, 0];

/// The header line of the interval rows.
pub fn header() -> String {
    aligned(&HEADER.map(String::from))
}

/// One interval as a row under [`header`]; the database's words escaped.
pub fn row(iv: &Interval) -> String {
    aligned(&cells(iv))
}

/// One row of cells padded to [`WIDTHS`]: the time left-aligned, figures
/// right-aligned, the last column (text) as it is.
fn aligned(cells: &[String]) -> String {
    let mut line = String::new();
    for (i, c) in cells.iter().enumerate() {
        let w = WIDTHS.get(i).copied().unwrap_or(0).max(HEADER.get(i).map_or(0, |h| h.chars().count()));
        if i == 0 {
            line.push_str(&format!("{c:<w$}"));
        } else if i + 1 == cells.len() {
            line.push_str("  ");
            line.push_str(c);
        } else {
            line.push_str(&format!("  {c:>w$}"));
        }
    }
    line.trim_end().to_string()
}

/// The database column: the top wait of the interval's last second.
fn db_cell(iv: &Interval) -> Option<String> {
    iv.db.as_ref().map(crate::table::db_waits_cell)
}

/// The row's cells, as [`HEADER`] names them.
fn cells(iv: &Interval) -> Vec<String> {
    let p = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.0}%"));
    let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.0}"));
    vec![
        format!("{:.1}s", iv.elapsed_s),
        p(iv.cpu_busy_pct),
        p(iv.cpu_user_pct),
        p(iv.cpu_sys_pct),
        p(iv.cpu_iowait_pct),
        f(iv.cs_per_s),
        p(iv.server_cpu_pct),
        f(iv.server_cs_per_s),
        p(iv.threads_running_pct),
        p(iv.threads_runnable_pct),
        p(iv.threads_futex_pct),
        p(iv.threads_io_pct),
        p(iv.threads_idle_pct),
        iv.tcp_time_wait.map_or("-".into(), |v| v.to_string()),
        f(iv.listen_drops_per_s),
        f(iv.disk_iops),
        iv.net_mb_per_s.map_or("-".into(), |v| format!("{v:.2}")),
        db_cell(iv).map(|c| escape_control(&c).into_owned()).unwrap_or_else(|| "-".into()),
    ]
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
    let series = intervals(samples, run.started_unix_ms);
    if !series.is_empty() {
        out.push_str(&format!(
            "per interval ({} rows; `scalelab export {} --series` for all of them as CSV):\n{}\n",
            series.len(),
            run.id,
            header()
        ));
        let shown = 20;
        for iv in series.iter().take(shown) {
            out.push_str(&row(iv));
            out.push('\n');
        }
        if series.len() > shown {
            out.push_str(&format!("... {} more\n", series.len() - shown));
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
    }
    doc
}
