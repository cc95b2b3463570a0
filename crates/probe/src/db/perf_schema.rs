//! MySQL/MariaDB `performance_schema` wait summaries: the cumulative count and
//! time of each wait instrument (mutexes, rw-locks, condition variables, table
//! I/O and table/metadata locks), read each second and turned into "which
//! waits grew, how often, for how long" per step.
//!
//! The global summary never shrinks while the server runs, so rates come from
//! two readings like any other counter. Condition-variable waits are stored
//! but left out of the ranking (`scalelab_analyze::telemetry::top_waits`): in the global summary they are
//! mostly background threads sleeping until there is work (`COND_timer`, the
//! Aria service thread), which is idleness, not contention.

/// Whether the server runs with `performance_schema` (read once).
pub const PERF_SCHEMA_ENABLED_QUERY: &str = "SELECT @@performance_schema";

/// Instrument classes (`wait/synch/mutex`, `wait/io/table`, ...) and how many
/// of their instruments are enabled and timed, so the output can say what is
/// measured (wait/synch is off by default in MariaDB and MySQL).
pub const PERF_SCHEMA_INSTRUMENTS_QUERY: &str = "SELECT SUBSTRING_INDEX(NAME, '/', 3) AS class, COUNT(*) AS total, \
     SUM(ENABLED = 'YES' AND TIMED = 'YES') AS timed FROM performance_schema.setup_instruments \
     WHERE NAME LIKE 'wait/synch/%' OR NAME LIKE 'wait/io/table/%' OR NAME LIKE 'wait/lock/%' GROUP BY class ORDER BY class";

/// The cumulative wait summaries read each second (only instruments that
/// waited at least once, so the rows stay few).
pub const PERF_SCHEMA_WAITS_QUERY: &str = "SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT \
     FROM performance_schema.events_waits_summary_global_by_event_name WHERE COUNT_STAR > 0 \
     AND (EVENT_NAME LIKE 'wait/synch/%' OR EVENT_NAME LIKE 'wait/io/table/%' OR EVENT_NAME LIKE 'wait/lock/%')";

pub use scalelab_core::sample::{PerfSchemaWaits, WaitCounter, COND_PREFIX};

/// Parses `EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT` rows (SQL NULL = `None`).
/// A row that is not a `wait/...` name with numeric counters is left out
/// (counted in `bad_rows`), never read as 0; `Err` when no row was usable,
/// so the caller records the summary as unavailable.
pub fn parse_waits<'a>(rows: impl IntoIterator<Item = Vec<Option<&'a str>>>) -> Result<PerfSchemaWaits, String> {
    let mut out = PerfSchemaWaits::default();
    let mut seen = 0;
    for row in rows {
        seen += 1;
        let parsed = match row.as_slice() {
            [Some(name), Some(count), Some(time)] if name.starts_with("wait/") && !name.trim().contains(char::is_whitespace) => {
                count.trim().parse::<u64>().ok().zip(time.trim().parse::<u64>().ok()).map(|(c, t)| (name.trim(), c, t))
            }
            _ => None,
        };
        match parsed {
            Some((name, count, ps)) => {
                let wait_ps = (ps > 0 || count == 0).then_some(ps);
                out.events.insert(name.to_string(), WaitCounter { count, wait_ps });
            }
            None => out.bad_rows += 1,
        }
    }
    if out.events.is_empty() {
        return Err(if seen == 0 {
            "performance_schema returned no wait summary rows".into()
        } else {
            format!("performance_schema wait summaries unreadable ({seen} rows, none of them EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT)")
        });
    }
    Ok(out)
}

/// Parses `class, total, timed` rows of [`PERF_SCHEMA_INSTRUMENTS_QUERY`]
/// into the classes with at least one enabled and timed instrument, and
/// those with none (`(instrumented, off)`). Unreadable rows are skipped.
pub fn parse_instrumented<'a>(rows: impl IntoIterator<Item = Vec<Option<&'a str>>>) -> (Vec<String>, Vec<String>) {
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for row in rows {
        if let [Some(class), Some(_total), Some(timed)] = row.as_slice() {
            match timed.trim().parse::<u64>() {
                Ok(0) => off.push(class.trim().to_string()),
                Ok(_) => on.push(class.trim().to_string()),
                Err(_) => {}
            }
        }
    }
    (on, off)
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalelab_analyze::telemetry::top_waits;

    fn rows(text: &str) -> Vec<Vec<Option<&str>>> {
        text.lines().map(|l| l.split('\t').map(Some).collect()).collect()
    }

    #[test]
    fn parse_and_rank() {
        let a =
            parse_waits(rows("wait/io/table/sql/handler\t100\t5000000000\nwait/synch/cond/mysys/COND_timer\t1\t9000000000000")).unwrap();
        let b = parse_waits(rows(
            "wait/io/table/sql/handler\t300\t9000000000\nwait/synch/cond/mysys/COND_timer\t3\t99000000000000\n\
             wait/synch/mutex/innodb/lock_wait_mutex\t50\t20000000000\nwait/lock/table/sql/handler\t10\t0",
        ))
        .unwrap();
        assert_eq!(b.events["wait/lock/table/sql/handler"], WaitCounter { count: 10, wait_ps: None });
        let top = top_waits(&a, &b, 2.0, 5).unwrap();
        let names: Vec<&str> = top.iter().map(|w| w.event.as_str()).collect();
        // Condition variables are not ranked; the untimed one comes last.
        assert_eq!(names, ["wait/synch/mutex/innodb/lock_wait_mutex", "wait/io/table/sql/handler", "wait/lock/table/sql/handler"]);
        assert_eq!(top[1].waits_per_s, 100.0);
        assert_eq!(top[1].wait_ms_per_s, Some(2.0));
        assert_eq!(top[0].wait_ms_per_s, Some(10.0));
        assert_eq!(top[2].wait_ms_per_s, None);
        assert_eq!(top_waits(&a, &b, 2.0, 1).unwrap().len(), 1);
        assert_eq!(top_waits(&a, &b, 0.0, 5), None);
        // Backwards (restart): left out, not negative.
        assert!(top_waits(&b, &a, 1.0, 5).unwrap().is_empty());
    }

    #[test]
    fn garbage_is_unavailable() {
        assert!(parse_waits(Vec::new()).is_err());
        assert!(parse_waits(rows("wait/io/table/sql/handler\t12")).is_err());
        assert!(parse_waits(rows("nonsense\t1\t2\n\u{0}\u{1}")).is_err());
        assert!(parse_waits(vec![vec![Some("wait/x"), None, Some("3")]]).is_err());
        let some = parse_waits(rows("wait/io/table/sql/handler\t12\t5\nwait/lock/table/sql/handler\tmany\t1")).unwrap();
        assert_eq!((some.events.len(), some.bad_rows), (1, 1));
    }

    #[test]
    fn instrumented_classes() {
        let (on, off) = parse_instrumented(rows("wait/io/table\t1\t1\nwait/synch/mutex\t173\t0\nwait/lock/table\t1\tx"));
        assert_eq!((on, off), (vec!["wait/io/table".to_string()], vec!["wait/synch/mutex".to_string()]));
    }
}
