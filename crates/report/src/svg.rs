//! Chart primitives as standalone SVG strings: line charts (with gaps,
//! dashed fits, marked points, shaded bands) and stacked bars.
//!
//! Plain string building, no chart library: the report must open offline,
//! and the same string is inlined in the HTML and written as a `.svg` file
//! (`--svg DIR`), so every style is a presentation attribute (no stylesheet
//! needed). Each drawn series is one `<g class="series">`, and the root
//! carries `data-series="N"`, so a test can check that a chart drew what it
//! should. A missing value is a gap in the line, never a point at zero.

use std::fmt::Write as _;

/// The Okabe–Ito palette: distinguishable with the common colour-vision
/// deficiencies (and in greyscale print, by lightness), in the order used
/// for runs and series.
pub const PALETTE: [&str; 8] = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"];

/// Chart width in SVG user units.
pub const WIDTH: f64 = 760.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 34.0;
const PLOT_H: f64 = 220.0;
const AXIS_H: f64 = 46.0;
const LEGEND_ROW: f64 = 18.0;

/// Escapes text for SVG/HTML element content and attribute values. The
/// text is user or server text (labels, `Server:` headers, perf frame
/// names): its control characters and bidirectional overrides are written
/// as visible escapes first, as on the terminal and in Markdown, so a
/// copied or saved page carries no ESC, OSC 52 or U+202E; line breaks stay.
pub fn esc(s: &str) -> String {
    let s = scalelab_core::escape_control_lines(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A number for axis ticks and tooltips: short and readable.
pub fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// One line of a chart. `None` values break the line (a gap).
#[derive(Clone, Debug)]
pub struct LineSeries {
    /// Legend text.
    pub name: String,
    /// Stroke colour (one of [`PALETTE`]).
    pub color: &'static str,
    /// Dashed stroke (model curves such as the USL fit).
    pub dashed: bool,
    /// Draw a dot with a hover value on every point (measured steps).
    pub dots: bool,
    /// `(x, y)`; a `None` y is missing data.
    pub points: Vec<(f64, Option<f64>)>,
}

/// A labelled point drawn on top of the lines (knee, peak).
#[derive(Clone, Debug)]
pub struct Marker {
    pub x: f64,
    pub y: f64,
    /// Short text next to the point ("knee", "peak").
    pub label: String,
    pub color: &'static str,
}

/// A vertical error bar: a point's 95 % interval, drawn from `low` to
/// `high` at `x` with short caps, under its series' dot.
#[derive(Clone, Debug)]
pub struct ErrorBar {
    pub x: f64,
    pub low: f64,
    pub high: f64,
    pub color: &'static str,
    /// Hover text ("A: 12,000 to 12,400 at 8").
    pub label: String,
}

/// A shaded x range behind the lines (a warm-up, a window, a pause).
#[derive(Clone, Debug)]
pub struct Band {
    pub x0: f64,
    pub x1: f64,
    pub fill: &'static str,
    /// Hover text, and a label drawn at the top when wide enough.
    pub label: String,
}

/// A line chart with axes, units and a legend.
#[derive(Clone, Debug, Default)]
pub struct LineChart {
    pub title: String,
    /// X axis title with its unit, e.g. "concurrency (clients)".
    pub x_label: String,
    /// Y axis title with its unit, e.g. "throughput (req/s)".
    pub y_label: String,
    pub series: Vec<LineSeries>,
    pub markers: Vec<Marker>,
    pub bands: Vec<Band>,
    /// Legend entries for series that could not be drawn ("iowait: unavailable (why)").
    pub notes: Vec<String>,
    /// The 95 % intervals of measured points, drawn as error bars.
    pub error_bars: Vec<ErrorBar>,
    /// A line under the legend about how to read the chart ("log scale: …"), in plain grey.
    pub remark: Option<String>,
    /// Fixed y range top (e.g. 100 for percentages); otherwise from the data.
    pub y_max: Option<f64>,
    /// A logarithmic y axis (decades), for series whose sizes differ by more
    /// than 10×: on a linear axis the small ones flatten onto zero. The
    /// caller says so in the axis title. A value ≤ 0 sits on the bottom edge
    /// (its hover text keeps the real figure).
    pub log_y: bool,
}

/// "Nice" tick values (1, 2, 5 × 10^k steps) covering `lo..=hi`.
fn ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return vec![lo];
    }
    let raw = (hi - lo) / target as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
    let mut out = Vec::new();
    let mut v = (lo / step).ceil() * step;
    while v <= hi + step * 1e-9 {
        out.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        v += step;
    }
    out
}

