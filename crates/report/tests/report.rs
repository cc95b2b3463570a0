//! The report's Markdown pinned by snapshots, and the HTML's promises
//! (self-contained, charts drawn, missing data shown as "unavailable")
//! checked on runs built by hand, so every figure is deterministic.

use scalelab_core::{
    Environment, LatencyHistogram, Run, RunKind, RunPlan, SecondResult, StepPlan, StepResult, StepTelemetry, ThreadStatesPct,
};
use scalelab_report::model::{ImageLinks, ReportInput, ReportRun, TextTable};
use std::time::Duration;

fn hist(ms: &[f64]) -> LatencyHistogram {
    let mut h = LatencyHistogram::new();
    for v in ms {
        h.record(Duration::from_secs_f64(v / 1000.0));
    }
    h
}

fn env(host: &str) -> Environment {
    Environment {
        hostname: Some(host.into()),
        kernel: Some("6.1.0-18-amd64".into()),
        distribution: Some("Debian GNU/Linux 12".into()),
        cpu_model: Some("Example CPU @ 2.0GHz".into()),
        logical_cores: Some(2),
        physical_cores: Some(2),
        smt: Some(false),
        memory_kib: Some(4 * 1024 * 1024),
        governor: None,
        ip_local_port_range: Some("32768 60999".into()),
        somaxconn: Some(4096),
        open_files_limit: Some(1024),
        scalelab_version: "0.1.0".into(),
        server: Some("scalelab-specimen".into()),
        preflight: None,
        noise_pct: None,
    }
}

/// A sweep of 4 steps (1, 2, 4, 8 clients) that stops scaling at 4 and
/// locks up: thread states measured on all but the last step, whose thread
/// sampler is reported unavailable.
fn sweep(id: i64, label: &str, host: &str, xs: [f64; 4], thread_states: bool) -> Run {
    let conc = [1u32, 2, 4, 8];
    let plan_steps: Vec<StepPlan> = conc
        .iter()
        .map(|&c| StepPlan { concurrency: c, warmup_s: 1.0, window_s: 2.0, pause_s: 1.0, think_time_s: 0.0, open_loop: None })
        .collect();
    let t0 = 1_700_000_000_000i64;
    let steps = conc
        .iter()
        .zip(xs)
        .enumerate()
        .map(|(i, (&c, x))| {
            let start = t0 + 1000 + i as i64 * 4000;
            let lat = 1000.0 * f64::from(c) / x;
            let seconds = (0..2)
                .map(|s| SecondResult { second: s, requests: x as u64, errors: 0, latency: hist(&[lat, lat * 1.5]), ..Default::default() })
                .collect();
            let states =
                ThreadStatesPct { running: 60.0 - 10.0 * i as f64, runnable: 5.0, futex: 10.0 * i as f64, io: 0.0, idle: 35.0, other: 0.0 };
            let mut unavailable = std::collections::BTreeMap::new();
            let last = i == 3;
            if !thread_states || last {
                unavailable.insert("thread_states".to_string(), "thread sampling was off (--thread-sample-hz 0)".to_string());
            }
            let telemetry = StepTelemetry {
                samples: 2,
                cpu_busy_pct: Some(40.0 + 10.0 * i as f64),
                cpu_user_pct: Some(30.0 + 5.0 * i as f64),
                cpu_sys_pct: Some(10.0 + 5.0 * i as f64),
                cpu_iowait_pct: None,
                cs_per_s: Some(1000.0 * f64::from(c)),
                server_cpu_pct: Some(80.0),
                cs_per_request: Some(2.0 + i as f64),
                thread_states_pct: (thread_states && !last).then_some(states),
                unavailable,
                ..Default::default()
            };
            StepResult {
                concurrency: c,
                window_s: 2.0,
                window_start_unix_ms: start,
                window_end_unix_ms: start + 2000,
                requests: (2.0 * x) as u64,
                queries: (2.0 * x) as u64,
                latency: hist(&[lat, lat, lat * 1.5, lat * 3.0]),
                seconds,
                client_cpu_s: 0.2,
                client_cores: 2,
                telemetry: Some(telemetry),
                ..Default::default()
            }
        })
        .collect();
    Run {
        id,
        kind: RunKind::Sweep,
        plan: RunPlan {
            label: label.into(),
            target: "specimen:global-lock".into(),
            workload: "GET /work?us=1000".into(),
            steps: plan_steps,
            client_threads: 2,
            options: Default::default(),
        },
        environment: env(host),
        started_unix_ms: t0,
        finished_unix_ms: Some(t0 + 20_000),
        complete: true,
        outcome: Some("completed".into()),
        steps,
        samples: Default::default(),
        notes: vec![],
    }
}

