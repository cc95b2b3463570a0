//! Open-loop sweeps (`--rate`, issue 21) against the real specimen: bad
//! input, the JSON of a rate step, and the figures that make open loop
//! worth having (dropped at overload with a bounded client, the offered
//! rate kept below the limit, a stall a closed loop hides).

mod common;

use common::*;
use serde_json::Value;

/// A short open-loop (or closed-loop) sweep of the specimen, as JSON.
fn sweep(mode: &str, extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let mut args = vec!["sweep", "--specimen", mode, "--warmup", "0.3s", "--pause", "0.2s", "--sample-interval", "200ms", "--json", "-q"];
    args.extend_from_slice(extra);
    json(&store, &args)
}

#[test]
fn bad_open_loop_input_is_one_line_exit_2_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    for (args, says) in [
        (&["--rate", "1000", "-c", "1,2"][..], "exclude each other"),
        (&["--rate", "0"][..], "invalid rate list '0'"),
        (&["--rate", "1000,,2000"][..], "invalid rate list"),
        (&["--rate", "fast"][..], "invalid rate list"),
        (&["--rate", "1000", "--arrival", "bursty"][..], "--arrival 'bursty': use constant or poisson"),
        (&["--rate", "1000", "--max-in-flight", "0"][..], "--max-in-flight '0'"),
        (&["--rate", "1000", "--max-in-flight", "many"][..], "--max-in-flight 'many'"),
        (&["--rate", "1000", "--latency-budget", "soon"][..], "--latency-budget 'soon': use a duration from 0 to 60s"),
        (&["--rate", "1000", "--latency-budget", "2m"][..], "--latency-budget '2m'"),
        (&["-c", "1", "--latency-budget", "1s"][..], "give --rate too"),
        (&["--arrival", "poisson"][..], "give --rate too"),
        (&["-c", "1", "--max-in-flight", "10"][..], "give --rate too"),
        (&["--rate", "1000", "--think-time", "10ms"][..], "--think-time applies to closed-loop steps"),
    ] {
        let mut all = vec!["sweep", "-q"];
        all.extend_from_slice(args);
        assert_bad_input(&store, &all, says);
    }
    for args in [["--stall-for", "3s", "--stall-every", "2s"], ["--stall-for", "soon", "--stall-every", "2s"]] {
        let out = bin().args(["specimen", "--mode", "stall"]).args(args).output().unwrap();
        let err = stderr(&out);
        assert_eq!((out.status.code(), err.lines().count()), (Some(2), 1), "{args:?}: {err}");
        assert!(err.contains("--stall-"), "{err}");
    }
}

#[test]
fn a_rate_step_reports_offered_achieved_service_dropped_and_late_sends() {
    let _cpu = cpu_exclusive();
    let run = sweep("scales", &["--work-us", "50", "--rate", "300,600", "--arrival", "poisson", "--max-in-flight", "64", "-d", "1s"]);
    assert_matches_schema(&run);
    let plan = &run["schedule"]["steps"][1]["open_loop"];
    assert_eq!(
        (plan["rate_per_s"].as_f64(), plan["arrival"].as_str(), plan["max_in_flight"].as_u64()),
        (Some(600.0), Some("poisson"), Some(64))
    );
    for (s, rate) in steps(&run).iter().zip([300.0, 600.0]) {
        assert_eq!(s["offered_rate_per_s"].as_f64(), Some(rate));
        let achieved = s["throughput_per_s"].as_f64().unwrap();
        // The shape, not the figures (below_the_limit_... checks them): a
        // busy machine may stall this short window.
        assert!((0.5 * rate..=1.5 * rate).contains(&achieved), "{achieved} req/s of {rate} offered");
        assert!(s["latency_ms"]["p50"].as_f64().unwrap() >= s["service_ms"]["p50"].as_f64().unwrap() - 0.01, "{s}");
        // Far below the specimen's limit, with 64 connections for a few
        // ms of latency: only a server stalled by a busy machine drops any.
        assert!(s["dropped"].as_f64().unwrap() <= 0.05 * rate, "{s}");
        assert!(s["late_sends"].is_u64());
    }
    // A closed-loop run keeps its shape: none of the open-loop keys.
    let closed = sweep("scales", &["--work-us", "50", "-c", "1", "-d", "1s"]);
    let s = &steps(&closed)[0];
    for key in ["offered_rate_per_s", "achieved_pct", "service_ms", "dropped", "late_sends"] {
        assert!(s.get(key).is_none(), "{key} in a closed-loop step");
    }
    assert!(closed["schedule"]["steps"][0].get("open_loop").is_none());
}