/// Rounds `hi` up to the next tick so the top gridline frames the data.
fn nice_max(hi: f64) -> f64 {
    if hi <= 0.0 {
        return 1.0;
    }
    let t = ticks(0.0, hi, 5);
    let step = if t.len() > 1 { t[1] - t[0] } else { hi };
    (hi / step).ceil() * step
}

/// The decades `(lo, hi)` (powers of ten) a log axis spans to show every
/// positive value in `values`; `None` when none is positive.
fn log_range(values: impl Iterator<Item = f64>) -> Option<(i32, i32)> {
    let (lo, hi) = values.filter(|v| *v > 0.0 && v.is_finite()).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    if !lo.is_finite() {
        return None;
    }
    let lo = lo.log10().floor() as i32;
    let hi = (hi.log10().ceil() as i32).max(lo + 1);
    Some((lo, hi))
}

/// Tick values of a log axis from 10^lo to 10^hi: every decade, and 2 and 5
/// between them when the axis spans at most two decades (else too dense).
pub fn log_ticks(lo: i32, hi: i32) -> Vec<f64> {
    let mut out = Vec::new();
    for k in lo..=hi {
        let d = 10f64.powi(k);
        out.push(d);
        if hi - lo <= 2 && k < hi {
            out.extend([2.0 * d, 5.0 * d]);
        }
    }
    out
}

struct Frame {
    x0: f64,
    x1: f64,
    y1: f64,
    /// `Some((lo, hi))`: the y axis is logarithmic from 10^lo to 10^hi.
    log: Option<(i32, i32)>,
}

impl Frame {
    fn px(&self, x: f64) -> f64 {
        let span = if self.x1 > self.x0 { self.x1 - self.x0 } else { 1.0 };
        LEFT + (x - self.x0) / span * (WIDTH - LEFT - RIGHT)
    }
    fn py(&self, y: f64) -> f64 {
        let frac = match self.log {
            Some((lo, hi)) if y > 0.0 => (y.log10() - f64::from(lo)) / f64::from(hi - lo),
            Some(_) => 0.0,
            None => y / self.y1,
        };
        TOP + PLOT_H - frac.clamp(-0.05, 1.05) * PLOT_H
    }
    fn y_ticks(&self) -> Vec<f64> {
        match self.log {
            Some((lo, hi)) => log_ticks(lo, hi),
            None => ticks(0.0, self.y1, 5),
        }
    }
}

fn open_svg(out: &mut String, height: f64, series: usize, title: &str) {
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-series="{series}" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" font-family="Helvetica, Arial, sans-serif" font-size="12" role="img" aria-label="{t}"><title>{t}</title><rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#ffffff"/><text x="{LEFT}" y="20" font-size="14" font-weight="bold" fill="#222">{t}</text>"##,
        t = esc(title)
    );
}