fn imported(id: i64) -> Run {
    imported_pairs(id, &[(1u32, 192.0), (2, 274.0), (4, 113.0), (8, 62.0)])
}

fn imported_pairs(id: i64, pairs: &[(u32, f64)]) -> Run {
    Run {
        id,
        kind: RunKind::Imported,
        plan: RunPlan {
            label: "G5 Tiger".into(),
            target: "imported:published.csv".into(),
            workload: "published series".into(),
            steps: pairs
                .iter()
                .map(|&(c, _)| StepPlan { concurrency: c, warmup_s: 0.0, window_s: 0.0, pause_s: 0.0, think_time_s: 0.0, open_loop: None })
                .collect(),
            client_threads: 1,
            options: Default::default(),
        },
        environment: Environment { scalelab_version: "0.1.0".into(), ..Default::default() },
        started_unix_ms: 0,
        finished_unix_ms: Some(0),
        complete: true,
        outcome: Some("imported from published.csv".into()),
        steps: pairs
            .iter()
            .map(|&(c, x)| StepResult { concurrency: c, published_throughput_per_s: Some(x), ..Default::default() })
            .collect(),
        samples: Default::default(),
        notes: vec![],
    }
}

fn input(image_dir: Option<&str>) -> ReportInput {
    let mut a = ReportRun::new(sweep(1, "lock", "host-a", [100.0, 180.0, 200.0, 150.0], true));
    // Per-second CPU from the probes: present, with one sample missing (a gap).
    if let Some(t) = a.timeline.as_mut() {
        t.cpu_user_pct = vec![(0.5, Some(30.0)), (1.5, Some(31.0)), (2.5, None), (3.5, Some(40.0))];
        t.cs_per_s = vec![(0.5, Some(900.0)), (1.5, Some(1100.0))];
        t.unavailable.insert("cpu_iowait_pct".into(), "no iowait column in /proc/stat".into());
    }
    let b = ReportRun::new(sweep(2, "nolock", "host-b", [100.0, 195.0, 380.0, 700.0], false));
    let c = ReportRun::new(imported(3));
    let micro = vec![TextTable {
        title: "Processor, Processes - times in microseconds".into(),
        columns: vec!["Host".into(), "OS".into(), "null call".into()],
        rows: vec![vec!["host-a".into(), "Linux 6.1".into(), "0.08".into()]],
    }];
    let mut i = ReportInput {
        runs: vec![a, b, c],
        micro,
        micro_runs: vec![(4, "host-a".into())],
        images: image_dir.map(|d| ImageLinks { dir: d.into(), ext: "svg" }),
    };
    i.dedup_names();
    i
}

#[test]
fn markdown_is_pinned() {
    insta::assert_snapshot!("report_md", scalelab_report::markdown::render(&input(None)));
}

#[test]
fn markdown_links_chart_images() {
    let md = scalelab_report::markdown::render(&input(Some("charts")));
    assert!(md.contains("![Throughput vs concurrency](charts/throughput.svg)"), "{md}");
    assert!(md.contains("![CPU per second — lock](charts/run-1-timeline-cpu.svg)"), "{md}");
    // A chart that cannot be drawn is a line saying why, not a broken image.
    assert!(md.contains("*Latency vs concurrency — G5 Tiger: unavailable: an imported series has no latency figures*"), "{md}");
}

