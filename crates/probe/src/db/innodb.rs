//! The SEMAPHORES section of `SHOW ENGINE INNODB STATUS`: spin waits, spin
//! rounds and OS waits per mutex and rw-lock kind.
//!
//! Formats differ by server:
//! - MySQL 5.6/5.7 and MariaDB 10.0-10.5: a `Mutex spin waits ...` line and
//!   `RW-shared`/`RW-excl` (and `RW-sx` from 5.7/10.2) lines.
//! - MySQL 8.0+: `RW-shared`/`RW-excl`/`RW-sx` lines only.
//! - MariaDB 10.6+ (10.11 captured here): an empty section; these counters
//!   were removed with InnoDB's own sync primitives, so they are unavailable.

use crate::read::num;

pub use scalelab_core::sample::{InnodbSemaphores, SemaphoreFormat, SpinCounters};

/// The lines between the SEMAPHORES header and the next section header.
/// `None` if there is no such section or it is cut before the next header.
fn section(status: &str) -> Option<Vec<&str>> {
    let lines: Vec<&str> = status.lines().collect();
    let start = lines.windows(3).position(|w| w[0].starts_with("-----") && w[1] == "SEMAPHORES" && w[2].starts_with("-----"))?;
    let body = &lines[start + 3..];
    let is_rule = |l: &str| l.len() >= 3 && l.bytes().all(|b| b == b'-');
    let end = body.windows(3).position(|w| is_rule(w[0]) && !w[1].is_empty() && is_rule(w[2]))?;
    Some(body[..end].to_vec())
}

/// "spins 5, rounds 6, OS waits 7" (or "spin waits 5, ...") after a label.
fn counters(rest: &str) -> Option<SpinCounters> {
    let mut spin_waits = None;
    let mut rounds = None;
    let mut os_waits = None;
    for part in rest.split(',') {
        let part = part.trim();
        let (label, value) = part.rsplit_once(' ')?;
        let value = num(value);
        match label.trim() {
            "spins" | "spin waits" => spin_waits = value,
            "rounds" => rounds = value,
            "OS waits" => os_waits = value,
            _ => {}
        }
    }
    Some(SpinCounters { spin_waits: spin_waits?, rounds: rounds?, os_waits: os_waits? })
}

/// The number after `key` in `line`.
fn number_after(line: &str, key: &str) -> Option<u64> {
    let rest = &line[line.find(key)? + key.len()..];
    num(rest.split(|c: char| !c.is_ascii_digit()).find(|t| !t.is_empty())?)
}

/// Parses the SEMAPHORES section out of a whole `SHOW ENGINE INNODB STATUS`
/// text. An error means the text is not a complete status (garbage, cut).
pub fn parse_innodb_semaphores(status: &str) -> Result<InnodbSemaphores, String> {
    let lines = section(status).ok_or("no complete SEMAPHORES section")?;
    let mut s = InnodbSemaphores {
        format: SemaphoreFormat::NoCounters,
        reservation_count: None,
        signal_count: None,
        mutex: None,
        rw_shared: None,
        rw_excl: None,
        rw_sx: None,
        waiting_threads: 0,
        unavailable: None,
    };
    for line in lines {
        if line.starts_with("OS WAIT ARRAY INFO:") {
            s.reservation_count = s.reservation_count.or(number_after(line, "reservation count"));
            s.signal_count = s.signal_count.or(number_after(line, "signal count"));
        } else if let Some(rest) = line.strip_prefix("Mutex ") {
            s.mutex = counters(rest);
        } else if let Some(rest) = line.strip_prefix("RW-shared ") {
            s.rw_shared = counters(rest);
        } else if let Some(rest) = line.strip_prefix("RW-excl ") {
            s.rw_excl = counters(rest);
        } else if let Some(rest) = line.strip_prefix("RW-sx ") {
            s.rw_sx = counters(rest);
        } else if line.starts_with("--Thread ") && line.contains(" has waited at ") {
            s.waiting_threads += 1;
        }
    }
    s.format = if s.mutex.is_some() {
        SemaphoreFormat::MutexAndRwLocks
    } else if s.rw_shared.is_some() || s.rw_excl.is_some() || s.rw_sx.is_some() {
        SemaphoreFormat::RwLocksOnly
    } else {
        s.unavailable = Some(
            "SEMAPHORES section has no spin/OS-wait counters (MariaDB 10.6+ removed them; \
             use performance_schema wait summaries instead)"
                .into(),
        );
        SemaphoreFormat::NoCounters
    };
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "----------\nSEMAPHORES\n----------\n\
        OS WAIT ARRAY INFO: reservation count 8570960, signal count 999043\n\
        --Thread 1231681856 has waited at btr0cur.c line 310 for 0.00 seconds the semaphore:\n\
        Mutex spin waits 545963329, rounds 2602243608, OS waits 17985576\n\
        RW-shared spins 44035445, rounds 395257570, OS waits 8059822\n\
        RW-excl spins 19326255, rounds 500665340, OS waits 6158791\n\
        Spin rounds per wait: 4.77 mutex, 8.98 RW-shared, 25.91 RW-excl\n\
        ------------\nTRANSACTIONS\n------------\n";

    #[test]
    fn mutex_and_rw_format() {
        let s = parse_innodb_semaphores(OLD).unwrap();
        assert_eq!(s.format, SemaphoreFormat::MutexAndRwLocks);
        assert_eq!(s.reservation_count, Some(8570960));
        assert_eq!(s.signal_count, Some(999043));
        assert_eq!(s.mutex.unwrap().rounds, 2602243608);
        assert_eq!(s.rw_excl.unwrap().os_waits, 6158791);
        assert_eq!(s.rw_sx, None);
        assert_eq!(s.waiting_threads, 1);
        assert_eq!(s.total().unwrap().spin_waits, 545963329 + 44035445 + 19326255);
    }

    #[test]
    fn cut_section_is_an_error() {
        let cut = &OLD[..OLD.find("RW-excl").unwrap()];
        assert!(parse_innodb_semaphores(cut).is_err());
        assert!(parse_innodb_semaphores("not a status\n").is_err());
        assert!(parse_innodb_semaphores("").is_err());
    }

    #[test]
    fn garbled_counter_line_is_none() {
        let text = OLD.replace("rounds 395257570", "rounds lots");
        assert_eq!(parse_innodb_semaphores(&text).unwrap().rw_shared, None);
    }
}
