//! The run table: one row per load level (a level's repeated windows
//! together, see [`crate::levels`]), then AVG and MAX rows; and the
//! telemetry, statement and connect tables under it.

use crate::columns::rate;
use crate::fmt::{columns, ms, pct, thousands};
use scalelab_core::{DbTelemetry, PerfSchemaWait, Run, StepResult};

/// Column headers, in the order reviews print them.
pub const HEADER: [&str; 11] =
    ["concurrency", "throughput/s", "scaling", "mean ms", "stddev", "p50", "p90", "p99", "p99.9", "max", "errors"];

/// Scaling of a step vs the first step, in %.
pub fn scaling_pct(step: &StepResult, first: Option<&StepResult>) -> Option<f64> {
    let base = first?.throughput_per_s();
    (base > 0.0).then(|| 100.0 * step.throughput_per_s() / base)
}

/// The cells of one step's (one window's) row, without an interval; `first`
/// is the run's first step. The run table shows levels
/// ([`crate::levels::level_row`]); this row is for per-window listings.
pub fn step_row(step: &StepResult, first: Option<&StepResult>) -> Vec<String> {
    let mut conc = step.concurrency.to_string();
    if step.partial {
        conc.push_str(" (partial)");
    }
    let errors = step.published_throughput_per_s.is_none().then(|| step.errors.total());
    crate::fmt::run_row(
        conc,
        thousands(step.throughput_per_s()),
        scaling_pct(step, first),
        step.latency.summary(),
        errors,
        step.client_saturated(),
    )
}

/// The header line followed by a row, for printing rows as steps finish.
pub fn header_line() -> Vec<String> {
    HEADER.iter().map(|s| s.to_string()).collect()
}

/// The whole table of a run, with AVG and MAX rows and notes under it.
pub fn run_table(run: &Run) -> String {
    run_table_width(run, None)
}

/// [`run_table`] no wider than `width` columns (a terminal's): the table
/// splits into blocks of whole columns and the notes wrap at words.
pub fn run_table_width(run: &Run, width: Option<usize>) -> String {
    crate::fmt::wrap(&run_table_at(run, width), width)
}

fn run_table_at(run: &Run, width: Option<usize>) -> String {
    let mut rows = vec![header_line()];
    let entries = crate::levels::entries(run);
    let first = entries.first().map(crate::levels::Entry::throughput);
    // SQL units of several statements (transactions): throughput/s counts the
    // units, and a queries/s column counts every statement (BEGIN and COMMIT
    // included, as sysbench counts them). Single-statement workloads and HTTP
    // have queries == requests, and no extra column.
    let with_queries = run.steps.iter().any(|s| s.queries > s.requests);
    let queries_per_s = |s: &StepResult| Some(if s.window_s > 0.0 { s.queries as f64 / s.window_s } else { 0.0 });
    let repeated = crate::levels::repeated(&entries);
    for e in &entries {
        let mut row = crate::levels::level_row(e, first);
        if repeated {
            let [n, cv] = crate::levels::repeat_cells(e);
            row.splice(2..2, [n, cv]);
        }
        if with_queries {
            row.insert(2, e.mean(queries_per_s).map_or("-".into(), thousands));
        }
        rows.push(row);
    }
    if let Some([mut avg_row, mut max_row]) = crate::levels::aggregate_rows(&entries, first) {
        let measured: Vec<f64> =
            entries.iter().filter(|e| !e.partial() && e.point.is_some()).filter_map(|e| e.mean(queries_per_s)).collect();
        if repeated {
            avg_row.splice(2..2, [String::new(), String::new()]);
            max_row.splice(2..2, [String::new(), String::new()]);
        }
        if with_queries {
            let avg = measured.iter().sum::<f64>() / measured.len().max(1) as f64;
            avg_row.insert(2, thousands(avg));
            max_row.insert(2, thousands(measured.iter().copied().fold(f64::MIN, f64::max)));
        }
        rows.push(avg_row);
        rows.push(max_row);
    }
    if repeated {
        rows[0].splice(2..2, ["n".to_string(), "cv".to_string()]);
    }
    if with_queries {
        rows[0].insert(2, "queries/s".to_string());
    }
    open_loop_columns(&mut rows, &entries);
    let mut out = crate::fmt::columns_fit(&rows, width);
    out.push_str(&run_notes(run));
    if with_queries {
        out.push_str("note: throughput/s counts units of work (transactions); queries/s every statement, BEGIN and COMMIT included.\n");
    }
    if run.steps.iter().any(StepResult::client_saturated) {
        out.push_str("note: \"client saturated\" steps used over 90% of the client's cores or sent 5% or more of their requests late: the result may be the client's limit, not the server's.\n");
    }
    let first_messages: Vec<String> = run
        .steps
        .iter()
        .flat_map(|s| s.errors.first_message.iter().map(move |(c, m)| format!("{} at {}: {}", c.name(), step_level(s), m)))
        .take(5)
        .collect();
    if !first_messages.is_empty() {
        out.push_str("errors: ");
        out.push_str(&first_messages.join("; "));
        out.push('\n');
    }
    out.push_str(&statements_table(run));
    out.push_str(&connect_table(run));
    out
}