#[test]
fn html_is_self_contained_and_draws_every_chart() {
    let html = scalelab_report::html::render(&input(None));
    for bad in ["src=", "href=\"http", "url(", "@import", "<link"] {
        assert!(!html.contains(bad), "the report must fetch nothing: found {bad}");
    }
    // The only URL is the SVG namespace (an identifier, never fetched).
    assert_eq!(html.matches("http").count(), html.matches("http://www.w3.org/2000/svg").count());
    let charts = scalelab_report::charts::all(&input(None).runs);
    let drawn: Vec<_> = charts.iter().filter(|c| c.svg.is_ok()).collect();
    assert_eq!(html.matches("<svg ").count(), drawn.len());
    // Throughput: 3 runs + 2 USL fits (the imported run has 4 steps too: 3 fits).
    assert!(html.contains(r#"data-series="6""#), "throughput chart: 3 runs and 3 USL fits");
    for c in &drawn {
        let svg = c.svg.as_ref().unwrap();
        let n: usize = svg.split("data-series=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
        assert!(n > 0, "{} draws nothing", c.id);
        assert_eq!(svg.matches(r#"<g class="series""#).count(), n, "{}", c.id);
    }
}

#[test]
fn an_unusable_usl_fit_is_not_drawn_and_says_why() {
    // The whole published Tiger series: the optimum has σ 2.16, R² 0.50.
    let tiger = [(1u32, 192.0), (2, 274.0), (5, 113.0), (10, 62.0), (20, 50.0), (35, 50.0), (50, 47.0)];
    let runs =
        vec![ReportRun::new(sweep(1, "lock", "host-a", [100.0, 180.0, 200.0, 150.0], true)), ReportRun::new(imported_pairs(2, &tiger))];
    assert!(runs[1].diagnosis.usl.is_none());
    let chart = scalelab_report::charts::throughput(&runs);
    let svg = chart.svg.unwrap();
    // Two runs and one fit (the lock run's), not two.
    assert!(svg.contains(r#"data-series="3""#), "{svg}");
    assert!(svg.contains("lock USL fit") && !svg.contains("G5 Tiger USL fit"), "{svg}");
    assert!(svg.contains("G5 Tiger: no usable USL fit (`G5 Tiger`: σ 2.16 is outside [0, 1]"), "{svg}");
    let md = scalelab_report::markdown::render(&ReportInput { runs, ..Default::default() });
    // (Brackets in a Markdown cell are escaped: no text there forms a link.)
    assert!(md.contains(r"σ 2.16 is outside \[0, 1\]"), "the summary's USL note says why: {md}");
}

#[test]
fn missing_data_reads_unavailable_not_zero() {
    let inp = input(None);
    let html = scalelab_report::html::render(&inp);
    // Run 2 sampled no thread states: its chart is replaced by the reason.
    let nolock = scalelab_report::charts::thread_states(&inp.runs[1]).unwrap();
    assert_eq!(nolock.svg.unwrap_err(), "unavailable: thread sampling was off (--thread-sample-hz 0)");
    assert!(html.contains("unavailable: thread sampling was off (--thread-sample-hz 0)"));
    // Run 1 lacks them at its last step only: that bar says so, the others are drawn.
    let lock = scalelab_report::charts::thread_states(&inp.runs[0]).unwrap().svg.unwrap();
    assert_eq!(lock.matches(">unavailable</text>").count(), 1);
    // iowait was never measured: no iowait line, a note with the reason instead.
    let cpu = scalelab_report::charts::timeline(&inp.runs[0]).into_iter().find(|c| c.id == "run-1-timeline-cpu").unwrap().svg.unwrap();
    assert!(!cpu.contains(r#"data-name="iowait""#));
    assert!(cpu.contains("iowait: unavailable: no iowait column in /proc/stat"), "{cpu}");
    // The missing CPU sample is a gap: two segments, not a dip to 0.
    let user = cpu.split(r#"data-name="user">"#).nth(1).unwrap().split("</g>").next().unwrap();
    // (0.5, 1.5) is a line, 3.5 a lone dot after the gap.
    assert_eq!(user.matches("<polyline ").count(), 1, "{user}");
    assert!(user.contains(r#"data-tip="user: 40 at 3.5""#) && !user.contains(r#"data-tip="user: 0"#), "{user}");
    // Run 2 recorded no per-second CPU at all: the chart is the reason.
    let cpu2 = scalelab_report::charts::timeline(&inp.runs[1]).into_iter().find(|c| c.id == "run-2-timeline-cpu").unwrap();
    assert!(cpu2.svg.unwrap_err().starts_with("unavailable"));
    // In the telemetry table, iowait cells are the one missing marker (as in
    // the terminal's table), styled as missing, and never a 0.
    assert!(html.contains(r#"<td><span class="unavailable" title="not measured">-</span></td>"#));
    assert!(html.contains("-: not measured (why is listed below the table)"));
}

fn with_db(mut run: Run, db: impl Fn(usize) -> Option<scalelab_core::DbTelemetry>) -> ReportRun {
    for (i, s) in run.steps.iter_mut().enumerate() {
        s.telemetry.as_mut().unwrap().db = db(i);
    }
    ReportRun::new(run)
}

#[test]
fn database_waits_are_drawn_per_step_and_missing_steps_say_so() {
    use scalelab_core::{DbTelemetry, DbWait};
    let w = |wait: &str, pct: f64| DbWait { wait: wait.into(), pct };
    // PostgreSQL: wait types stacked per step; step 4 lost its probe.
    let pg = with_db(sweep(7, "pg", "host-a", [100.0, 150.0, 160.0, 120.0], true), |i| {
        (i < 3).then(|| DbTelemetry {
            engine: "postgres".into(),
            activity_polls: Some(20),
            mean_active_backends: Some(1.0 + i as f64),
            wait_types: vec![w("CPU", 90.0 - 30.0 * i as f64), w("Lock", 25.0 * i as f64)],
            ..Default::default()
        })
    });
    let chart = scalelab_report::charts::db_waits(&pg).expect("a database probe ran");
    let svg = chart.svg.expect("drawn");
    assert!(chart.title.starts_with("PostgreSQL wait profile"));
    for layer in ["CPU", "Lock", "other"] {
        assert!(svg.contains(&format!(r#"data-name="{layer}""#)), "{layer} layer: {svg}");
    }
    assert_eq!(svg.matches(">unavailable</text>").count(), 1, "the step without DB figures says so");

    // MySQL: row-lock waits per second vs concurrency; a counter the server
    // does not report is a note, not a zero line.
    let my = with_db(sweep(8, "my", "host-a", [100.0, 150.0, 160.0, 120.0], true), |i| {
        Some(DbTelemetry { engine: "mysql".into(), row_lock_waits_per_s: Some(100.0 * i as f64), ..Default::default() })
    });
    let svg = scalelab_report::charts::db_waits(&my).unwrap().svg.unwrap();
    assert!(svg.contains(r#"data-name="InnoDB row-lock waits/s""#), "{svg}");
    assert!(svg.contains("InnoDB latch OS waits/s: unavailable"), "{svg}");
    assert!(!svg.contains(r#"data-name="InnoDB latch OS waits/s""#));

    // Counters read in every step and all zero: no chart of flat lines, one
    // line saying so (a missing step stays a gap, not a reason to draw).
    let idle = with_db(sweep(10, "idle", "host-a", [100.0, 150.0, 160.0, 120.0], true), |i| {
        (i < 3).then(|| DbTelemetry {
            engine: "mariadb".into(),
            row_lock_waits_per_s: Some(0.0),
            table_locks_waited_per_s: Some(0.0),
            ..Default::default()
        })
    });
    let chart = scalelab_report::charts::db_waits(&idle).unwrap();
    assert!(chart.omitted);
    let why = chart.svg.unwrap_err();
    assert_eq!(why, "none sampled above 0 in any step (InnoDB row-lock waits/s, table-lock waits/s); chart omitted");
    let html = scalelab_report::html::render(&ReportInput { runs: vec![idle.clone()], ..Default::default() });
    assert!(
        html.contains(&format!(r#"<p class="note chart-omitted" id="chart-run-10-db-waits">Database waits per step — idle: {why}</p>"#)),
        "{html}"
    );
    assert!(!html.contains(r#"aria-label="Database waits per step"#), "no chart of zero lines");
    // One waits above zero in one step: drawn.
    let one = with_db(sweep(11, "one", "host-a", [100.0, 150.0, 160.0, 120.0], true), |i| {
        Some(DbTelemetry { engine: "mysql".into(), row_lock_waits_per_s: Some(if i == 3 { 0.5 } else { 0.0 }), ..Default::default() })
    });
    let chart = scalelab_report::charts::db_waits(&one).unwrap();
    assert!(!chart.omitted && chart.svg.is_ok());

    // No database probe: no chart at all.
    assert!(scalelab_report::charts::db_waits(&ReportRun::new(sweep(9, "http", "h", [1.0, 2.0, 3.0, 4.0], true))).is_none());
}

#[test]
fn runs_of_very_different_sizes_get_a_log_axis_and_the_scaling_chart_comes_first() {
    // Today's sweep at ~50,000 req/s beside the 2005 series at ~300 q/s.
    let tiger = [(1u32, 192.0), (2, 274.0), (4, 113.0), (8, 62.0)];
    let runs = vec![
        ReportRun::new(sweep(1, "today", "host-a", [20_000.0, 38_000.0, 50_000.0, 49_000.0], true)),
        ReportRun::new(imported_pairs(2, &tiger)),
    ];
    let svg = scalelab_report::charts::throughput(&runs).svg.unwrap();
    assert!(svg.contains("log scale)</text>"), "the axis title says log scale: {svg}");
    assert!(svg.contains("log scale: the runs&#39; peaks differ 182× (274 to 50,000 req/s)</text>"), "{svg}");
    for tick in [">100</text>", ">1000</text>", ">10k</text>", ">100k</text>"] {
        assert!(svg.contains(tick), "decade tick {tick}: {svg}");
    }
    // Runs of similar size keep a linear axis.
    let similar = vec![runs[0].clone(), ReportRun::new(sweep(3, "other", "host-b", [9_000.0, 18_000.0, 30_000.0, 31_000.0], true))];
    let linear = scalelab_report::charts::throughput(&similar).svg.unwrap();
    assert!(!linear.contains("log scale"), "{linear}");
    // The scaling chart (% of each run's first step) is the first chart of the page.
    let html = scalelab_report::html::render(&ReportInput { runs, ..Default::default() });
    let scaling = html.find(r#"<figure id="chart-scaling">"#).expect("scaling chart");
    let throughput = html.find(r#"<figure id="chart-throughput">"#).expect("throughput chart");
    assert!(scaling < throughput && html[..scaling].matches("<figure").count() == 0, "scaling is the first chart");
}

#[test]
fn a_timeline_with_short_windows_is_one_line_over_bands_that_tile_the_run() {
    // Windows of 0.9 s: one per-second figure each, which used to be four
    // lone dots. From the 4-client step on, steps started 1.5 s late (a gap
    // after the 2-client step's pause).
    let mut run = sweep(1, "short", "host-a", [100.0, 180.0, 200.0, 150.0], true);
    for (i, s) in run.steps.iter_mut().enumerate() {
        // ... and the 8-client one 8 ms later still (a sliver of a gap).
        let late = [0, 0, 1500, 1508][i];
        s.window_start_unix_ms = 1_700_000_000_000 + 1000 + i as i64 * 4000 + late;
        s.window_end_unix_ms = s.window_start_unix_ms + 900;
        s.window_s = 0.9;
        s.seconds.truncate(1);
    }
    let r = ReportRun::new(run);
    let t = r.timeline.as_ref().unwrap();
    assert_eq!(t.throughput_per_s.len(), 4);
    assert!(t.throughput_per_s.iter().all(|p| p.1.is_some()), "no gap stands for a warm-up or a pause");
    // The bands tile the run from the first warm-up to the last pause.
    for w in t.phases.windows(2) {
        assert!((w[1].start_s - w[0].end_s).abs() < 0.001, "a blank between {:?} and {:?}", w[0], w[1]);
    }
    let late_pause = t.phases.iter().find(|p| p.kind == scalelab_report::model::PhaseKind::Pause && p.concurrency == 2).unwrap();
    assert!((late_pause.end_s - late_pause.start_s - (1.0 + 1.1 + 1.5)).abs() < 0.01, "{late_pause:?}");
    let chart = scalelab_report::charts::timeline(&r).into_iter().find(|c| c.id == "run-1-timeline-throughput").unwrap();
    let svg = chart.svg.unwrap();
    let series = svg.split(r#"<g class="series""#).nth(1).unwrap().split("</g>").next().unwrap();
    assert_eq!(series.matches("<polyline ").count(), 1, "one polyline for the run: {series}");
    let points = series.split(r#"points=""#).nth(1).unwrap().split('"').next().unwrap();
    assert_eq!(points.split(' ').count(), 4, "through every window: {points}");
    let bands = |fill: &str| svg.matches(&format!(r#"fill="{fill}"><title>"#)).count();
    assert_eq!(
        (bands(scalelab_report::svg::WARMUP_FILL), bands(scalelab_report::svg::WINDOW_FILL), bands(scalelab_report::svg::PAUSE_FILL)),
        (4, 4, 4)
    );
    assert!(svg.contains("the line joins the windows across them"), "{svg}");
}

#[test]
fn the_page_header_lists_every_run_micro_runs_too() {
    let html = scalelab_report::html::render(&input(None));
    let header = html.split(r#"<p class="note runs">"#).nth(1).unwrap().split("</p>").next().unwrap();
    assert!(
        header.starts_with("run 1: lock; run 2: nolock; imported 3: G5 Tiger; micro run 4: host-a — generated by scalelab"),
        "{header}"
    );
    assert!(html.contains("<title>scalelab report: lock, nolock, G5 Tiger, host-a</title>"));
}

#[test]
fn preflight_warnings_show_in_the_configuration_escaped_and_old_runs_have_no_row() {
    use scalelab_core::preflight::{Check, CheckStatus};
    // Runs recorded before the preflight: no row at all (the pinned snapshot).
    assert!(!scalelab_report::markdown::render(&input(None)).contains("| preflight |"));
    let mut i = input(None);
    let check = |id: &str, status, figure: &str| Check { id: id.into(), status, figure: figure.into(), why: "w".into(), fix: "f".into() };
    i.runs[0].run.environment.preflight = Some(vec![
        check("net.listen_backlog", CheckStatus::Warn, "backlog 8 for 50 clients <script>|x"),
        check("cpu.smt", CheckStatus::Ok, "SMT off"),
        check("cpu.governor", CheckStatus::Unavailable, "no cpufreq"),
    ]);
    let md = scalelab_report::markdown::render(&i);
    let row = md.lines().find(|l| l.starts_with("| preflight |") || l.starts_with("| **preflight** ≠ |")).expect("a preflight row");
    assert!(row.contains("1 warn: net.listen_backlog: backlog 8 for 50 clients &lt;script&gt;\\|x (1 unavailable)"), "{row}");
    let html = scalelab_report::html::render(&i);
    assert!(
        html.contains("1 warn: net.listen_backlog: backlog 8 for 50 clients &lt;script&gt;|x (1 unavailable)"),
        "not escaped in the HTML"
    );
    assert!(!html.contains("<script>|x"));
}

#[test]
fn the_per_agent_breakdown_is_in_both_reports_escaped() {
    let mut i = input(None);
    assert!(!scalelab_report::markdown::render(&i).contains("Per agent"), "a run without agents has no breakdown");
    i.runs[0].run.plan.options.insert(
        "agent_steps".into(),
        serde_json::json!([{"step": 0, "agents": [
            {"agent": "ssh://<b>x|y</b>", "concurrency": 2, "requests": 900, "throughput_per_s": 450.0, "p99_ms": 1.5, "client_cpu_pct": 12.0, "client_bound": false, "lost": false, "window_start_unix_ms": 5003},
            {"agent": "tcp://b:7070", "concurrency": 1, "offered_rate_per_s": 200.0, "requests": 400, "throughput_per_s": 200.0, "p99_ms": 2.0, "client_cpu_pct": 8.0, "client_bound": false, "lost": false, "window_start_unix_ms": 5000}
        ]}]),
    );
    let md = scalelab_report::markdown::render(&i);
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| 1 | ssh:") || l.starts_with("| 1 | tcp:")).collect();
    assert_eq!(rows.len(), 2, "{md}");
    assert_eq!(rows[0], "| 1 | ssh://&lt;b&gt;x\\|y&lt;/b&gt; | 2 | 900 | 450 | 1.50 | 12% | +3 ms |  |");
    assert_eq!(rows[1], "| 1 | tcp://b:7070 | 200/s (1 conn) | 400 | 200 | 2.00 | 8% | +0 ms |  |");
    let html = scalelab_report::html::render(&i);
    assert!(html.contains("<td class=\"text\">ssh://&lt;b&gt;x|y&lt;/b&gt;</td>") && !html.contains("<b>x"), "escaped in the HTML");
    assert!(html.contains("<td>+3 ms</td>") && html.contains("Per agent"));
}

/// The numbers of the page's `<h2>` sections, in order.
fn section_numbers(html: &str) -> Vec<u32> {
    html.split("<h2>").skip(1).filter_map(|h| h.split('.').next().and_then(|n| n.parse().ok())).collect()
}

#[test]
fn sections_are_numbered_without_gaps_and_one_run_has_results_not_a_comparison() {
    // Runs and micro-benchmarks, no profile: numbered 1 to 9 (it jumped from 8 to 10).
    let html = scalelab_report::html::render(&input(None));
    let n = section_numbers(&html);
    assert_eq!(n, (1..=n.len() as u32).collect::<Vec<_>>(), "{n:?}");
    assert!(html.contains(". Comparison</h2>"));
    // One run: nothing to compare, the step tables are its results.
    let one =
        ReportInput { runs: vec![ReportRun::new(sweep(1, "lock", "host-a", [100.0, 180.0, 200.0, 150.0], true))], ..Default::default() };
    let html = scalelab_report::html::render(&one);
    let n = section_numbers(&html);
    assert_eq!(n, (1..=n.len() as u32).collect::<Vec<_>>(), "{n:?}");
    assert!(!html.contains("Comparison"), "a single run has no Comparison section or link");
    assert!(html.contains(". Results</h2>") && html.contains(r##"<a href="#comparison">Results</a>"##));
    let md = scalelab_report::markdown::render(&one);
    assert!(md.contains("\n## Results\n") && !md.contains("## Comparison"), "{md}");
}

#[test]
fn two_specimen_runs_do_not_differ_by_the_free_port_each_listened_on() {
    let mut i = input(None);
    i.runs.truncate(2);
    for (r, port) in i.runs.iter_mut().take(2).zip([41235, 38007]) {
        r.run.plan.target = "specimen:scales".into();
        r.run.plan.workload = format!("GET http://127.0.0.1:{port}/");
    }
    let md = scalelab_report::markdown::render(&i);
    let row = md.lines().find(|l| l.contains("workload")).expect("a workload row");
    assert!(row.starts_with("| workload |"), "highlighted as a difference: {row}");
    // Another path is a difference.
    i.runs[1].run.plan.workload = "GET http://127.0.0.1:38007/other".into();
    let md = scalelab_report::markdown::render(&i);
    let row = md.lines().find(|l| l.contains("workload")).expect("a workload row");
    assert!(row.starts_with("| **workload** ≠ |"), "{row}");
}
