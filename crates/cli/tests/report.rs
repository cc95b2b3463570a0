//! `scalelab report` end to end: real short sweeps of the specimen (one with
//! the thread sampler off) plus an imported published series, rendered as
//! HTML and loaded in headless Chromium over the DevTools protocol. The page
//! must log no error, request nothing but itself, and draw every chart with
//! the series it announces; a screenshot is kept under
//! `target/test-artifacts/`. The page is also laid out at a laptop's 1366 px
//! and a phone's 390 px: nothing scrolls the page sideways, every chart is
//! there and every chart label inside its chart; screenshots at both widths
//! are kept. Also: Markdown, `--svg`, `--png`, and bad input.

#[path = "common/chromium.rs"]
mod chromium;
mod common;

use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn published(name: &str) -> String {
    format!("{}/../../examples/published/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().expect("target dir").join("test-artifacts");
    std::fs::create_dir_all(&dir).expect("creating target/test-artifacts");
    dir
}

/// A sub-second sweep of the specimen (4 steps, enough for a USL fit).
fn short_sweep(store: &Path, label: &str, thread_hz: &str) -> i64 {
    let run = json(
        store,
        &[
            "sweep",
            "--specimen",
            "global-lock",
            "--work-us",
            "300",
            "-c",
            "1,2,4,8",
            "--warmup",
            "0.2s",
            "--duration",
            "0.9s",
            "--pause",
            "0.2s",
            "--thread-sample-hz",
            thread_hz,
            "--label",
            label,
            "--json",
            "-q",
        ],
    );
    run["id"].as_i64().expect("run id")
}

const CHARTS_JS: &str = r#"JSON.stringify({
  charts: Array.from(document.querySelectorAll('svg.chart')).map(function (s) {
    var r = s.getBoundingClientRect();
    var groups = Array.from(s.querySelectorAll('g.series'));
    return {
      id: s.parentElement.id,
      announced: +s.getAttribute('data-series'),
      series: groups.length,
      painted: groups.filter(function (g) {
        var path = g.querySelector('polyline');
        var visible = Array.from(g.querySelectorAll('circle, rect')).filter(function (e) { return e.getAttribute('fill-opacity') !== '0'; });
        return (path && path.getTotalLength() > 0) || visible.length > 0;
      }).length,
      width: r.width,
      height: r.height
    };
  }),
  unavailable: Array.from(document.querySelectorAll('figure.chart-unavailable')).map(function (f) {
    return { id: f.id, text: f.textContent };
  }),
  sections: Array.from(document.querySelectorAll('section h2')).map(function (h) { return h.textContent; })
})"#;

/// No console errors or warnings, no exceptions, no browser log errors, and
/// no request but the page itself (`url`), among every event so far.
/// Headless Chromium with the page, its console, its log and its network
/// reported (what [`assert_clean`] reads).
fn browser(profile: &Path) -> chromium::Browser {
    let mut b = chromium::Browser::start(profile);
    for domain in ["Runtime.enable", "Log.enable", "Network.enable", "Page.enable"] {
        b.call(domain, json!({}));
    }
    b
}

