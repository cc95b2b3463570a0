//! CSV export: one row per step, or one row per second of every window.

use scalelab_core::{ErrorClass, Run};

fn opt(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.6}")).unwrap_or_default()
}

fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Steps as CSV; an empty cell is a missing value.
pub fn steps_csv(run: &Run) -> String {
    let mut out = String::from(
        "run_id,label,concurrency,window_s,requests,throughput_per_s,mean_ms,stddev_ms,p50_ms,p90_ms,p99_ms,p999_ms,max_ms,errors",
    );
    for c in ErrorClass::ALL {
        out.push_str(",errors_");
        out.push_str(c.name());
    }
    out.push_str(",client_cpu_pct,client_saturated,partial\n");
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
        out.push_str(&format!(",{},{},{}\n", opt(s.client_cpu_pct()), s.client_saturated(), s.partial));
    }
    out
}

/// The per-second series of every step's window as CSV.
pub fn seconds_csv(run: &Run) -> String {
    let mut out = String::from("run_id,concurrency,second,unix_ms,requests,errors,p50_ms,p99_ms,max_ms\n");
    for s in &run.steps {
        for sec in &s.seconds {
            out.push_str(&format!(
                "{},{},{},{},{},{},{},{},{}\n",
                run.id,
                s.concurrency,
                sec.second,
                s.window_start_unix_ms + i64::from(sec.second) * 1000,
                sec.requests,
                sec.errors,
                opt(sec.latency.quantile_ms(0.5)),
                opt(sec.latency.quantile_ms(0.99)),
                opt(sec.latency.quantile_ms(1.0)),
            ));
        }
    }
    out
}