/// The most resident memory of a process sampled every 50 ms until it
/// exits, kB; and its output.
fn run_sampling_rss(store: &std::path::Path, args: &[&str]) -> (u64, std::process::Output) {
    let child = spawn(store, args);
    let status = format!("/proc/{}/status", child.id());
    let most = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut most = 0u64;
            while let Ok(text) = std::fs::read_to_string(&status) {
                let rss = text.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()?.parse().ok());
                match rss {
                    Some(kb) => most = most.max(kb),
                    None => break, // a zombie: it has exited
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            most
        });
        let out = child.wait_with_output().unwrap();
        (sampler.join().unwrap(), out)
    });
    most
}

/// The specimen's global lock held for 200 µs of CPU per request: at most
/// 5,000 req/s whatever the machine (fewer when it is busy).
const LIMIT: f64 = 5_000.0;

#[test]
fn at_twice_the_limit_requests_are_dropped_and_the_client_stays_small() {
    let _cpu = cpu_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let args = ["sweep", "--specimen", "global-lock", "--work-us", "200", "--rate", "10000", "-d", "2s", "--warmup", "0.3s"];
    let (rss_kb, out) = run_sampling_rss(&store, &[&args[..], &["--json", "-q"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &steps(&run)[0];
    let achieved = s["throughput_per_s"].as_f64().unwrap();
    assert!(achieved <= LIMIT * 1.05, "{achieved} req/s through a lock that admits {LIMIT}");
    let dropped = s["dropped"].as_u64().unwrap();
    // Offered 20,000 in the window, at most ~10,000 served: the rest dropped.
    assert!(dropped as f64 >= 0.3 * 20_000.0, "dropped {dropped} of 20,000 offered ({achieved} req/s served)");
    assert_eq!(s["errors"]["dropped"].as_u64(), Some(dropped));
    // max_in_flight (200 here) bounds what the client holds: tens of MB, not
    // a queue growing by 5,000 requests a second.
    assert!(rss_kb < 64 * 1024, "client RSS {rss_kb} kB");
    assert_eq!(run["outcome"], "completed", "dropped requests measure an overload; they do not fail the run");
    // The table shows offered against achieved.
    let table = run_ok(&store, &["show", "last"]);
    let mut lines = table.lines().skip_while(|l| !l.starts_with("offered/s"));
    let header = lines.next().unwrap_or_else(|| panic!("no offered/s column: {table}"));
    for col in ["throughput/s", "achieved", "svc p99", "dropped", "late"] {
        assert!(header.contains(col), "{col} in {header}");
    }
    assert!(lines.next().unwrap().starts_with("10,000 "), "{table}");
}

fn run_ok(store: &std::path::Path, args: &[&str]) -> String {
    let out = run(store, args);
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn below_the_limit_the_offered_rate_is_achieved() {
    let _cpu = cpu_exclusive();
    // 300 req/s: 6 % of the limit, about a tenth of a core for server and
    // client together, which a machine busy with a build still gives them;
    // 300 connections carry it through a server descheduled for a second.
    let run = sweep("global-lock", &["--work-us", "200", "--rate", "300", "--max-in-flight", "300", "-d", "3s"]);
    let s = &steps(&run)[0];
    let achieved = s["throughput_per_s"].as_f64().unwrap();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let why = format!("dropped {}, late sends {}, p99 {} ms, load {load}", s["dropped"], s["late_sends"], s["latency_ms"]["p99"]);
    // 900 arrivals in the window. Completions count by completion time: a
    // stall of a busy machine at an edge of the window moves some across it.
    assert!((279.0..=321.0).contains(&achieved), "achieved {achieved} req/s of 300 offered: {why}");
    assert!(s["dropped"].as_u64().unwrap() <= 9, "{why}");
}

#[test]
fn a_stall_shows_in_the_open_loop_p99_and_hides_in_the_closed_loop() {
    let _cpu = cpu_exclusive();
    // 200 ms stalls every 2 s; any 3 s window holds at least one whole stall.
    let open = sweep("stall", &["--rate", "2000", "-d", "3s"]);
    let closed = sweep("stall", &["-c", "10", "-d", "3s"]);
    let p99 = |run: &Value| steps(run)[0]["latency_ms"]["p99"].as_f64().unwrap();
    // Open loop: the ~400 requests due in a stall (of 6,000) wait up to 200 ms.
    assert!(p99(&open) >= 100.0, "open-loop p99 {} ms", p99(&open));
    // Closed loop: 10 requests wait through each stall and the clients send
    // nothing meanwhile, so the stall is under 1 % of the requests.
    assert!(p99(&closed) < 100.0, "closed-loop p99 {} ms", p99(&closed));
    let served = steps(&closed)[0]["requests"].as_f64().unwrap();
    assert!(served > 2.0 * 10.0 / 0.01, "enough requests that 2 stalls x 10 clients are under 1 %: {served}");
}

#[test]
fn per_second_service_time_shows_the_gap_coordinated_omission_leaves() {
    let _cpu = cpu_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    // 10 connections, like the closed loop's 10 clients above: during a
    // 200 ms stall they are all out, the ~400 requests due meanwhile wait
    // for them (their wait counts in the latency), and only those 10 see
    // the stall in their service time.
    let args = [
        "sweep",
        "--specimen",
        "stall",
        "--rate",
        "2000",
        "--max-in-flight",
        "10",
        "-d",
        "3s",
        "--warmup",
        "0.3s",
        "--pause",
        "0.2s",
        "--sample-interval",
        "200ms",
        "--json",
        "-q",
    ];
    json(&store, &args);
    // Read back from the store: the per-second service histograms were kept.
    let shown = json(&store, &["show", "last", "--json"]);
    assert_matches_schema(&shown);
    let seconds = steps(&shown)[0]["seconds"].as_array().unwrap().clone();
    assert_eq!(seconds.len(), 3, "{seconds:?}");
    for s in &seconds {
        assert!(s["service_p50_ms"].as_f64().is_some() && s["service_p99_ms"].as_f64().is_some(), "{s}");
    }
    let stall = seconds.iter().max_by(|a, b| a["p99_ms"].as_f64().partial_cmp(&b["p99_ms"].as_f64()).unwrap()).unwrap();
    let (latency, service) = (stall["p99_ms"].as_f64().unwrap(), stall["service_p99_ms"].as_f64().unwrap());
    // ~400 late requests of ~2,000 in the stall second; 10 slow services of ~1,600.
    assert!(latency >= 100.0, "the stall second's latency p99 {latency} ms: {stall}");
    assert!(latency >= 4.0 * service, "latency p99 {latency} ms vs service p99 {service} ms: {stall}");
    // The CSV of the seconds carries them too.
    let out = run(&store, &["export", "last", "--series"]);
    let csv = String::from_utf8_lossy(&out.stdout);
    assert!(csv.lines().next().unwrap_or("").ends_with(",service_p50_ms,service_p99_ms"), "{csv}");

    // A closed loop's seconds keep their shape: no service keys.
    let closed = json(&store, &["sweep", "--specimen", "stall", "-c", "2", "-d", "1s", "--warmup", "0.2s", "--json", "-q"]);
    assert!(steps(&closed)[0]["seconds"][0].get("service_p99_ms").is_none());
}

#[test]
fn a_sql_target_takes_an_offered_rate_too() {
    let pg = scalelab_testkit::postgres::Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = pg.url();
    common::prepare_sbtest(&store, &url, 1000);
    let args =
        ["sweep", &url, "-w", "point-select", "--rate", "200", "--max-in-flight", "50", "--warmup", "0.2s", "-d", "2s", "--json", "-q"];
    let run = json(&store, &args);
    let s = &steps(&run)[0];
    assert_eq!(s["offered_rate_per_s"].as_f64(), Some(200.0));
    let achieved = s["throughput_per_s"].as_f64().unwrap();
    // 400 point selects due in the window, a small share of what PostgreSQL serves.
    assert!((180.0..=220.0).contains(&achieved), "{achieved} q/s of 200 offered: {s}");
    assert!(s["service_ms"]["p50"].as_f64().unwrap() <= s["latency_ms"]["p50"].as_f64().unwrap() + 0.01, "{s}");
    assert_eq!(s["concurrency"].as_u64(), Some(50), "the pool: max_in_flight connections");
}

/// `report RUN -o HTML --svg DIR` of the run in `store`: the page and the chart files by name.
pub fn report(store: &std::path::Path, run_id: &str) -> (String, std::collections::BTreeMap<String, String>) {
    let dir = store.parent().unwrap().join(format!("report-{run_id}"));
    let html = dir.join("r.html");
    let svg = dir.join("svg");
    let out = common::run(store, &["report", run_id, "-o", html.to_str().unwrap(), "--svg", svg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let files = std::fs::read_dir(&svg)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    (std::fs::read_to_string(&html).unwrap(), files)
}

#[test]
fn a_rate_sweep_report_draws_the_hockey_stick_and_achieved_vs_offered_and_a_closed_loop_does_not() {
    let _cpu = cpu_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let base = ["--specimen", "global-lock", "--work-us", "500", "--warmup", "0.2s", "--pause", "0.1s", "-d", "1s", "--json", "-q"];
    let open = json(&store, &[&["sweep", "--rate", "400,800,3000", "--label", "rates <&>"][..], &base[..]].concat());
    let closed = json(&store, &[&["sweep", "-c", "1,2"][..], &base[..]].concat());
    let (page, svgs) = report(&store, &open["id"].to_string());
    let id = open["id"].as_i64().unwrap();
    let hockey = svgs.get(&format!("run-{id}-latency-vs-rate")).unwrap_or_else(|| panic!("{:?}", svgs.keys()));
    for name in ["p50", "p99", "p99.9", "service p99 (from the actual send)"] {
        assert!(hockey.contains(&format!(r#"<g class="series" data-name="{name}">"#)), "{name}: {hockey}");
    }
    assert!(hockey.contains("latency (ms, log scale)") && hockey.contains("offered rate (req/s)"), "{hockey}");
    // The label is escaped in the title, never raw markup.
    assert!(hockey.contains("Latency vs offered rate — rates &lt;&amp;&gt;") && !hockey.contains("rates <&>"), "{hockey}");
    // One dot per offered rate on each percentile line, at x 400, 800, 3000.
    for rate in ["400", "800", "3000"] {
        assert!(hockey.contains(&format!(" at {rate}\"")), "{rate}: {hockey}");
    }
    let achieved = &svgs[&format!("run-{id}-achieved-vs-offered")];
    assert!(achieved.contains(r#"data-name="achieved""#) && achieved.contains(r#"data-name="offered (every request answered)""#));
    assert!(page.contains("Latency vs offered rate") && page.contains("Achieved vs offered rate"));
    assert!(!svgs.keys().any(|k| k.contains("capacity")), "a rate sweep is not a capacity search: {:?}", svgs.keys());

    let (page, svgs) = report(&store, &closed["id"].to_string());
    assert!(svgs.keys().any(|k| k.ends_with("-latency")), "{:?}", svgs.keys());
    assert!(!svgs.keys().any(|k| k.contains("vs-rate") || k.contains("vs-offered") || k.contains("capacity")), "{:?}", svgs.keys());
    assert!(!page.contains("offered rate"), "a closed-loop report has no open-loop chart");
}

#[test]
fn plain_progress_lines_name_open_loop_steps_by_their_offered_rate() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let args = [
        "sweep",
        "--specimen",
        "scales",
        "--rate",
        "2000,3000",
        "--max-in-flight",
        "40",
        "--warmup",
        "0.2s",
        "-d",
        "1.2s",
        "--pause",
        "0s",
        "--no-tui",
    ];
    let out = run(&store, &args);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("step 1/2: 2,000/s\n") && err.contains("step 2/2: 3,000/s\n"), "{err}");
    assert!(err.contains("step 1/2 2,000/s done: ") && err.contains("step 2/2 3,000/s done: "), "{err}");
    assert!(err.contains("step 2/2 3,000/s window "), "the tick lines too: {err}");
    assert!(!err.contains("40 clients") && !err.contains("c=40"), "not by its connections: {err}");
}

#[test]
fn the_stall_demo_shows_its_stalls_as_latency_and_names_them() {
    let _cpu = cpu_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    // The README's coordinated-omission demo: 200 ms stalls every 2 s, so a
    // 5 s window holds two or three. The requests due in a stall wait for a
    // connection (the default latency budget, 1 s) instead of being
    // dropped: the stall is latency, and the verdict names it.
    let run = json(&store, &["sweep", "--specimen", "stall", "--rate", "2000", "-d", "5s", "--warmup", "0.3s", "--json", "-q"]);
    let s = &steps(&run)[0];
    assert_eq!(run["schedule"]["steps"][0]["open_loop"]["latency_budget_s"].as_f64(), Some(1.0));
    let offered = 2000.0 * 5.0;
    let dropped = s["dropped"].as_f64().unwrap();
    let why = format!("dropped {dropped}, p99 {} ms, errors {}", s["latency_ms"]["p99"], s["errors"]);
    assert!(dropped <= 0.01 * offered, "a 200 ms stall fits in a 1 s budget: {why}");
    assert!(s["latency_ms"]["p99"].as_f64().unwrap() >= 100.0, "the stall shows in the p99: {why}");
    let kinds: Vec<&str> = run["verdicts"].as_array().unwrap().iter().filter_map(|v| v["kind"].as_str()).collect();
    if kinds.contains(&"client-bound") && s["client_saturated"] == true {
        // Beside a CPU hog the client fell behind its own schedule (20
        // dropped, measured): the run says the figures are the client's,
        // and no verdict about the server follows. That is the right answer.
        eprintln!("note: the client was the limit here ({kinds:?}): the stall verdict is not checked");
        return;
    }
    assert!(kinds.contains(&"periodic-stalls"), "{kinds:?}: {why}");
    assert!(!kinds.contains(&"errors"), "{kinds:?}: {why}");
    let stalls = run["verdicts"].as_array().unwrap().iter().find(|v| v["kind"] == "periodic-stalls").unwrap();
    assert!(stalls["headline"].as_str().unwrap().contains("stops answering now and then"), "{stalls}");
    // `show` says how requests met busy connections, once, under the table.
    let out = run_ok(&store, &["show", "last"]);
    assert!(
        out.contains("open loop: connections 40 at 2,000/s (--max-in-flight); a request due while all are busy waits up to 1s"),
        "{out}"
    );
    assert!(out.contains("PERIODIC STALLS"), "{out}");
}

#[test]
fn versus_runs_both_arms_open_loop_at_the_same_rates_interleaved() {
    let _cpu = cpu_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let args = [
        "sweep",
        "--specimen",
        "scales",
        "--work-us",
        "50",
        "--rate",
        "200,400",
        "--versus",
        "specimen:scales:100",
        "--warmup",
        "0.2s",
        "-d",
        "0.5s",
        "--pause",
        "0.1s",
        "-q",
        "--no-tui",
    ];
    let (a, b) = versus_runs(&store, &args);
    let (ia, ib) = (a["id"].to_string(), b["id"].to_string());
    for (run, arm, work) in [(&a, "A", 50), (&b, "B", 100)] {
        let v = &run["schedule"]["options"]["versus"];
        assert_eq!((&v["pair"], &v["arm"], &v["blocks"]), (&serde_json::json!([a["id"], b["id"]]), &arm.into(), &2.into()), "{v}");
        assert_eq!(run["schedule"]["options"]["specimen_work_us"], work);
        // Every planned window is open loop, at the rates asked for, 2
        // blocks x 2 windows at each.
        let planned = run["schedule"]["steps"].as_array().unwrap();
        assert_eq!(planned.len(), 8, "{arm}: {planned:?}");
        for p in planned {
            assert!(p["open_loop"]["rate_per_s"].is_f64(), "{arm}: a closed-loop window in an open-loop versus: {p}");
        }
        for rate in [200.0, 400.0] {
            let at: Vec<&Value> = steps(run).iter().filter(|s| s["offered_rate_per_s"].as_f64() == Some(rate)).collect();
            assert_eq!(
                at.len(),
                4,
                "{arm}: 4 windows at {rate}/s: {:?}",
                steps(run).iter().map(|s| &s["offered_rate_per_s"]).collect::<Vec<_>>()
            );
            // The shape, not the figures: a busy machine may stall a short
            // window, so the 4 windows' mean.
            let achieved = at.iter().map(|s| s["throughput_per_s"].as_f64().unwrap()).sum::<f64>() / 4.0;
            assert!((0.5 * rate..=1.5 * rate).contains(&achieved), "{arm}: {achieved}/s of {rate}/s offered: {at:?}");
            for s in at {
                assert!(s["service_ms"]["p50"].is_f64() && s["dropped"].is_u64(), "{arm}: an open-loop step: {s}");
            }
        }
    }
    // A B B A in time, at one rate.
    assert_abba(&a, &b, 8);
    // `compare` pairs them window by window, at each offered rate.
    assert_compare_pairs(&store, &ia, &ib, &[200, 400], 4);
}