/// A step as the errors line names it: `4` clients, or `2,000/s` in a rate
/// sweep (its offered rate; its concurrency is only the in-flight cap).
fn step_level(s: &StepResult) -> String {
    match s.offered_rate_per_s {
        Some(_) => crate::fmt::level_short(s.offered_rate_per_s, s.concurrency),
        None => s.concurrency.to_string(),
    }
}

/// The connect time of the connections opened inside each step's window
/// (header first), or None when no step opened any (keep-alive held).
pub fn connect_rows(run: &Run) -> Option<Vec<Vec<String>>> {
    let steps: Vec<&StepResult> = run.steps.iter().filter(|s| !s.connect_latency.is_empty()).collect();
    if steps.is_empty() {
        return None;
    }
    let mut rows = vec![["concurrency", "connects", "connects/s", "mean ms", "p50", "p99", "max"].map(String::from).to_vec()];
    for s in steps {
        let c = s.connect_latency.summary();
        let per_s = if s.window_s > 0.0 { s.connect_latency.count() as f64 / s.window_s } else { 0.0 };
        rows.push(vec![
            s.concurrency.to_string(),
            thousands(s.connect_latency.count() as f64),
            thousands(per_s),
            ms(c.map(|c| c.mean)),
            ms(c.map(|c| c.p50)),
            ms(c.map(|c| c.p99)),
            ms(c.map(|c| c.max)),
        ]);
    }
    Some(rows)
}

/// What [`connect_rows`] says, as a titled table, or "" when it is None.
pub fn connect_table(run: &Run) -> String {
    match connect_rows(run) {
        Some(rows) => format!("{CONNECT_TITLE}:\n{}", columns(&rows)),
        None => String::new(),
    }
}

/// The connect table's title in every format.
pub const CONNECT_TITLE: &str = "connect time of the connections opened in the window (set-up cost; request latency above includes it)";

