//! Number formatting for tables: fixed decimals, thousands separators, and
//! "-" for a value that is missing (never a 0 standing in for it).

/// Rounds half away from zero, the way published tables round.
pub fn round_half_away(x: f64) -> f64 {
    x.signum() * (x.abs() + 0.5).floor()
}

/// `12,345` style, for throughput.
pub fn thousands(x: f64) -> String {
    scalelab_core::thousands(x)
}

/// A latency in ms with precision that fits its size; "-" when missing.
pub fn ms(x: Option<f64>) -> String {
    match x {
        None => "-".into(),
        Some(v) if v < 1.0 => format!("{v:.3}"),
        Some(v) if v < 100.0 => format!("{v:.2}"),
        Some(v) => format!("{v:.0}"),
    }
}

/// A whole percentage; "-" when missing.
pub fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{}%", round_half_away(v) as i64))
}

/// Pads cells into right-aligned columns (first column left-aligned).
///
/// Cells are user or server text as often as figures: each is shown on one
/// line with its control characters escaped ([`scalelab_core::escape_control`]).
pub fn columns(rows: &[Vec<String>]) -> String {
    columns_with(rows, &[])
}

/// Like [`columns`], with the columns whose index is in `left` (text such as
/// labels and targets, read from their start) left-aligned as well.
pub fn columns_with(rows: &[Vec<String>], left: &[usize]) -> String {
    let rows: Vec<Vec<std::borrow::Cow<str>>> = rows.iter().map(|r| r.iter().map(|c| scalelab_core::escape_control(c)).collect()).collect();
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n).map(|i| rows.iter().filter_map(|r| r.get(i)).map(|c| c.chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            let c: &str = c;
            let pad = widths[i] - c.chars().count();
            if i == 0 {
                line.push_str(c);
                line.push_str(&" ".repeat(pad));
            } else if left.contains(&i) {
                line.push_str("  ");
                line.push_str(c);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str("  ");
                line.push_str(&" ".repeat(pad));
                line.push_str(c);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Like [`columns`], but never wider than `width` when one is given: a
/// table that does not fit is split into blocks of whole columns, one under
/// the other, each led by the first column (the step), so no column is
/// dropped and no line wraps into noise on an 80-column terminal.
pub fn columns_fit(rows: &[Vec<String>], width: Option<usize>) -> String {
    columns_fit_with(rows, &[], width)
}

/// [`columns_fit`] with the columns in `left` left-aligned ([`columns_with`]).
pub fn columns_fit_with(rows: &[Vec<String>], left: &[usize], width: Option<usize>) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n).map(|i| rows.iter().filter_map(|r| r.get(i)).map(|c| c.chars().count()).max().unwrap_or(0)).collect();
    let total: usize = widths.iter().sum::<usize>() + 2 * n.saturating_sub(1);
    let Some(width) = width.filter(|w| total > *w && n > 1) else { return columns_with(rows, left) };
    let mut blocks: Vec<Vec<usize>> = Vec::new();
    let mut used = widths[0];
    for (i, w) in widths.iter().enumerate().skip(1) {
        if blocks.is_empty() || used + 2 + w > width {
            blocks.push(Vec::new());
            used = widths[0];
        }
        blocks.last_mut().expect("just pushed").push(i);
        used += 2 + w;
    }
    let mut out = String::new();
    for (b, cols) in blocks.iter().enumerate() {
        if b > 0 {
            out.push('\n');
        }
        let part: Vec<Vec<String>> = rows
            .iter()
            .map(|r| std::iter::once(0).chain(cols.iter().copied()).map(|i| r.get(i).cloned().unwrap_or_default()).collect())
            .collect();
        // Column i of the block is column cols[i - 1] of the table.
        let part_left: Vec<usize> = cols.iter().enumerate().filter(|(_, c)| left.contains(c)).map(|(i, _)| i + 1).collect();
        out.push_str(&columns_with(&part, &part_left));
    }
    out
}

/// Wraps each line of `text` at word boundaries to `width` columns (when
/// given), continuation lines under a hanging indent of four spaces beyond
/// the line's own indent. A word longer than the width stays whole.
pub fn wrap(text: &str, width: Option<usize>) -> String {
    let Some(width) = width else { return text.to_string() };
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if body.chars().count() <= width {
            out.push_str(line);
            continue;
        }
        let indent = body.chars().take_while(|c| *c == ' ').count();
        let hang = " ".repeat(indent + 4);
        let mut current = " ".repeat(indent);
        let mut first = true;
        for word in body.split(' ').filter(|w| !w.is_empty()) {
            let len = current.chars().count();
            let fresh = len == indent || (!first && len == indent + 4);
            if !fresh && len + 1 + word.chars().count() > width {
                out.push_str(current.trim_end());
                out.push('\n');
                current = hang.clone();
                first = false;
            }
            if !(current.chars().count() == indent || current == hang) {
                current.push(' ');
            }
            current.push_str(word);
        }
        out.push_str(current.trim_end());
        out.push_str(nl);
    }
    out
}