fn axes(out: &mut String, f: &Frame, x_label: &str, y_label: &str, x_ticks: &[f64]) {
    for t in f.y_ticks() {
        let y = f.py(t);
        let _ = write!(
            out,
            r##"<line x1="{LEFT}" x2="{x2}" y1="{y:.1}" y2="{y:.1}" stroke="#e3e3e3"/><text x="{tx}" y="{ty:.1}" text-anchor="end" fill="#444">{v}</text>"##,
            x2 = WIDTH - RIGHT,
            tx = LEFT - 6.0,
            ty = y + 4.0,
            v = short(t)
        );
    }
    let base = TOP + PLOT_H;
    let _ = write!(out, r##"<line x1="{LEFT}" x2="{x2}" y1="{base}" y2="{base}" stroke="#555"/>"##, x2 = WIDTH - RIGHT);
    let _ = write!(out, r##"<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{base}" stroke="#555"/>"##);
    for &t in x_ticks {
        let x = f.px(t);
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{base}" y2="{b2}" stroke="#555"/><text x="{x:.1}" y="{ty}" text-anchor="middle" fill="#444">{v}</text>"##,
            b2 = base + 4.0,
            ty = base + 16.0,
            v = short(t)
        );
    }
    let _ = write!(
        out,
        r##"<text x="{cx}" y="{ty}" text-anchor="middle" fill="#222">{xl}</text><text transform="translate(16 {cy}) rotate(-90)" text-anchor="middle" fill="#222">{yl}</text>"##,
        cx = LEFT + (WIDTH - LEFT - RIGHT) / 2.0,
        ty = base + 34.0,
        cy = TOP + PLOT_H / 2.0,
        xl = esc(x_label),
        yl = esc(y_label)
    );
}

/// Legend entries laid out in rows under the x axis; returns the rows' height.
fn legend(out: &mut String, top: f64, items: &[(String, &'static str, bool)], notes: &[String], remark: Option<&str>) -> f64 {
    let mut x = LEFT;
    let mut y = top + 12.0;
    let mut rows = 1.0;
    for (name, color, dashed) in items {
        let w = 38.0 + 7.2 * name.chars().count() as f64;
        if x + w > WIDTH - RIGHT && x > LEFT {
            x = LEFT;
            y += LEGEND_ROW;
            rows += 1.0;
        }
        let dash = if *dashed { r#" stroke-dasharray="6 4""# } else { "" };
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" x2="{x2:.1}" y1="{ly:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="3"{dash}/><text x="{tx:.1}" y="{y:.1}" fill="#222">{n}</text>"##,
            x2 = x + 22.0,
            ly = y - 4.0,
            tx = x + 27.0,
            n = esc(name)
        );
        x += w;
    }
    let lines = remark
        .into_iter()
        .map(|r| (r, r##"fill="#444" class="remark""##))
        .chain(notes.iter().map(|n| (n.as_str(), r##"fill="#8a3b00" class="unavailable""##)));
    for (text, look) in lines {
        for line in wrap(text, WIDTH - RIGHT - LEFT, 12.0) {
            y += LEGEND_ROW;
            rows += 1.0;
            let _ = write!(out, r##"<text x="{LEFT}" y="{y:.1}" {look}>{}</text>"##, esc(&line));
        }
    }
    rows * LEGEND_ROW + 8.0
}

/// `text` in lines no wider than `width` at `font_px` (by [`text_width`]),
/// broken at spaces; a word longer than a line is a line of its own.
pub fn wrap(text: &str, width: f64, font_px: f64) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let next = if line.is_empty() { word.to_string() } else { format!("{line} {word}") };
        if text_width(&next, font_px) > width && !line.is_empty() {
            out.push(std::mem::replace(&mut line, word.to_string()));
        } else {
            line = next;
        }
    }
    out.push(line);
    out
}

fn legend_height(items: &[(String, &'static str, bool)], notes: &[String], remark: Option<&str>) -> f64 {
    let mut tmp = String::new();
    legend(&mut tmp, 0.0, items, notes, remark)
}

impl LineChart {
    /// Series that have at least one value: the ones drawn.
    fn drawn(&self) -> Vec<&LineSeries> {
        self.series.iter().filter(|s| s.points.iter().any(|(_, y)| y.is_some())).collect()
    }

    /// True when no series has any value (show the reason instead of a chart).
    pub fn is_empty(&self) -> bool {
        self.drawn().is_empty()
    }

    /// The chart as a standalone SVG document.
    pub fn render(&self) -> String {
        let drawn = self.drawn();
        let xs: Vec<f64> =
            self.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).chain(self.bands.iter().flat_map(|b| [b.x0, b.x1])).collect();
        let x0 = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let x1 = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (x0, x1) = if x0.is_finite() { (x0, if x1 > x0 { x1 } else { x0 + 1.0 }) } else { (0.0, 1.0) };
        let x0 = if x0 > 0.0 && x0 <= (x1 - x0) * 0.25 { 0.0 } else { x0 };
        let ymax = drawn
            .iter()
            .flat_map(|s| s.points.iter().filter_map(|p| p.1))
            .chain(self.error_bars.iter().map(|b| b.high))
            .fold(0.0, f64::max);
        let y1 = self.y_max.unwrap_or_else(|| nice_max(ymax * 1.05));
        let log = if self.log_y { log_range(drawn.iter().flat_map(|s| s.points.iter().filter_map(|p| p.1))) } else { None };
        let f = Frame { x0, x1, y1, log };
        let items: Vec<(String, &'static str, bool)> = drawn.iter().map(|s| (s.name.clone(), s.color, s.dashed)).collect();
        let height = TOP + PLOT_H + AXIS_H + legend_height(&items, &self.notes, self.remark.as_deref());
        let mut out = String::new();
        open_svg(&mut out, height, drawn.len(), &self.title);
        for b in &self.bands {
            let (a, z) = (f.px(b.x0), f.px(b.x1));
            let _ = write!(
                out,
                r#"<rect class="band" x="{a:.1}" y="{TOP}" width="{w:.1}" height="{PLOT_H}" fill="{fill}"><title>{l}</title></rect>"#,
                w = (z - a).max(0.5),
                fill = b.fill,
                l = esc(&b.label)
            );
        }
        axes(&mut out, &f, &self.x_label, &self.y_label, &ticks(x0, x1, 8));
        for b in self.bands.iter().filter(|b| f.px(b.x1) - f.px(b.x0) > 18.0 && b.fill != PAUSE_FILL) {
            let _ = write!(
                out,
                r##"<text x="{x:.1}" y="{y}" text-anchor="middle" font-size="10" fill="#555">{l}</text>"##,
                x = (f.px(b.x0) + f.px(b.x1)) / 2.0,
                y = TOP + 11.0,
                l = esc(b.label.split(':').next().unwrap_or(""))
            );
        }
        for b in &self.error_bars {
            let (x, lo, hi) = (f.px(b.x), f.py(b.low), f.py(b.high));
            let _ = write!(
                out,
                r#"<g class="error-bar" stroke="{c}" stroke-width="1.4"><title>{t}</title><line x1="{x:.1}" y1="{lo:.1}" x2="{x:.1}" y2="{hi:.1}"/><line x1="{a:.1}" y1="{lo:.1}" x2="{z:.1}" y2="{lo:.1}"/><line x1="{a:.1}" y1="{hi:.1}" x2="{z:.1}" y2="{hi:.1}"/></g>"#,
                c = b.color,
                t = esc(&b.label),
                a = x - 4.0,
                z = x + 4.0
            );
        }
        for s in &drawn {
            let _ = write!(out, r#"<g class="series" data-name="{}">"#, esc(&s.name));
            // One polyline per stretch of consecutive values; a None ends it.
            let mut segments: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
            for (x, y) in &s.points {
                match y {
                    Some(y) => segments.last_mut().expect("one segment").push((*x, *y)),
                    None if segments.last().is_some_and(|l| !l.is_empty()) => segments.push(Vec::new()),
                    None => {}
                }
            }
            segments.retain(|l| !l.is_empty());
            let lone: Vec<(f64, f64)> = segments.iter().filter(|l| l.len() == 1).map(|l| l[0]).collect();
            let dash = if s.dashed { r#" stroke-dasharray="6 4""# } else { "" };
            for l in segments.iter().filter(|l| l.len() > 1) {
                let points: Vec<String> = l.iter().map(|(x, y)| format!("{:.1},{:.1}", f.px(*x), f.py(*y))).collect();
                let _ = write!(
                    out,
                    r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2.2" stroke-linejoin="round"{dash}/>"#,
                    points.join(" "),
                    s.color
                );
            }
            for (x, y) in &s.points {
                let Some(y) = y else { continue };
                let isolated = lone.iter().any(|p| p.0 == *x && p.1 == *y);
                let tip = format!("{}: {} at {}", s.name, short(*y), short(*x));
                // Dots on measured steps and on isolated points; elsewhere an
                // invisible target, so every point of a line has a hover value.
                let look = if s.dots || isolated {
                    format!(r##"r="{}" fill="{}" stroke="#fff""##, if s.dots { 3.5 } else { 2.5 }, s.color)
                } else {
                    r##"r="4" fill="#000" fill-opacity="0""##.to_string()
                };
                let _ = write!(
                    out,
                    r#"<circle cx="{:.1}" cy="{:.1}" {look} data-tip="{t}"><title>{t}</title></circle>"#,
                    f.px(*x),
                    f.py(*y),
                    t = esc(&tip)
                );
            }
            out.push_str("</g>");
        }
        let mut placed: Vec<LabelBox> = Vec::new();
        for m in &self.markers {
            let (x, y) = (f.px(m.x), f.py(m.y));
            let tip = format!("{}: {} at {}", m.label, short(m.y), short(m.x));
            let b = place_label(x, y, &m.label, &placed);
            let _ = write!(
                out,
                r##"<g class="marker"><circle cx="{x:.1}" cy="{y:.1}" r="7" fill="none" stroke="{c}" stroke-width="2" data-tip="{t}"><title>{t}</title></circle><text x="{tx:.1}" y="{ty:.1}"{anchor} font-size="11" fill="{c}">{l}</text></g>"##,
                c = m.color,
                tx = if b.end { b.x1 } else { b.x0 },
                ty = b.baseline,
                anchor = if b.end { r#" text-anchor="end""# } else { "" },
                t = esc(&tip),
                l = esc(&m.label)
            );
            placed.push(b);
        }
        legend(&mut out, TOP + PLOT_H + AXIS_H, &items, &self.notes, self.remark.as_deref());
        out.push_str("</svg>");
        out
    }
}

/// Width of `text` at `font_px` in the chart's sans-serif, estimated on the
/// wide side (0.6 em a character; Helvetica's average is ~0.55 em), so that
/// a label placed by it stays inside the chart in any browser.
pub fn text_width(text: &str, font_px: f64) -> f64 {
    0.6 * font_px * text.chars().count() as f64
}

/// Where a marker's label went: its box in user units, and whether it is
/// anchored at its end (right edge) rather than its start.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LabelBox {
    pub x0: f64,
    pub x1: f64,
    pub baseline: f64,
    pub end: bool,
}

impl LabelBox {
    fn overlaps(&self, o: &LabelBox) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && (self.baseline - o.baseline).abs() < 12.0
    }
}

/// Places the label of a marker at `(x, y)` inside the plot: up and to the
/// right of the point, flipped to its left (anchored at the end) when it
/// would cross the right edge, below it when it would cross the top, and
/// moved down a line while it overlaps a label already `placed` (two runs
/// peaking at the same concurrency).
pub fn place_label(x: f64, y: f64, label: &str, placed: &[LabelBox]) -> LabelBox {
    let w = text_width(label, 11.0);
    let right = WIDTH - RIGHT;
    let (x0, end) = if x + 9.0 + w > right { ((x - 9.0 - w).max(LEFT), true) } else { (x + 9.0, false) };
    let mut b = LabelBox { x0, x1: x0 + w, baseline: if y - 9.0 - 11.0 < TOP { y + 20.0 } else { y - 9.0 }, end };
    while placed.iter().any(|p| p.overlaps(&b)) && b.baseline < TOP + PLOT_H {
        b.baseline += 13.0;
    }
    b
}

/// Fill of a warm-up band in timelines.
pub const WARMUP_FILL: &str = "#fbe7c6";
/// Fill of a measured window band in timelines.
pub const WINDOW_FILL: &str = "#d7ebf7";
/// Fill of a pause band in timelines.
pub const PAUSE_FILL: &str = "#eeeeee";

/// One layer of a stacked bar chart, with a value per category.
#[derive(Clone, Debug)]
pub struct Stack {
    pub name: String,
    pub color: &'static str,
    pub values: Vec<f64>,
}

/// Stacked bars, one per category; a category whose data is missing shows
/// "unavailable" in place of its bar.
#[derive(Clone, Debug, Default)]
pub struct StackedBars {
    pub title: String,
    /// Category axis title ("concurrency (clients)").
    pub x_label: String,
    /// Value axis title with its unit ("share of thread-time (%)").
    pub y_label: String,
    /// Category names (x axis).
    pub categories: Vec<String>,
    /// `false` for a category without data.
    pub present: Vec<bool>,
    pub stacks: Vec<Stack>,
    /// Fixed top of the value axis (100 for shares).
    pub y_max: Option<f64>,
}

impl StackedBars {
    /// The chart as a standalone SVG document.
    pub fn render(&self) -> String {
        let n = self.categories.len().max(1) as f64;
        let totals: Vec<f64> =
            (0..self.categories.len()).map(|i| self.stacks.iter().map(|s| s.values.get(i).copied().unwrap_or(0.0)).sum()).collect();
        let y1 = self.y_max.unwrap_or_else(|| nice_max(totals.iter().copied().fold(0.0, f64::max)));
        let f = Frame { x0: 0.0, x1: n, y1, log: None };
        let items: Vec<(String, &'static str, bool)> = self.stacks.iter().map(|s| (s.name.clone(), s.color, false)).collect();
        let height = TOP + PLOT_H + AXIS_H + legend_height(&items, &[], None);
        let mut out = String::new();
        open_svg(&mut out, height, self.stacks.len(), &self.title);
        axes(&mut out, &f, &self.x_label, &self.y_label, &[]);
        let slot = (WIDTH - LEFT - RIGHT) / n;
        let bar = (slot * 0.6).min(60.0);
        for (i, c) in self.categories.iter().enumerate() {
            let cx = f.px(i as f64 + 0.5);
            let _ =
                write!(out, r##"<text x="{cx:.1}" y="{y}" text-anchor="middle" fill="#444">{}</text>"##, esc(c), y = TOP + PLOT_H + 16.0);
            if !self.present.get(i).copied().unwrap_or(true) {
                let _ = write!(
                    out,
                    r##"<text class="unavailable" x="{cx:.1}" y="{y}" text-anchor="middle" font-size="11" fill="#8a3b00" transform="rotate(-90 {cx:.1} {y})">unavailable</text>"##,
                    y = TOP + PLOT_H / 2.0
                );
            }
        }
        for s in &self.stacks {
            let _ = write!(out, r#"<g class="series" data-name="{}">"#, esc(&s.name));
            for i in 0..self.categories.len() {
                if !self.present.get(i).copied().unwrap_or(true) {
                    continue;
                }
                let below: f64 = self.stacks.iter().take_while(|o| o.name != s.name).map(|o| o.values.get(i).copied().unwrap_or(0.0)).sum();
                let v = s.values.get(i).copied().unwrap_or(0.0);
                let (top, bottom) = (f.py(below + v), f.py(below));
                let tip = format!("{} at {}: {:.1}", s.name, self.categories[i], v);
                let _ = write!(
                    out,
                    r#"<rect x="{x:.1}" y="{top:.1}" width="{bar:.1}" height="{h:.1}" fill="{c}" data-tip="{t}"><title>{t}</title></rect>"#,
                    x = f.px(i as f64 + 0.5) - bar / 2.0,
                    h = (bottom - top).max(0.0),
                    c = s.color,
                    t = esc(&tip)
                );
            }
            out.push_str("</g>");
        }
        legend(&mut out, TOP + PLOT_H + AXIS_H, &items, &[], None);
        out.push_str("</svg>");
        out
    }
}

#[cfg(test)]
mod tests {
    /// Issue 39 item 19: labels, `Server:` headers and perf frame names
    /// reach the HTML report through `esc`: no control byte (ESC, OSC 52's
    /// BEL, C1 CSI) or bidirectional override passes, line breaks stay.
    #[test]
    fn esc_leaves_no_control_byte_or_bidi_override() {
        let e = esc("a\x1b]52;c;ZXZpbA==\x07b\u{9b}31m\u{202e}txt\nnext");
        assert!(!e.chars().any(|c| (c.is_control() && c != '\n') || c == '\u{202e}'), "{e:?}");
        assert!(e.contains("\\e]52") && e.ends_with("txt\nnext"), "{e:?}");
    }

    use super::*;

    #[test]
    fn ticks_are_nice() {
        assert_eq!(ticks(0.0, 100.0, 5), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(nice_max(274.0), 300.0);
    }

    #[test]
    fn gaps_break_the_line_and_are_not_zero() {
        let chart = LineChart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![LineSeries {
                name: "a".into(),
                color: PALETTE[0],
                dashed: false,
                dots: false,
                points: vec![(0.0, Some(5.0)), (1.0, Some(6.0)), (2.0, None), (3.0, Some(7.0)), (4.0, Some(8.0))],
            }],
            ..Default::default()
        };
        let svg = chart.render();
        assert_eq!(svg.matches("<polyline ").count(), 2, "two segments: {svg}");
        assert!(svg.contains(r#"data-series="1""#));
        let empty = LineChart { series: vec![LineSeries { points: vec![(0.0, None)], ..chart.series[0].clone() }], ..chart };
        assert!(empty.is_empty());
    }

    /// `(y, text)` of the y tick labels of a rendered chart (right-aligned at LEFT - 6).
    fn y_tick_labels(svg: &str) -> Vec<(f64, String)> {
        svg.split(r#"<text x="66" y=""#)
            .skip(1)
            .map(|t| {
                let y: f64 = t.split('"').next().unwrap().parse().unwrap();
                let text = t.split('>').nth(1).unwrap().split('<').next().unwrap().to_string();
                (y, text)
            })
            .collect()
    }

    #[test]
    fn log_axis_ticks_are_decades_evenly_spaced() {
        assert_eq!(log_ticks(2, 5), vec![100.0, 1000.0, 10_000.0, 100_000.0]);
        assert_eq!(log_ticks(0, 1), vec![1.0, 2.0, 5.0, 10.0]);
        assert_eq!(log_range([274.0, 47.0, 50_000.0].into_iter()), Some((1, 5)));
        let chart = LineChart {
            series: vec![
                LineSeries {
                    name: "2005".into(),
                    color: PALETTE[0],
                    dashed: false,
                    dots: true,
                    points: vec![(1.0, Some(192.0)), (2.0, Some(274.0))],
                },
                LineSeries {
                    name: "now".into(),
                    color: PALETTE[1],
                    dashed: false,
                    dots: true,
                    points: vec![(1.0, Some(20_000.0)), (2.0, Some(50_000.0))],
                },
            ],
            log_y: true,
            ..Default::default()
        };
        let svg = chart.render();
        let ticks = y_tick_labels(&svg);
        let text: Vec<&str> = ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(text, ["100", "1000", "10k", "100k"], "{svg}");
        // Decades are equally far apart, the bottom one on the x axis.
        let gaps: Vec<f64> = ticks.windows(2).map(|w| w[0].0 - w[1].0).collect();
        assert!(gaps.iter().all(|g| (g - gaps[0]).abs() < 0.2), "{gaps:?}");
        assert!((ticks[0].0 - (TOP + PLOT_H + 4.0)).abs() < 0.2);
        // 274 sits between the 100 and 1000 gridlines (linear: on zero).
        let dot = svg.split(r#"data-tip="2005: 274 at 2""#).next().unwrap().rsplit("cy=\"").next().unwrap();
        let cy: f64 = dot.split('"').next().unwrap().parse().unwrap();
        assert!(cy < ticks[0].0 - 4.0 && cy > ticks[1].0 - 4.0, "274 at y {cy}, ticks {ticks:?}");
    }

    /// `(x, y, anchored at end, text)` of every marker label in a rendered chart.
    fn marker_labels(svg: &str) -> Vec<(f64, f64, bool, String)> {
        svg.split(r#"<g class="marker">"#)
            .skip(1)
            .map(|g| {
                let t = g.split("<text ").nth(1).unwrap();
                let attr = |name: &str| t.split(&format!("{name}=\"")).nth(1).unwrap().split('"').next().unwrap().to_string();
                let text = t.split('>').nth(1).unwrap().split('<').next().unwrap().to_string();
                (attr("x").parse().unwrap(), attr("y").parse().unwrap(), t.contains(r#"text-anchor="end""#), text)
            })
            .collect()
    }

    #[test]
    fn marker_labels_stay_inside_the_plot() {
        let series = |name: &str, top: f64| LineSeries {
            name: name.into(),
            color: PALETTE[0],
            dashed: false,
            dots: true,
            points: vec![(1.0, Some(top / 2.0)), (16.0, Some(top * 0.9)), (32.0, Some(top))],
        };
        let marker = |x: f64, y: f64, label: &str| Marker { x, y, label: label.into(), color: PALETTE[0] };
        // Peaks at the last step (the right edge) and at the top of the plot;
        // two runs peaking at the same point; a knee in the middle.
        let chart = LineChart {
            series: vec![series("a", 1000.0), series("b", 1000.0)],
            markers: vec![marker(32.0, 1000.0, "peak = knee"), marker(32.0, 1000.0, "peak"), marker(16.0, 900.0, "knee")],
            notes: vec![format!("a: no usable USL fit ({})", "the curve fits worse than the mean throughput; ".repeat(4))],
            ..Default::default()
        };
        let svg = chart.render();
        let labels = marker_labels(&svg);
        assert_eq!(labels.len(), 3);
        let mut boxes = Vec::new();
        for (x, y, end, text) in &labels {
            let w = text_width(text, 11.0);
            let (x0, x1) = if *end { (x - w, *x) } else { (*x, x + w) };
            assert!(x0 >= LEFT && x1 <= WIDTH - RIGHT, "{text} spans {x0:.1}..{x1:.1}, outside the plot: {svg}");
            assert!(y - 11.0 >= TOP && *y <= TOP + PLOT_H, "{text} at y {y}, outside the plot");
            boxes.push((x0, x1, *y));
        }
        // The edge labels are anchored at their end, left of the point.
        assert!(labels[0].2 && labels[1].2 && !labels[2].2, "{labels:?}");
        // The two labels at the same point do not overlap.
        let (a, b) = (boxes[0], boxes[1]);
        assert!(a.0 >= b.1 || b.0 >= a.1 || (a.2 - b.2).abs() >= 12.0, "{labels:?}");
        // A long note is wrapped into lines that fit the chart's width.
        let notes: Vec<&str> = svg.split(r#"class="unavailable">"#).skip(1).map(|t| t.split('<').next().unwrap()).collect();
        assert!(notes.len() > 1, "wrapped: {notes:?}");
        for n in notes {
            assert!(LEFT + text_width(n, 12.0) <= WIDTH - RIGHT, "{n}");
        }
        let height: f64 = svg.split(r#"height=""#).nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
        let last_y: f64 = svg
            .rsplit(r#"class="unavailable""#)
            .nth(1)
            .unwrap()
            .rsplit(r#"y=""#)
            .next()
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(last_y < height, "the last note line ({last_y}) is inside the chart ({height})");
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