/// A run with open-loop steps: the first column is the offered rate, an
/// `achieved` column (completions in % of the offered rate) follows the
/// throughput, and the service-time p99, dropped and late-sent requests
/// precede the errors. Latency columns count from the intended send.
fn open_loop_columns(rows: &mut [Vec<String>], entries: &[crate::levels::Entry]) {
    if !entries.iter().any(|e| e.first().offered_rate_per_s.is_some()) {
        return;
    }
    let count = |n: Option<u64>| n.map_or("-".to_string(), |n| thousands(n as f64));
    for (i, row) in rows.iter_mut().enumerate() {
        let cells: [String; 4] = match i.checked_sub(1).and_then(|k| entries.get(k)) {
            _ if i == 0 => ["achieved", "svc p99", "dropped", "late"].map(String::from),
            Some(e) => {
                let s = e.first();
                if let Some(r) = s.offered_rate_per_s {
                    row[0] = format!("{}{}", thousands(r), if s.partial { " (partial)" } else { "" });
                }
                // A level's windows: the mean of each share and time, the sum of each count.
                let svc = e.mean(|s| s.service.as_ref().and_then(|h| h.quantile_ms(0.99)));
                let sum = |f: fn(&StepResult) -> Option<u64>| e.steps.iter().map(|s| f(s)).sum::<Option<u64>>();
                [pct(e.mean(StepResult::achieved_pct)), ms(svc), count(sum(|s| s.dropped)), count(sum(|s| s.late_sends))]
            }
            None => [String::new(), String::new(), String::new(), String::new()],
        };
        let [achieved, svc, dropped, late] = cells;
        if i == 0 {
            row[0] = "offered/s".into();
        }
        let errors_at = row.len() - 1;
        row.insert(errors_at, late);
        row.insert(errors_at, dropped);
        row.insert(errors_at, svc);
        row.insert(2, achieved);
    }
}

/// The notes under a run's step table in every format: how its levels
/// were measured (repeats, intervals) and, for an open loop, how requests
/// met busy connections.
pub fn run_notes(run: &Run) -> String {
    let mut out = crate::levels::notes(&crate::levels::entries(run));
    out.push_str(&starved_notes(run));
    if let Some(note) = precision_note(run) {
        out.push_str(&note);
    }
    if let Some(note) = open_loop_note(run) {
        out.push_str(&note);
    }
    if let Some(note) = http_note(run) {
        out.push_str(&note);
    }
    out
}

/// What an HTTP run spoke, when it was chosen rather than assumed: HTTP/2
/// (h2 by ALPN, h2c by prior knowledge) with each level's connections x
/// streams, or HTTP/1.1 where `--http auto` found an https:// server that
/// did not choose h2. None for HTTP/1.1 as asked, the specimen and other kinds.
/// `--until-precision`: which bound ended each level (its precision, or
/// `--max-repeats`, `--max-time`, an interrupt), from the stored
/// `precision` option, levels with the same end named together.
fn precision_note(run: &Run) -> Option<String> {
    let p = run.plan.options.get("precision")?;
    let target = p.get("target_pct")?.as_f64()?;
    let stopped = p.get("stopped")?.as_object()?;
    let open_loop = run.plan.steps.iter().any(|s| s.open_loop.is_some());
    let mut levels: Vec<(f64, &serde_json::Value)> = stopped.iter().filter_map(|(k, v)| Some((k.parse::<f64>().ok()?, v))).collect();
    levels.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut ends: Vec<(String, Vec<String>)> = Vec::new();
    for (level, stop) in levels {
        let words = if open_loop { crate::fmt::level_words(Some(level), 0) } else { crate::fmt::level_words(None, level.round() as u32) };
        let end = match stop.as_str() {
            Some("precision") => format!("within ±{} %", target),
            Some("max-repeats") => {
                format!("at --max-repeats {} (wider than ±{} %)", p.get("max_repeats").and_then(|m| m.as_u64()).unwrap_or(0), target)
            }
            Some("max-time") => format!("at --max-time (wider than ±{} %)", target),
            Some("interrupted") => "interrupted".to_string(),
            Some(other) => other.to_string(),
            None => "not reached".to_string(),
        };
        match ends.iter_mut().find(|(e, _)| *e == end) {
            Some((_, levels)) => levels.push(words),
            None => ends.push((end, vec![words])),
        }
    }
    if ends.is_empty() {
        return None;
    }
    let said: Vec<String> = ends.into_iter().map(|(end, levels)| format!("{} {end}", levels.join(", "))).collect();
    Some(format!("--until-precision: {}.\n", said.join("; ")))
}

