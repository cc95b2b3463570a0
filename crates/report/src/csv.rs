//! CSV export: one row per step, or one row per second of every window.

use scalelab_core::{ErrorClass, Run, StepTelemetry};

/// `s` with a leading `'` when a spreadsheet would run it as a formula (see
/// [`quote`]); a plain number, negative or not, is left as it is.
pub fn neutralise(s: &str) -> String {
    let formula = s.starts_with(['=', '+', '-', '@', '\t', '\r']) && s.trim().parse::<f64>().is_err();
    if formula {
        format!("'{s}")
    } else {
        s.to_string()
    }
}

/// A figure as a CSV cell: six decimals, empty when missing (never 0).
pub fn opt(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.6}")).unwrap_or_default()
}

/// Text as a CSV cell, quoted when it holds a comma, a quote or a line break.
/// Text a spreadsheet would run as a formula (it begins with `=`, `+`, `-`,
/// `@`, a tab or a carriage return: a label or an imported name such as
/// `=HYPERLINK(...)`) gets a leading `'`, as OWASP advises against CSV
/// injection; a plain number such as `-5` stays a number.
pub fn quote(s: &str) -> String {
    let s = neutralise(s);
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

/// The step telemetry columns of [`steps_csv`]: name (with its unit as a
/// suffix: `_pct` of all CPUs unless said, `_per_s`, `_ms`, `_mb_per_s`) and
/// how to read it from a step's telemetry. Empty when not measured.
type TelemetryColumn = (&'static str, fn(&StepTelemetry) -> Option<f64>);

const TELEMETRY_COLUMNS: &[TelemetryColumn] = &[
    ("cpu_busy_pct", |t| t.cpu_busy_pct),
    ("cpu_user_pct", |t| t.cpu_user_pct),
    ("cpu_sys_pct", |t| t.cpu_sys_pct),
    ("cpu_iowait_pct", |t| t.cpu_iowait_pct),
    ("cpu_softirq_pct", |t| t.cpu_softirq_pct),
    ("cs_per_s", |t| t.cs_per_s),
    ("server_cpu_pct_of_one_core", |t| t.server_cpu_pct),
    ("server_cs_per_s", |t| t.server_cs_per_s),
    ("server_threads", |t| t.server_threads.map(|v| v as f64)),
    ("server_rss_mb", |t| t.server_rss_mb),
    ("server_cs_per_request", |t| t.cs_per_request),
    ("threads_running_pct", |t| t.thread_states_pct.map(|s| s.running)),
    ("threads_runnable_pct", |t| t.thread_states_pct.map(|s| s.runnable)),
    ("threads_futex_pct", |t| t.thread_states_pct.map(|s| s.futex)),
    ("threads_io_pct", |t| t.thread_states_pct.map(|s| s.io)),
    ("threads_idle_pct", |t| t.thread_states_pct.map(|s| s.idle)),
    ("hottest_thread_pct_of_one_core", |t| t.hottest_threads.first().map(|h| h.cpu_pct)),
    ("tcp_time_wait_sockets", |t| t.tcp_time_wait.map(|v| v as f64)),
    ("listen_overflows_per_s", |t| t.listen_overflows_per_s),
    ("listen_drops_per_s", |t| t.listen_drops_per_s),
    ("tcp_retrans_per_s", |t| t.retrans_per_s),
    ("disk_iops", |t| t.disk_iops),
    ("net_mb_per_s", |t| t.net_mb_per_s),
    ("db_top_wait_pct_of_active", |t| t.db.as_ref().and_then(|d| d.waits.first()).map(|w| w.pct)),
    ("db_row_lock_waits_per_s", |t| t.db.as_ref().and_then(|d| d.row_lock_waits_per_s)),
    ("db_row_lock_time_ms_per_s", |t| t.db.as_ref().and_then(|d| d.row_lock_time_ms_per_s)),
    ("db_table_locks_waited_per_s", |t| t.db.as_ref().and_then(|d| d.table_locks_waited_per_s)),
    ("db_innodb_os_waits_per_s", |t| t.db.as_ref().and_then(|d| d.os_waits_per_s)),
];

/// Steps as CSV, with the step's telemetry; an empty cell is a missing value.
pub fn steps_csv(run: &Run) -> String {
    let mut out = String::from(
        "run_id,label,concurrency,window_s,requests,throughput_per_s,mean_ms,stddev_ms,p50_ms,p90_ms,p99_ms,p999_ms,max_ms,errors",
    );
    for c in ErrorClass::ALL {
        out.push_str(",errors_");
        out.push_str(c.name());
    }
    out.push_str(",client_cpu_pct_of_its_cores,client_saturated,partial,client_lag_ms,throughput_unit");
    for (name, _) in TELEMETRY_COLUMNS {
        out.push(',');
        out.push_str(name);
    }
    out.push_str(",db_top_wait\n");
    for s in &run.steps {
        let l = s.latency.summary();
        let cells = [
            run.id.to_string(),
            quote(&run.plan.label),
            s.concurrency.to_string(),
            format!("{:.3}", s.window_s),
            s.requests.to_string(),
            format!("{:.3}", s.throughput_per_s()),
            opt(l.map(|l| l.mean)),
            opt(l.map(|l| l.stddev)),
            opt(l.map(|l| l.p50)),
            opt(l.map(|l| l.p90)),
            opt(l.map(|l| l.p99)),
            opt(l.map(|l| l.p999)),
            opt(l.map(|l| l.max)),
            s.errors.total().to_string(),
        ];
        out.push_str(&cells.join(","));
        for c in ErrorClass::ALL {
            out.push(',');
            out.push_str(&s.errors.get(c).to_string());
        }
        out.push_str(&format!(
            ",{},{},{},{},{}",
            opt(s.client_cpu_pct()),
            s.client_saturated(),
            s.partial,
            opt(s.client_lag_ms),
            quote(run.plan.throughput_unit())
        ));
        for (_, get) in TELEMETRY_COLUMNS {
            out.push(',');
            out.push_str(&opt(s.telemetry.as_ref().and_then(get)));
        }
        let top_wait = s.telemetry.as_ref().and_then(|t| t.db.as_ref()).and_then(|d| d.waits.first()).map(|w| quote(&w.wait));
        out.push(',');
        out.push_str(&top_wait.unwrap_or_default());
        out.push('\n');
    }
    out
}

/// The per-second series of every step's window as CSV.
pub fn seconds_csv(run: &Run) -> String {
    let mut out = String::from("run_id,concurrency,second,unix_ms,requests,errors,p50_ms,p99_ms,max_ms,service_p50_ms,service_p99_ms\n");
    for s in &run.steps {
        for sec in &s.seconds {
            out.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{},{}\n",
                run.id,
                s.concurrency,
                sec.second,
                s.window_start_unix_ms + i64::from(sec.second) * 1000,
                sec.requests,
                sec.errors,
                opt(sec.latency.quantile_ms(0.5)),
                opt(sec.latency.quantile_ms(0.99)),
                opt(sec.latency.quantile_ms(1.0)),
                opt(sec.service.quantile_ms(0.5)),
                opt(sec.service.quantile_ms(0.99)),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_are_neutralised_and_numbers_kept() {
        assert_eq!(quote("=1+1"), "'=1+1");
        assert_eq!(quote("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(quote("-2+3"), "'-2+3");
        assert_eq!(quote("+1"), "+1");
        assert_eq!(quote("-5"), "-5");
        assert_eq!(quote("-0.25"), "-0.25");
        assert_eq!(quote("\rcmd"), "\"'\rcmd\"");
        assert_eq!(quote("=A1,B1"), "\"'=A1,B1\"");
        assert_eq!(quote("nginx 1.24"), "nginx 1.24");
    }
}
