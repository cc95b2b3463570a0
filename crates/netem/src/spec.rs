//! The client network spec: `delay=40ms jitter=5ms rate=256kbit loss=0.1%`.
//! Each figure applies to each direction, as `tc netem` on both ends of a
//! link would: a round trip pays the delay twice.

use std::fmt;
use std::time::Duration;

/// What the clients' network does to every packet, per direction.
#[derive(Clone, Debug, PartialEq)]
pub struct NetSpec {
    /// Added one-way delay.
    pub delay: Duration,
    /// Each packet's delay varies uniformly within ±jitter (never reordering).
    pub jitter: Duration,
    /// Link rate, bits per second (None: not limited).
    pub rate_bps: Option<u64>,
    /// Share of packets dropped, in percent (0 to below 100).
    pub loss_pct: f64,
}

/// Why a spec was refused; the message names the part at fault and the fix.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpecError {
    #[error("empty spec: give at least one of delay=40ms jitter=5ms rate=256kbit loss=0.1%")]
    Empty,
    #[error("'{0}': use key=value, e.g. delay=40ms (keys: delay, jitter, rate, loss)")]
    NotKeyValue(String),
    #[error("unknown key '{0}': use delay, jitter, rate or loss")]
    UnknownKey(String),
    #[error("'{0}' is given twice: give each of delay, jitter, rate, loss once")]
    Twice(String),
    #[error("{0}='{1}': use a time with a unit, e.g. 40ms, 500us, 1s (at most 10s)")]
    Time(&'static str, String),
    #[error("rate='{0}': use a rate with a unit, e.g. 256kbit, 10mbit, 1gbit, 64kbps (at least 8kbit)")]
    Rate(String),
    #[error("loss='{0}': use a percentage below 100, e.g. 0.1%")]
    Loss(String),
    #[error("jitter {jitter:?} is larger than delay {delay:?}: keep jitter at or below the delay")]
    JitterAboveDelay { jitter: Duration, delay: Duration },
}

impl NetSpec {
    /// Parses a spec of space-separated `key=value` parts.
    pub fn parse(text: &str) -> Result<NetSpec, SpecError> {
        let mut spec = NetSpec { delay: Duration::ZERO, jitter: Duration::ZERO, rate_bps: None, loss_pct: 0.0 };
        let mut seen: Vec<&str> = Vec::new();
        for part in text.split_whitespace() {
            let (key, value) = part.split_once('=').ok_or_else(|| SpecError::NotKeyValue(part.to_string()))?;
            if seen.contains(&key) {
                return Err(SpecError::Twice(key.to_string()));
            }
            match key {
                "delay" => spec.delay = time("delay", value)?,
                "jitter" => spec.jitter = time("jitter", value)?,
                "rate" => spec.rate_bps = Some(rate(value)?),
                "loss" => spec.loss_pct = loss(value)?,
                other => return Err(SpecError::UnknownKey(other.to_string())),
            }
            seen.push(key);
        }
        if seen.is_empty() {
            return Err(SpecError::Empty);
        }
        if spec.jitter > spec.delay {
            return Err(SpecError::JitterAboveDelay { jitter: spec.jitter, delay: spec.delay });
        }
        Ok(spec)
    }
}

fn split_unit(v: &str) -> (&str, &str) {
    let at = v.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(v.len());
    v.split_at(at)
}

fn time(key: &'static str, v: &str) -> Result<Duration, SpecError> {
    let err = || SpecError::Time(key, v.to_string());
    let (num, unit) = split_unit(v);
    let n: f64 = num.parse().map_err(|_| err())?;
    let us = match unit {
        "us" => n,
        "ms" => n * 1e3,
        "s" => n * 1e6,
        _ => return Err(err()),
    };
    if !us.is_finite() || us > 10e6 {
        return Err(err());
    }
    Ok(Duration::from_nanos((us * 1e3).round() as u64))
}