fn http_note(run: &Run) -> Option<String> {
    let protocol = run.plan.http_protocol()?;
    if protocol == "http/1.1" {
        let auto = run.plan.options.get("http").and_then(|v| v.as_str()) == Some("auto");
        return (auto && run.plan.target.starts_with("https://"))
            .then(|| "HTTP/1.1: the server did not choose HTTP/2 (h2) by ALPN (--http auto).\n".to_string());
    }
    let streams = run.plan.streams().unwrap_or(1);
    let how = if protocol == "h2" { "h2 by ALPN over TLS" } else { "h2c, prior knowledge" };
    let mut levels: Vec<String> = Vec::new();
    for s in &run.steps {
        let text = format!("{} = {} x {streams}", s.concurrency, run.plan.connections(s.concurrency));
        if !levels.contains(&text) {
            levels.push(text);
        }
    }
    let mut out = format!(
        "HTTP/2 ({how}): a level's concurrency is its streams in flight, connections x {streams} stream(s) each{}{}.\n",
        if levels.is_empty() { "" } else { ": " },
        levels.join(", ")
    );
    // Flow control: the requests whose body waited for the server's window.
    let stalled: Vec<String> = run
        .steps
        .iter()
        .filter_map(|s| Some((s, s.flow_stalls.filter(|n| *n > 0)?)))
        .map(|(s, n)| format!("{} at {} ({} ms in all)", thousands(n as f64), s.concurrency, crate::fmt::ms(s.flow_stall_ms)))
        .collect();
    if !stalled.is_empty() {
        out.push_str(&format!("flow control: requests waited for the server's send window: {}.\n", stalled.join(", ")));
    } else if run.steps.iter().any(|s| s.flow_stalls.is_some()) {
        out.push_str("flow control: no request waited for the server's send window.\n");
    }
    if let Some(max) = run.plan.options.get("server_max_streams").and_then(|v| v.as_u64()).filter(|m| *m < u64::from(streams)) {
        out.push_str(&format!(
            "note: the server allows {max} streams per connection (SETTINGS_MAX_CONCURRENT_STREAMS): the other {} of each connection's clients waited for a stream to end.\n",
            u64::from(streams) - max
        ));
    }
    Some(out)
}

/// A line per closed-loop step where some clients completed nothing: such
/// a step is never shown as clean (its figures are the served clients').
fn starved_notes(run: &Run) -> String {
    let mut out = String::new();
    for s in run.steps.iter().filter(|s| s.offered_rate_per_s.is_none()) {
        let Some(c) = s.clients.filter(|c| c.served_nothing > 0) else { continue };
        let fairness = c.jain().map(|j| format!("; Jain's fairness {j:.2}")).unwrap_or_default();
        out.push_str(&format!(
            "note: at {}, {} of {} clients served nothing in the window: its throughput and latency percentiles cover only the answered requests{fairness}.\n",
            crate::fmt::clients(s.concurrency),
            c.served_nothing,
            c.clients
        ));
    }
    out
}

/// How an open-loop run's requests met busy connections, said once under
/// its table: the connections at each rate (`--max-in-flight`) and the
/// latency budget a request waits for one before it is dropped.
fn open_loop_note(run: &Run) -> Option<String> {
    let plans: Vec<&scalelab_core::OpenLoopPlan> = run.plan.steps.iter().filter_map(|p| p.open_loop.as_ref()).collect();
    let first = plans.first()?;
    let mut connections: Vec<String> = Vec::new();
    for p in &plans {
        let text = format!("{} at {}/s", thousands(f64::from(p.max_in_flight)), thousands(p.rate_per_s));
        if !connections.contains(&text) {
            connections.push(text);
        }
    }
    let budget = first.latency_budget_s;
    let same = plans.iter().all(|p| p.latency_budget_s == budget);
    let waits = if !same {
        "a request due while all are busy waits for one up to its step's latency budget, its wait counted in its latency, then is dropped"
            .to_string()
    } else if budget > 0.0 {
        format!(
            "a request due while all are busy waits up to {} for one (--latency-budget), its wait counted in its latency, then is dropped",
            crate::fmt::duration_text(budget)
        )
    } else {
        "a request due while all are busy is dropped at once, its wait until one came free counted in its latency (no latency budget)"
            .to_string()
    };
    Some(format!("open loop: connections {} (--max-in-flight); {waits}.\n", connections.join(", ")))
}

