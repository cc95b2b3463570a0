//! Pressure stall information, `/proc/pressure/{cpu,io,memory}` (Linux 4.20+,
//! and only when the kernel runs with PSI enabled).

use crate::read::complete_lines;

pub use scalelab_core::sample::{Pressure, Psi, PsiLine};

fn parse_line(rest: &str) -> Option<PsiLine> {
    let mut avg10 = None;
    let mut avg60 = None;
    let mut avg300 = None;
    let mut total = None;
    for kv in rest.split_ascii_whitespace() {
        let (k, v) = kv.split_once('=')?;
        match k {
            "avg10" => avg10 = v.parse::<f64>().ok().filter(|x| x.is_finite()),
            "avg60" => avg60 = v.parse::<f64>().ok().filter(|x| x.is_finite()),
            "avg300" => avg300 = v.parse::<f64>().ok().filter(|x| x.is_finite()),
            "total" => total = v.parse().ok(),
            _ => {}
        }
    }
    Some(PsiLine { avg10: avg10?, avg60: avg60?, avg300: avg300?, total_us: total? })
}

/// Parses one `/proc/pressure/*` file; the `some` line is required.
pub fn parse_psi(text: &str) -> Result<Psi, String> {
    let mut some = None;
    let mut full = None;
    for line in complete_lines(text) {
        if let Some(rest) = line.strip_prefix("some ") {
            some = parse_line(rest);
        } else if let Some(rest) = line.strip_prefix("full ") {
            full = parse_line(rest);
        }
    }
    Ok(Psi { some: some.ok_or("no complete 'some' line")?, full })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_some_and_full() {
        let p =
            parse_psi("some avg10=7.87 avg60=2.75 avg300=1.80 total=10301078\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n").unwrap();
        assert_eq!(p.some.total_us, 10301078);
        assert_eq!(p.some.avg10, 7.87);
        assert_eq!(p.full.unwrap().total_us, 0);
    }

    #[test]
    fn cut_or_garbage_is_an_error() {
        assert!(parse_psi("some avg10=7.87 avg60=2.75 avg300=1.80 total=103").is_err());
        assert!(parse_psi("some avg10=x avg60=2.75 avg300=1.80 total=1\n").is_err());
        assert!(parse_psi("").is_err());
        let p = parse_psi("some avg10=1.00 avg60=2.00 avg300=3.00 total=4\nfull avg10=1\n").unwrap();
        assert_eq!(p.full, None);
    }
}