fn assert_clean(b: &chromium::Browser, url: &str) {
    let console: Vec<&Value> = b
        .events_named("Runtime.consoleAPICalled")
        .into_iter()
        .filter(|e| matches!(e["params"]["type"].as_str(), Some("error" | "assert" | "warning")))
        .collect();
    assert!(console.is_empty(), "console errors: {console:?}");
    let exceptions = b.events_named("Runtime.exceptionThrown");
    assert!(exceptions.is_empty(), "exceptions: {exceptions:?}");
    let log_errors: Vec<&Value> =
        b.events_named("Log.entryAdded").into_iter().filter(|e| e["params"]["entry"]["level"] == "error").collect();
    assert!(log_errors.is_empty(), "log errors: {log_errors:?}");
    let requests: Vec<String> = b
        .events_named("Network.requestWillBeSent")
        .iter()
        .map(|e| e["params"]["request"]["url"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(requests.contains(&url.to_string()), "the listener saw the page's own load: {requests:?}");
    assert!(requests.iter().all(|u| u == url), "the report fetched something: {requests:?}");
}

#[test]
fn html_report_loads_in_chromium_offline_and_draws_every_chart() {
    let _cpu = cpu_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let with_threads = short_sweep(&store, "lock", "50");
    let without_threads = short_sweep(&store, "lock, no thread sampler", "0");
    let out = run(&store, &["import", &published("mysql-scaling-g5-tiger-linux-opteron.csv")]);
    assert!(out.status.success(), "{}", stderr(&out));

    let html = dir.path().join("report.html");
    let svg_dir = dir.path().join("charts");
    let ids = [with_threads.to_string(), without_threads.to_string(), "G5 Tiger".to_string()];
    let out = run(&store, &["report", &ids[0], &ids[1], &ids[2], "-o", html.to_str().unwrap(), "--svg", svg_dir.to_str().unwrap()]);
    assert!(out.status.success(), "report failed: {}", stderr(&out));
    assert!(svg_dir.join("throughput.svg").exists() && svg_dir.join(format!("run-{with_threads}-timeline-cpu.svg")).exists());

    let profile = tempfile::tempdir().unwrap();
    let mut b = browser(profile.path());
    b.call("Emulation.setDeviceMetricsOverride", json!({"width": 1100, "height": 900, "deviceScaleFactor": 1, "mobile": false}));
    let url = format!("file://{}", html.display());
    b.call("Page.navigate", json!({"url": url}));
    assert!(b.wait_event("Page.loadEventFired", Duration::from_secs(60)), "the report never finished loading");
    b.settle(Duration::from_millis(500));

    assert_clean(&b, &url);
    let result = b.call("Runtime.evaluate", json!({"expression": CHARTS_JS, "returnByValue": true}));
    let page: Value = serde_json::from_str(result["result"]["value"].as_str().expect("string result")).expect("JSON from the page");
    let charts = page["charts"].as_array().unwrap();
    let find = |id: &str| charts.iter().find(|c| c["id"] == format!("chart-{id}")).unwrap_or_else(|| panic!("no chart {id} in {page}"));
    for c in charts {
        assert!(c["width"].as_f64().unwrap() > 100.0 && c["height"].as_f64().unwrap() > 100.0, "not laid out: {c}");
        assert!(c["announced"].as_u64().unwrap() > 0, "empty chart: {c}");
        assert_eq!(c["series"], c["announced"], "series drawn vs announced: {c}");
        assert_eq!(c["painted"], c["announced"], "every series has painted geometry: {c}");
    }
    // The expected series: 3 runs + their usable USL fits (drawn only when
    // `diagnose` has one: Tiger's, σ 2.16, is not); scaling 3 runs;
    // p50/p99/p99.9; per-second throughput; CPU user/system/iowait/idle; cs/s; 6 thread states.
    let fits = ids.iter().filter(|id| !json(&store, &["diagnose", id.as_str(), "--json"])["usl"].is_null()).count();
    assert!(json(&store, &["diagnose", "G5 Tiger", "--json"])["usl_error"].as_str().unwrap().contains("outside [0, 1]"));
    assert_eq!(find("throughput")["series"], 3 + fits);
    assert_eq!(find("scaling")["series"], 3);
    for id in [with_threads, without_threads] {
        assert_eq!(find(&format!("run-{id}-latency"))["series"], 3);
        assert_eq!(find(&format!("run-{id}-timeline-throughput"))["series"], 1);
        assert_eq!(find(&format!("run-{id}-timeline-cpu"))["series"], 4);
        assert_eq!(find(&format!("run-{id}-timeline-cs"))["series"], 1);
    }
    assert_eq!(find(&format!("run-{with_threads}-thread-states"))["series"], 6);
    // Missing data is said, not drawn: the imported series has no latency,
    // the run without the thread sampler has no thread states.
    let unavailable = page["unavailable"].as_array().unwrap();
    let text_of =
        |id: String| unavailable.iter().find(|u| u["id"] == format!("chart-{id}")).map(|u| u["text"].as_str().unwrap().to_string());
    assert!(text_of(format!("run-{without_threads}-thread-states")).expect("thread states said unavailable").contains("unavailable"));
    assert!(charts.iter().all(|c| c["id"] != format!("chart-run-{without_threads}-thread-states")));
    let imported_latency = unavailable.iter().find(|u| u["text"].as_str().unwrap().contains("an imported series has no latency"));
    assert!(imported_latency.is_some(), "{unavailable:?}");
    assert_eq!(page["sections"].as_array().unwrap().len(), 8, "sections 1-8: {}", page["sections"]);

    // Hover values: the inline script shows a point's value next to the pointer.
    let hover = b.call(
        "Runtime.evaluate",
        json!({"expression": "(function () { var c = document.querySelector('#chart-throughput circle[data-tip]'); c.dispatchEvent(new MouseEvent('mouseover', {bubbles: true})); var t = document.getElementById('tip'); return t.style.display + '|' + t.textContent; })()", "returnByValue": true}),
    );
    let shown = hover["result"]["value"].as_str().unwrap_or("");
    assert!(shown.starts_with("block|lock: "), "tooltip: {shown}");
    // Printable: the print layout renders to a PDF (kept beside the screenshot).
    let pdf = b.call("Page.printToPDF", json!({"printBackground": true}));
    use base64::Engine as _;
    let pdf = base64::engine::general_purpose::STANDARD.decode(pdf["data"].as_str().expect("PDF data")).expect("base64 PDF");
    assert!(pdf.starts_with(b"%PDF"), "a PDF");
    std::fs::write(artifacts().join("report.pdf"), &pdf).unwrap();

    let metrics = b.call("Page.getLayoutMetrics", json!({}));
    let height = metrics["cssContentSize"]["height"].as_f64().unwrap_or(4000.0);
    let shot = b.call(
        "Page.captureScreenshot",
        json!({"format": "png", "captureBeyondViewport": true, "clip": {"x": 0, "y": 0, "width": 1100, "height": height, "scale": 1}}),
    );
    let png = base64::engine::general_purpose::STANDARD.decode(shot["data"].as_str().expect("screenshot data")).expect("base64 PNG");
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    let path = artifacts().join("report.png");
    std::fs::write(&path, &png).unwrap();
    std::fs::copy(&html, artifacts().join("report.html")).unwrap();
    // Hovering, printing and the screenshot logged nothing either.
    b.settle(Duration::from_millis(300));
    assert_clean(&b, &url);
    eprintln!("screenshot: {}", path.display());
}

#[test]
fn markdown_report_and_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    assert!(run(&store, &["import", &published("mysql-64bit-vs-32bit.csv")]).status.success());
    let md = dir.path().join("r.md");
    let out = run(
        &store,
        &[
            "report",
            "Xeon 64-bit",
            "Xeon 32-bit",
            "--format",
            "md",
            "-o",
            md.to_str().unwrap(),
            "--png",
            dir.path().join("png").to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&md).unwrap();
    // --png: the charts as images, linked relative to the report.
    assert!(text.contains("![Throughput vs concurrency](png/throughput.png)"), "{text}");
    let png = std::fs::read(dir.path().join("png/throughput.png")).expect("throughput.png");
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "a PNG with content");
    assert!(text.contains("*Latency vs concurrency — Xeon 64-bit: unavailable: an imported series has no latency figures*"), "{text}");
    assert!(text.starts_with("# scalelab report\n"));
    assert!(text.contains("| **MAX** | 545 |"), "{text}");
    assert!(text.contains("| main verdict |"), "{text}");
    // Bad input: exit 2, one line, nothing written.
    let missing = dir.path().join("x.html");
    let out = run(&store, &["report", "no such run", "-o", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stderr(&out).trim().lines().count(), 1, "{}", stderr(&out));
    assert!(!missing.exists());
    let out = run(&dir.path().join("none.db"), &["report", "last"]);
    assert_eq!(out.status.code(), Some(2));
    // A failed write leaves no partial file behind.
    let out = run(&store, &["report", "Xeon 64-bit", "-o", dir.path().join("no/such/dir/r.html").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(std::fs::read_dir(dir.path()).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().ends_with(".tmp")));
}

/// Layout facts of the loaded page, at the width it was loaded with.
const LAYOUT_JS: &str = r#"JSON.stringify({
  innerWidth: window.innerWidth,
  scrollWidth: document.documentElement.scrollWidth,
  bodyScrollWidth: document.body.scrollWidth,
  height: document.documentElement.scrollHeight,
  header: document.querySelector('p.runs').textContent,
  omitted: Array.from(document.querySelectorAll('.chart-omitted')).map(function (p) { return p.id; }),
  charts: Array.from(document.querySelectorAll('figure')).map(function (f) {
    var r = f.getBoundingClientRect();
    var svg = f.querySelector('svg.chart');
    var out = { id: f.id, left: r.left, right: r.right, drawn: !!svg, width: 0, outside: [] };
    if (svg) {
      var vb = svg.viewBox.baseVal;
      out.width = svg.getBoundingClientRect().width;
      Array.from(svg.querySelectorAll('text')).forEach(function (t) {
        if (t.getAttribute('transform')) { return; }
        var b = t.getBBox();
        if (b.x < -0.5 || b.x + b.width > vb.width + 0.5 || b.y < -0.5 || b.y + b.height > vb.height + 0.5) {
          out.outside.push(t.textContent + ' [' + b.x.toFixed(1) + '..' + (b.x + b.width).toFixed(1) + ' of ' + vb.width + ']');
        }
      });
    }
    return out;
  })
})"#;

/// Width and height of a PNG, from its IHDR chunk.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && &png[12..16] == b"IHDR", "not a PNG");
    let be = |i: usize| u32::from_be_bytes(png[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn html_report_fits_a_laptop_and_a_phone() {
    let _cpu = cpu_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    // A sweep at thousands of req/s beside the 2005 series at ~200 q/s
    // (a log axis), and a micro run (listed in the header).
    let sweep = short_sweep(&store, "lock", "50");
    let out = run(&store, &["import", &published("mysql-scaling-g5-tiger-linux-opteron.csv")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(&store, &["micro", "--quick", "--only", "procs", "--label", "box", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    let micro_id: i64 = said.split("; run ").nth(1).and_then(|t| t.split(' ').next()).and_then(|n| n.parse().ok()).expect(&said);
    let html = dir.path().join("report.html");
    let svg_dir = dir.path().join("charts");
    let out = run(
        &store,
        &[
            "report",
            &sweep.to_string(),
            "G5 Tiger",
            &micro_id.to_string(),
            "-o",
            html.to_str().unwrap(),
            "--svg",
            svg_dir.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "report failed: {}", stderr(&out));
    // Every chart drawn is written to --svg DIR: the page must show each of them.
    let mut expected: Vec<String> = std::fs::read_dir(&svg_dir)
        .unwrap()
        .map(|e| format!("chart-{}", e.unwrap().file_name().to_string_lossy().trim_end_matches(".svg")))
        .collect();
    expected.sort();
    assert!(expected.len() >= 6, "{expected:?}");
    let text = std::fs::read_to_string(&html).unwrap();
    // The G5 Tiger series peaks at 274 q/s; the sweep's peak (about 3,000/s
    // alone, less beside a busy neighbour) decides whether the pair is more
    // than 10x apart, which is when the axis must be logarithmic.
    let shown = json(&store, &["show", &sweep.to_string(), "--json"]);
    let peak = shown["steps"].as_array().unwrap().iter().filter_map(|s| s["throughput_per_s"].as_f64()).fold(0.0, f64::max);
    assert_eq!(text.contains("log scale"), peak > 2_740.0, "log axis iff the peaks are >10x apart (sweep peak {peak:.0}/s vs 274)");

    let profile = tempfile::tempdir().unwrap();
    let mut b = chromium::Browser::start(profile.path());
    for domain in ["Runtime.enable", "Log.enable", "Page.enable"] {
        b.call(domain, json!({}));
    }
    let url = format!("file://{}", html.display());
    for (width, phone) in [(1366u32, false), (390, true)] {
        b.call("Emulation.setDeviceMetricsOverride", json!({"width": width, "height": 844, "deviceScaleFactor": 1, "mobile": phone}));
        b.events.clear();
        b.call("Page.navigate", json!({"url": url}));
        assert!(b.wait_event("Page.loadEventFired", Duration::from_secs(60)), "the report never finished loading at {width} px");
        b.settle(Duration::from_millis(300));
        let result = b.call("Runtime.evaluate", json!({"expression": LAYOUT_JS, "returnByValue": true}));
        let page: Value = serde_json::from_str(result["result"]["value"].as_str().expect("string result")).expect("JSON from the page");
        let w = f64::from(width);
        assert_eq!(page["innerWidth"].as_f64(), Some(w), "{page}");
        // Nothing scrolls the page sideways (wide tables and charts scroll in their own box).
        assert!(page["scrollWidth"].as_f64().unwrap() <= w, "the page is wider than {width} px: {}", page["scrollWidth"]);
        assert!(page["bodyScrollWidth"].as_f64().unwrap() <= w, "the body is wider than {width} px: {}", page["bodyScrollWidth"]);
        let header = page["header"].as_str().unwrap();
        assert!(header.contains(&format!("run {sweep}: lock")) && header.contains(&format!("micro run {micro_id}: box")), "{header}");
        let charts = page["charts"].as_array().unwrap();
        let mut drawn: Vec<String> = charts.iter().filter(|c| c["drawn"] == true).map(|c| c["id"].as_str().unwrap().to_string()).collect();
        drawn.sort();
        assert_eq!(drawn, expected, "every chart is on the page at {width} px");
        for c in charts {
            assert!(
                c["left"].as_f64().unwrap() >= 0.0 && c["right"].as_f64().unwrap() <= w + 0.5,
                "chart box off screen at {width} px: {c}"
            );
            if c["drawn"] == true {
                assert!(c["width"].as_f64().unwrap() >= 300.0, "chart too small to read at {width} px: {c}");
                assert!(c["outside"].as_array().unwrap().is_empty(), "labels outside their chart at {width} px: {c}");
            }
        }
        let height = page["height"].as_f64().unwrap().min(16_000.0) as u32;
        // The screenshot as a user would take it: Chromium's own --screenshot at that window size.
        let shot = artifacts().join(format!("report-{width}.png"));
        let _ = std::fs::remove_file(&shot);
        let cli_profile = tempfile::tempdir().unwrap();
        let status = std::process::Command::new(chromium::CHROMIUM)
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"])
            .arg(format!("--user-data-dir={}", cli_profile.path().display()))
            .arg(format!("--screenshot={}", shot.display()))
            .arg(format!("--window-size={width},{height}"))
            .arg(&url)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("running chromium --screenshot");
        assert!(status.success(), "chromium --screenshot: {status}");
        let png = std::fs::read(&shot).expect("the screenshot");
        assert_eq!(png_size(&png), (width, height), "screenshot size");
        eprintln!("screenshot: {}", shot.display());
    }
    std::fs::copy(&html, artifacts().join("report-widths.html")).unwrap();
}

/// What a reader would see wrong on the page: section numbers, the title
/// of the results section, the flame graphs' frames and the width their
/// graph and title got, chart labels that overlap, backticks shown as
/// text, raw figures in the comparison table, configuration rows marked
/// as differing.
const DEFECTS_JS: &str = r#"JSON.stringify({
  sections: Array.from(document.querySelectorAll('section h2')).map(function (h) { return h.textContent; }),
  sectionWidth: (document.querySelector('section') || document.body).getBoundingClientRect().width,
  flames: Array.from(document.querySelectorAll('iframe.flame')).map(function (f) {
    var r = f.getBoundingClientRect();
    var doc = f.contentDocument;
    var svg = doc && doc.querySelector('svg');
    var title = doc && doc.querySelector('#title');
    return { top: r.top, bottom: r.bottom, width: r.width,
             svgWidth: svg ? svg.getBoundingClientRect().width : 0,
             title: title ? title.textContent : null };
  }),
  overlaps: Array.from(document.querySelectorAll('svg.chart')).flatMap(function (s) {
    var t = Array.from(s.querySelectorAll('g.marker text')).map(function (e) { return [e.textContent, e.getBoundingClientRect()]; });
    var out = [];
    for (var i = 0; i < t.length; i++) for (var j = i + 1; j < t.length; j++) {
      var a = t[i][1], b = t[j][1];
      if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1) {
        out.push(s.parentElement.id + ': ' + t[i][0] + ' / ' + t[j][0]);
      }
    }
    return out;
  }),
  backticks: Array.from(document.querySelectorAll('p, li, div.next, div.verdict')).map(function (e) { return e.textContent; })
    .filter(function (t) { return t.indexOf('`') >= 0; }),
  rawFigures: Array.from(document.querySelectorAll('#comparison td, #results td')).map(function (td) { return td.textContent; })
    .filter(function (t) { return /(^|[^\d,.])\d{4,}(\.\d+)?/.test(t); }),
  differs: Array.from(document.querySelectorAll('tr.differs td:first-child')).map(function (td) { return td.textContent; })
})"#;

/// Loads `html` at a laptop's width and returns what [`DEFECTS_JS`] found,
/// with a screenshot kept as `target/test-artifacts/NAME.png`.
fn defects(b: &mut chromium::Browser, html: &Path, name: &str) -> Value {
    let url = format!("file://{}", html.display());
    b.call("Emulation.setDeviceMetricsOverride", json!({"width": 1366, "height": 900, "deviceScaleFactor": 1, "mobile": false}));
    b.events.clear();
    b.call("Page.navigate", json!({"url": url}));
    assert!(b.wait_event("Page.loadEventFired", Duration::from_secs(60)), "{name}: the report never finished loading");
    b.settle(Duration::from_millis(500));
    assert_clean(b, &url);
    let result = b.call("Runtime.evaluate", json!({"expression": DEFECTS_JS, "returnByValue": true}));
    let page: Value = serde_json::from_str(result["result"]["value"].as_str().expect("string result")).expect("JSON from the page");
    let metrics = b.call("Page.getLayoutMetrics", json!({}));
    let height = metrics["cssContentSize"]["height"].as_f64().unwrap_or(4000.0).min(30_000.0);
    let shot = b.call(
        "Page.captureScreenshot",
        json!({"format": "png", "captureBeyondViewport": true, "clip": {"x": 0, "y": 0, "width": 1366, "height": height, "scale": 1}}),
    );
    use base64::Engine as _;
    let png = base64::engine::general_purpose::STANDARD.decode(shot["data"].as_str().expect("screenshot data")).expect("base64 PNG");
    std::fs::write(artifacts().join(format!("{name}.png")), &png).unwrap();
    std::fs::copy(html, artifacts().join(format!("{name}.html"))).unwrap();
    page
}

/// The defects every page must be free of.
fn assert_readable(page: &Value, name: &str) {
    let numbers: Vec<u32> = page["sections"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| h.as_str().unwrap().split('.').next().and_then(|n| n.trim().parse().ok()))
        .collect();
    assert_eq!(numbers, (1..=numbers.len() as u32).collect::<Vec<_>>(), "{name}: sections numbered without gaps: {}", page["sections"]);
    assert!(page["overlaps"].as_array().unwrap().is_empty(), "{name}: chart labels overlap: {}", page["overlaps"]);
    assert!(page["backticks"].as_array().unwrap().is_empty(), "{name}: backticks shown as text: {}", page["backticks"]);
    assert!(page["rawFigures"].as_array().unwrap().is_empty(), "{name}: figures without thousands separators: {}", page["rawFigures"]);
    let differs = page["differs"].as_array().unwrap();
    assert!(
        !differs.iter().any(|d| d.as_str().unwrap().contains("workload")),
        "{name}: the specimens' ports made the workloads differ: {differs:?}"
    );
}

#[test]
fn html_reports_of_one_run_two_runs_and_a_profiled_run_read_cleanly_in_chromium() {
    let _cpu = cpu_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let plain = short_sweep(&store, "plain", "50");
    // A profiled sweep: two steps, so the first and the knee differ.
    let profiled = json(
        &store,
        &[
            "sweep",
            "--specimen",
            "global-lock",
            "--work-us",
            "300",
            "-c",
            "1,4",
            "--warmup",
            "0.2s",
            "--duration",
            "1.5s",
            "--pause",
            "0.2s",
            "--profile",
            "--label",
            "profiled",
            "--json",
            "-q",
        ],
    );
    let profiled = profiled["id"].as_i64().expect("run id");
    let report = |name: &str, ids: &[i64]| -> PathBuf {
        let html = dir.path().join(format!("{name}.html"));
        let mut args: Vec<String> = vec!["report".into()];
        args.extend(ids.iter().map(i64::to_string));
        args.extend(["-o".to_string(), html.to_str().unwrap().to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&store, &args);
        assert!(out.status.success(), "report {name}: {}", stderr(&out));
        html
    };
    let (one, two, flames) =
        (report("report-one-run", &[plain]), report("report-two-runs", &[plain, profiled]), report("report-profiled", &[profiled]));

    let profile = tempfile::tempdir().unwrap();
    let mut b = browser(profile.path());
    // One run: its results, not a comparison.
    let page = defects(&mut b, &one, "report-one-run");
    assert_readable(&page, "one run");
    let sections = page["sections"].to_string();
    assert!(sections.contains("Results") && !sections.contains("Comparison"), "{sections}");

    // Two runs: a comparison whose figures read as the terminal's.
    let page = defects(&mut b, &two, "report-two-runs");
    assert_readable(&page, "two runs");
    assert!(page["sections"].to_string().contains("Comparison"), "{}", page["sections"]);

    // A profiled run: each flame graph on its own row, the page's width,
    // its graph drawn across the frame with its title whole.
    let page = defects(&mut b, &flames, "report-profiled");
    assert_readable(&page, "profiled");
    let frames = page["flames"].as_array().unwrap();
    assert!(frames.len() >= 2, "a flame graph per step and the differential one: {}", page["flames"]);
    let width = page["sectionWidth"].as_f64().unwrap();
    for (i, f) in frames.iter().enumerate() {
        assert!(f["width"].as_f64().unwrap() >= 0.9 * width, "flame graph {i} is {} px of {width}: {f}", f["width"]);
        assert!(f["svgWidth"].as_f64().unwrap() >= 0.9 * f["width"].as_f64().unwrap(), "its graph fills the frame: {f}");
        let title = f["title"].as_str().unwrap_or("");
        assert!(!title.is_empty() && !title.contains(".."), "title clipped: {f}");
        if i > 0 {
            assert!(f["top"].as_f64().unwrap() >= frames[i - 1]["bottom"].as_f64().unwrap() - 1.0, "one graph per row: {f}");
        }
    }
}