/// tc's units: `bit`, `kbit`, `mbit`, `gbit` (bits, powers of 1000) and
/// `bps`, `kbps`, `mbps` (bytes per second).
fn rate(v: &str) -> Result<u64, SpecError> {
    let err = || SpecError::Rate(v.to_string());
    let (num, unit) = split_unit(v);
    let n: f64 = num.parse().map_err(|_| err())?;
    let factor = match unit.to_ascii_lowercase().as_str() {
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        "bps" => 8.0,
        "kbps" => 8e3,
        "mbps" => 8e6,
        _ => return Err(err()),
    };
    let bps = n * factor;
    // Below 8 kbit/s one full-size packet takes 1.5 s: TCP times out rather than crawls.
    if !bps.is_finite() || !(8e3..=100e9).contains(&bps) {
        return Err(err());
    }
    Ok(bps.round() as u64)
}

fn loss(v: &str) -> Result<f64, SpecError> {
    let err = || SpecError::Loss(v.to_string());
    let n: f64 = v.strip_suffix('%').ok_or_else(err)?.parse().map_err(|_| err())?;
    if !(0.0..100.0).contains(&n) {
        return Err(err());
    }
    Ok(n)
}

/// The spec in its canonical form (what a run records): only the parts
/// that act, in the order delay, jitter, rate, loss.
impl fmt::Display for NetSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        let t = |d: Duration| {
            let us = d.as_micros();
            if us.is_multiple_of(1000) {
                format!("{}ms", us / 1000)
            } else {
                format!("{us}us")
            }
        };
        if !self.delay.is_zero() {
            parts.push(format!("delay={}", t(self.delay)));
        }
        if !self.jitter.is_zero() {
            parts.push(format!("jitter={}", t(self.jitter)));
        }
        if let Some(r) = self.rate_bps {
            parts.push(match r {
                r if r.is_multiple_of(1_000_000_000) => format!("rate={}gbit", r / 1_000_000_000),
                r if r.is_multiple_of(1_000_000) => format!("rate={}mbit", r / 1_000_000),
                r if r.is_multiple_of(1000) => format!("rate={}kbit", r / 1000),
                r => format!("rate={r}bit"),
            });
        }
        if self.loss_pct > 0.0 {
            parts.push(format!("loss={}%", self.loss_pct));
        }
        if parts.is_empty() {
            return f.write_str("delay=0ms");
        }
        f.write_str(&parts.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issue_s_example_parses_and_prints_back() {
        let s = NetSpec::parse("delay=40ms jitter=5ms rate=256kbit loss=0.1%").unwrap();
        assert_eq!(s.delay, Duration::from_millis(40));
        assert_eq!(s.jitter, Duration::from_millis(5));
        assert_eq!(s.rate_bps, Some(256_000));
        assert_eq!(s.loss_pct, 0.1);
        assert_eq!(s.to_string(), "delay=40ms jitter=5ms rate=256kbit loss=0.1%");
        assert_eq!(NetSpec::parse("  rate=1.5mbit  delay=500us ").unwrap().to_string(), "delay=500us rate=1500kbit");
        assert_eq!(NetSpec::parse("rate=64kbps").unwrap().rate_bps, Some(512_000));
    }

    #[test]
    fn bad_specs_name_the_part_and_the_fix() {
        let e = |t: &str| NetSpec::parse(t).unwrap_err().to_string();
        assert!(e("").starts_with("empty spec"));
        assert!(e("delay").contains("use key=value"));
        assert!(e("latency=4ms").contains("unknown key 'latency'"));
        assert!(e("delay=4ms delay=5ms").contains("given twice"));
        assert!(e("delay=40").contains("delay='40'"));
        assert!(e("delay=11s").contains("at most 10s"));
        assert!(e("rate=256k").contains("rate='256k'"));
        assert!(e("rate=1kbit").contains("at least 8kbit"));
        assert!(e("loss=0.1").contains("loss='0.1'"));
        assert!(e("loss=100%").contains("below 100"));
        assert!(e("jitter=5ms").contains("larger than delay"));
    }
}