/// Per-statement latency inside transactions at the peak step (the measured
/// step with the highest throughput that has them), or "" when no step has:
/// which statement of a transaction takes its time.
pub fn statements_table(run: &Run) -> String {
    let peak = run
        .steps
        .iter()
        .filter(|s| !s.partial && !s.statements.is_empty())
        .max_by(|a, b| a.throughput_per_s().total_cmp(&b.throughput_per_s()));
    let Some(step) = peak else { return String::new() };
    let mut rows = vec![["statement", "count", "mean ms", "p50", "p99"].map(String::from).to_vec()];
    for st in &step.statements {
        rows.push(vec![st.name.clone(), st.count.to_string(), ms(Some(st.mean_ms)), ms(Some(st.p50_ms)), ms(Some(st.p99_ms))]);
    }
    format!("statements inside transactions at {} clients (peak):\n{}", step.concurrency, columns(&rows))
}

/// One `performance_schema` wait as `event 12 ms/s (3,400/s)`; without a
/// timer, the count alone.
pub fn perf_schema_wait(w: &PerfSchemaWait) -> String {
    match w.wait_ms_per_s {
        Some(ms) => format!("{} {} ms/s ({}/s)", w.event, rate(ms), rate(w.waits_per_s)),
        None => format!("{} {}/s (untimed)", w.event, rate(w.waits_per_s)),
    }
}

/// Lines under the telemetry table naming each step's top
/// `performance_schema` wait (MySQL/MariaDB with performance_schema on);
/// empty when no step has the summaries.
pub fn perf_schema_lines(run: &Run) -> String {
    let mut out = String::new();
    for s in &run.steps {
        let Some(top) = s.telemetry.as_ref().and_then(|t| t.db.as_ref()).and_then(|d| d.perf_schema_top_waits.as_ref()) else {
            continue;
        };
        if out.is_empty() {
            out.push_str(
                "performance_schema top wait per step (wait time per second of wall time, waits/s; condition variables left out)\n",
            );
        }
        let what = top.first().map_or_else(|| "no waits".to_string(), perf_schema_wait);
        let clients = if s.concurrency == 1 { "client" } else { "clients" };
        out.push_str(&format!("  {:>5} {clients}: {what}\n", s.concurrency));
    }
    out
}