/// A duration of `s` seconds as the command line takes it: `1s`, `1.5s`,
/// `250ms`.
pub fn duration_text(s: f64) -> String {
    if s >= 1.0 {
        format!("{}s", format!("{s:.3}").trim_end_matches('0').trim_end_matches('.'))
    } else {
        format!("{}ms", format!("{:.3}", s * 1000.0).trim_end_matches('0').trim_end_matches('.'))
    }
}

/// A concurrency in words: "1 client", "5 clients".
pub fn clients(n: u32) -> String {
    if n == 1 {
        "1 client".into()
    } else {
        format!("{n} clients")
    }
}

/// A step's load level in words, as progress lines and the live view name
/// it: `2,000/s` (open loop: its offered rate, not its connections) or `4 clients`.
pub fn level_words(offered_rate_per_s: Option<f64>, concurrency: u32) -> String {
    match offered_rate_per_s {
        Some(rate) => format!("{}/s", thousands(rate)),
        None => format!("{concurrency} client{}", if concurrency == 1 { "" } else { "s" }),
    }
}

/// A step's load level, short (the tick and done lines): `2,000/s` or `c=4`.
pub fn level_short(offered_rate_per_s: Option<f64>, concurrency: u32) -> String {
    match offered_rate_per_s {
        Some(rate) => format!("{}/s", thousands(rate)),
        None => format!("c={concurrency}"),
    }
}

/// The cells of a run-table row in `table::HEADER`'s order: the level,
/// the throughput cell, the scaling in %, the latency summary and the
/// errors ("-" for a published figure, which has no error count; "client
/// saturated" after it when the client used its cores up). One shape for
/// a level's row and a window's.
pub fn run_row(
    level: String,
    throughput: String,
    scaling_pct: Option<f64>,
    latency: Option<scalelab_core::LatencySummary>,
    errors: Option<u64>,
    client_saturated: bool,
) -> Vec<String> {
    let mut errors = errors.map_or("-".to_string(), |n| n.to_string());
    if client_saturated {
        errors.push_str("  client saturated");
    }
    let s = latency;
    vec![
        level,
        throughput,
        pct(scaling_pct),
        ms(s.map(|s| s.mean)),
        ms(s.map(|s| s.stddev)),
        ms(s.map(|s| s.p50)),
        ms(s.map(|s| s.p90)),
        ms(s.map(|s| s.p99)),
        ms(s.map(|s| s.p999)),
        ms(s.map(|s| s.max)),
        errors,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widest(text: &str) -> usize {
        text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
    }

    #[test]
    fn durations_read_as_the_command_line_takes_them() {
        assert_eq!(duration_text(1.0), "1s");
        assert_eq!(duration_text(1.5), "1.5s");
        assert_eq!(duration_text(0.25), "250ms");
        assert_eq!(duration_text(0.0), "0ms");
    }

    #[test]
    fn a_wide_table_splits_into_blocks_led_by_the_first_column() {
        let header: Vec<String> = std::iter::once("concurrency".to_string()).chain((1..=12).map(|i| format!("column {i}"))).collect();
        let row: Vec<String> = std::iter::once("50".to_string()).chain((1..=12).map(|i| format!("{}", i * 1000))).collect();
        let rows = vec![header, row];
        assert_eq!(columns_fit(&rows, None), columns(&rows));
        assert_eq!(columns_fit(&rows, Some(500)), columns(&rows), "fits: unchanged");
        let fitted = columns_fit(&rows, Some(80));
        assert!(widest(&fitted) <= 80, "{fitted}");
        for i in 1..=12 {
            assert!(fitted.contains(&format!("column {i}")), "no column dropped: {fitted}");
        }
        let blocks: Vec<&str> = fitted.split("\n\n").collect();
        assert!(blocks.len() >= 2, "{fitted}");
        for b in blocks {
            assert!(b.starts_with("concurrency") && b.lines().nth(1).unwrap().starts_with("50 "), "{b}");
        }
    }

    #[test]
    fn wrap_breaks_at_words_under_a_hanging_indent() {
        let text = "at 50 clients: LOCK CONTENTION (high) — the CPU idles while server threads sleep on futexes: CPU busy 38%, cs per request 658\n  next: look at the lock\n";
        let w = wrap(text, Some(40));
        assert!(widest(&w) <= 40, "{w}");
        let lines: Vec<&str> = w.lines().collect();
        assert!(lines[0].starts_with("at 50 clients:") && lines[1].starts_with("    ") && !lines[1].starts_with("     "), "{w}");
        assert!(w.ends_with("  next: look at the lock\n"), "short lines stay: {w}");
        assert_eq!(w.split_whitespace().collect::<Vec<_>>(), text.split_whitespace().collect::<Vec<_>>(), "no word lost");
        assert_eq!(wrap(text, None), text);
    }

    #[test]
    fn rounding_and_formats() {
        assert_eq!(round_half_away(2.5), 3.0);
        assert_eq!(round_half_away(-2.5), -3.0);
        assert_eq!(round_half_away(24.48), 24.0);
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(999.5), "1,000");
        assert_eq!(ms(None), "-");
        assert_eq!(ms(Some(0.0345)), "0.035");
        assert_eq!(pct(Some(99.5)), "100%");
    }
}
