//! Number formatting for tables: fixed decimals, thousands separators, and
//! "-" for a value that is missing (never a 0 standing in for it).

/// Rounds half away from zero, the way published tables round.
pub fn round_half_away(x: f64) -> f64 {
    x.signum() * (x.abs() + 0.5).floor()
}

/// `12,345` style, for throughput.
pub fn thousands(x: f64) -> String {
    let r = round_half_away(x) as i64;
    let digits = r.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if r < 0 {
        format!("-{out}")
    } else {
        out
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