/// The database figures of a window in one line (for `show` of a watch).
pub fn db_summary(d: &DbTelemetry) -> String {
    let mut parts = Vec::new();
    let mut add = |name: &str, v: Option<f64>, unit: &str| {
        if let Some(v) = v {
            parts.push(format!("{name} {}{unit}", rate(v)));
        }
    };
    add("questions", d.questions_per_s, "/s");
    add("threads running", d.threads_running_avg, "");
    add("row-lock waits", d.row_lock_waits_per_s, "/s");
    add("row-lock time", d.row_lock_time_ms_per_s, " ms/s");
    add("table locks waited", d.table_locks_waited_per_s, "/s");
    add("InnoDB OS waits", d.os_waits_per_s, "/s");
    add("commits", d.xact_commit_per_s, "/s");
    add("rollbacks", d.xact_rollback_per_s, "/s");
    add("active backends", d.mean_active_backends, "");
    if let Some(r) = &d.redis {
        add("commands", r.commands_per_s, "/s");
        add("hits", r.hit_pct, "%");
        add("clients", r.connected_clients_avg, "");
        add("memory", r.used_memory_mb, " MB");
        add("evicted", r.evicted_per_s, "/s");
        for c in &r.top_commands {
            parts.push(format!("{} {}/s at {:.1} µs", scalelab_core::escape_control(&c.command), rate(c.calls_per_s), c.usec_per_call));
        }
        if r.slowlog_added.is_some_and(|n| n > 0) {
            parts.push(format!("slow log +{}", r.slowlog_added.unwrap_or(0)));
        }
        for s in &r.latency_spikes {
            parts.push(format!("latency spike {} {} ms", scalelab_core::escape_control(&s.event), s.latest_ms));
        }
    }
    if let Some(w) = d.waits.first() {
        parts.push(format!("top wait {} {:.0}%", w.wait, w.pct));
    }
    if let Some(w) = d.perf_schema_top_waits.as_ref().and_then(|v| v.first()) {
        parts.push(format!("top perf-schema wait {}", perf_schema_wait(w)));
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

/// The per-step telemetry table (CPU split, context switches, server thread
/// states, TCP), or None when the run has no telemetry. Missing figures are "-".
pub fn telemetry_table(run: &Run) -> Option<String> {
    telemetry_table_width(run, None)
}

/// [`telemetry_table`] no wider than `width` columns (see [`run_table_width`]).
/// A measured run none of whose steps has telemetry says so in one line
/// (missing is shown as missing): its windows held no probe samples.
pub fn telemetry_table_width(run: &Run, width: Option<usize>) -> Option<String> {
    match telemetry_table_at(run, width) {
        Some(t) => Some(crate::fmt::wrap(&t, width)),
        None if run.kind != scalelab_core::RunKind::Imported && !run.steps.is_empty() => Some(crate::fmt::wrap(
            "telemetry: none for any step: no probe samples around their windows (the probes sample about once a second, \
             later on a busy machine): lengthen --duration\n",
            width,
        )),
        None => None,
    }
}

fn telemetry_table_at(run: &Run, width: Option<usize>) -> Option<String> {
    let rows = crate::columns::step_rows(&run.steps)?;
    let mut out = String::from("telemetry (window averages; server = the target's process; thread states = share of its thread-time)\n");
    out.push_str(&crate::fmt::columns_fit(&rows, width));
    for line in crate::columns::legend(run.environment.logical_cores, crate::columns::Source::Step) {
        out.push_str(&crate::fmt::wrap(&format!("  {line}"), width));
        out.push('\n');
    }
    let mut reasons: Vec<String> = Vec::new();
    for s in &run.steps {
        if let Some(t) = &s.telemetry {
            for (k, why) in &t.unavailable {
                // A machine without a power sensor is a fact of the machine, said plainly.
                let line = if k == "power" { "power: not available on this machine".to_string() } else { format!("{k}: {why}") };
                if !reasons.contains(&line) {
                    reasons.push(line);
                }
            }
        }
    }
    out.push_str(&perf_schema_lines(run));
    if !reasons.is_empty() {
        out.push_str("unavailable: ");
        out.push_str(&reasons.join("; "));
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn db_summary_and_perf_schema_waits_in_words() {
        let my = DbTelemetry { engine: "mysql".into(), row_lock_waits_per_s: Some(1234.4), ..Default::default() };
        assert!(db_summary(&my).contains("row-lock waits 1,234/s"));
        let w = PerfSchemaWait { event: "wait/io/table/sql/handler".into(), waits_per_s: 3400.0, wait_ms_per_s: Some(12.25) };
        assert_eq!(perf_schema_wait(&w), "wait/io/table/sql/handler 12 ms/s (3,400/s)");
        let untimed = PerfSchemaWait { wait_ms_per_s: None, ..w.clone() };
        assert_eq!(perf_schema_wait(&untimed), "wait/io/table/sql/handler 3,400/s (untimed)");
        let ps = DbTelemetry { perf_schema_top_waits: Some(vec![w]), ..my.clone() };
        assert!(db_summary(&ps).contains("top perf-schema wait wait/io/table/sql/handler 12 ms/s"), "{}", db_summary(&ps));
        assert!(!db_summary(&my).contains("perf-schema"));
    }
}
