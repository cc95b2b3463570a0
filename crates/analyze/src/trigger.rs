//! Triggers (`watch --trigger`, `sweep --trigger`): a condition over the
//! per-second figures, held for a while, that starts a capture. This is
//! the pure part: the expression ([`Trigger::parse`]), the figure each
//! second gives it ([`Figure::of`]), and when it fires ([`Triggers::second`]):
//! once per episode of the condition holding, at most `max_per_hour` times
//! in any hour. pt-stalk's idea, over scalelab's own figures.

use crate::telemetry::Interval;
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

/// A per-second figure a trigger can watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    /// The server's thread-time shares, %.
    Futex,
    Runnable,
    Running,
    Io,
    Idle,
    /// The server's CPU, % of one core.
    ServerCpu,
    /// The machine's CPU busy, %.
    Cpu,
    /// The machine's CPU in iowait, %.
    Iowait,
    /// The server's context switches per second.
    ServerCs,
    /// Connections the listen queue dropped per second.
    ListenDrops,
    /// Sockets in TIME_WAIT.
    TimeWait,
    /// The database's time waiting, %: PostgreSQL, the share of active
    /// backends in a wait other than CPU; MySQL/MariaDB, InnoDB row-lock
    /// wait time in % of one session (100 = one always waiting).
    DbWaits,
    /// Latency of the last second of load, ms (a sweep's).
    P50,
    P99,
    /// Completions per second (a sweep's).
    Throughput,
}

impl Figure {
    /// Every figure with its name in an expression and its unit.
    pub const ALL: [(Figure, &'static str, &'static str); 15] = [
        (Figure::Futex, "futex", "%"),
        (Figure::Runnable, "runnable", "%"),
        (Figure::Running, "running", "%"),
        (Figure::Io, "io", "%"),
        (Figure::Idle, "idle", "%"),
        (Figure::ServerCpu, "server_cpu", "%"),
        (Figure::Cpu, "cpu", "%"),
        (Figure::Iowait, "iowait", "%"),
        (Figure::ServerCs, "server_cs", "/s"),
        (Figure::ListenDrops, "listen_drops", "/s"),
        (Figure::TimeWait, "time_wait", ""),
        (Figure::DbWaits, "db_waits", "%"),
        (Figure::P50, "p50", "ms"),
        (Figure::P99, "p99", "ms"),
        (Figure::Throughput, "throughput", "/s"),
    ];

    /// Its name in an expression.
    pub fn name(self) -> &'static str {
        Figure::ALL.iter().find(|f| f.0 == self).map_or("?", |f| f.1)
    }

    /// Its unit (`%`, `/s`, `ms`, or none).
    pub fn unit(self) -> &'static str {
        Figure::ALL.iter().find(|f| f.0 == self).map_or("", |f| f.2)
    }

    /// Whether it needs load from scalelab (latency, throughput): a
    /// `watch` has none.
    pub fn needs_load(self) -> bool {
        matches!(self, Figure::P50 | Figure::P99 | Figure::Throughput)
    }

    /// Whether it needs the server process (thread states, its CPU).
    pub fn needs_server(self) -> bool {
        matches!(
            self,
            Figure::Futex | Figure::Runnable | Figure::Running | Figure::Io | Figure::Idle | Figure::ServerCpu | Figure::ServerCs
        )
    }

    /// Its value in one second: the interval's figures, and the load's
    /// of the same second (a sweep's tick). None when not measured.
    pub fn of(self, iv: &Interval, load: Option<&LoadSecond>) -> Option<f64> {
        match self {
            Figure::Futex => iv.threads_futex_pct,
            Figure::Runnable => iv.threads_runnable_pct,
            Figure::Running => iv.threads_running_pct,
            Figure::Io => iv.threads_io_pct,
            Figure::Idle => iv.threads_idle_pct,
            Figure::ServerCpu => iv.server_cpu_pct,
            Figure::Cpu => iv.cpu_busy_pct,
            Figure::Iowait => iv.cpu_iowait_pct,
            Figure::ServerCs => iv.server_cs_per_s,
            Figure::ListenDrops => iv.listen_drops_per_s,
            Figure::TimeWait => iv.tcp_time_wait.map(|n| n as f64),
            Figure::DbWaits => iv.db.as_ref().and_then(|d| match d.engine.as_str() {
                "postgres" => d.wait_type_pct("CPU").map(|cpu| (100.0 - cpu).max(0.0)),
                _ => d.row_lock_time_ms_per_s.map(|ms| ms / 10.0),
            }),
            Figure::P50 => load.and_then(|l| l.p50_ms),
            Figure::P99 => load.and_then(|l| l.p99_ms),
            Figure::Throughput => load.map(|l| l.throughput_per_s),
        }
    }
}

/// The load's figures of one second (a sweep's latest tick).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LoadSecond {
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub throughput_per_s: f64,
}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Ge,
    Gt,
    Le,
    Lt,
}

impl Op {
    fn holds(self, v: f64, t: f64) -> bool {
        match self {
            Op::Ge => v >= t,
            Op::Gt => v > t,
            Op::Le => v <= t,
            Op::Lt => v < t,
        }
    }

    fn text(self) -> &'static str {
        match self {
            Op::Ge => ">=",
            Op::Gt => ">",
            Op::Le => "<=",
            Op::Lt => "<",
        }
    }
}

/// How long a condition holds when no `for` is given (pt-stalk's 5 cycles of a second).
pub const DEFAULT_HOLD: Duration = Duration::from_secs(5);

/// One trigger: `FIGURE OP VALUE[UNIT] [for DURATION]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Trigger {
    pub figure: Figure,
    pub op: Op,
    pub threshold: f64,
    /// How long the condition must hold before it fires.
    pub hold: Duration,
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hold = self.hold.as_secs_f64();
        write!(f, "{}{}{}{} for {hold}s", self.figure.name(), self.op.text(), self.threshold, self.figure.unit())
    }
}

impl Trigger {
    /// Parses `futex>=50% for 5s`, `p99 > 20ms`, `runnable>=30`; a unit,
    /// when given, must be the figure's. The error says what to write.
    pub fn parse(text: &str) -> Result<Trigger, String> {
        let names = || Figure::ALL.iter().map(|f| f.1).collect::<Vec<_>>().join(", ");
        let (cond, hold) = match text.split_once(" for ") {
            Some((c, h)) => {
                let hold = scalelab_core::parse_duration(h.trim()).map_err(|e| format!("'{}': {e}", h.trim()))?;
                if hold.is_zero() || hold > Duration::from_secs(24 * 3600) {
                    return Err(format!("'for {}': give a duration from 1s to 24h", h.trim()));
                }
                (c.trim(), hold)
            }
            None => (text.trim(), DEFAULT_HOLD),
        };
        let at = cond
            .find(['>', '<'])
            .ok_or_else(|| format!("no comparison: write FIGURE>=VALUE (e.g. futex>=50%) where FIGURE is one of {}", names()))?;
        let (name, rest) = (cond[..at].trim(), &cond[at..]);
        let (op, value) = match rest.get(..2) {
            Some(">=") => (Op::Ge, &rest[2..]),
            Some("<=") => (Op::Le, &rest[2..]),
            _ if rest.starts_with('>') => (Op::Gt, &rest[1..]),
            _ => (Op::Lt, &rest[1..]),
        };
        let figure = Figure::ALL
            .iter()
            .find(|f| f.1 == name)
            .map(|f| f.0)
            .ok_or_else(|| format!("unknown figure '{}': one of {}", scalelab_core::escape_control(name), names()))?;
        let value = value.trim();
        let split = value.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(value.len());
        let (number, unit) = (&value[..split], value[split..].trim());
        let threshold: f64 = number.parse().map_err(|_| format!("'{}' is not a number", scalelab_core::escape_control(value)))?;
        if !unit.is_empty() && unit != figure.unit() {
            let want = if figure.unit().is_empty() { "no unit".to_string() } else { format!("'{}'", figure.unit()) };
            return Err(format!("{} is in {want}, not '{}'", figure.name(), scalelab_core::escape_control(unit)));
        }
        Ok(Trigger { figure, op, threshold, hold })
    }
}

/// A trigger fired: which, the second its condition began to hold, the
/// second it fired, and the figure then.
#[derive(Clone, Debug, PartialEq)]
pub struct Fired {
    pub trigger: usize,
    pub from_unix_ms: i64,
    pub unix_ms: i64,
    pub value: f64,
}

/// Triggers and their state over a run's seconds.
#[derive(Debug)]
pub struct Triggers {
    pub list: Vec<Trigger>,
    max_per_hour: u32,
    /// Per trigger: since when its condition holds, and whether this
    /// episode has fired already (it fires again only after it stopped holding).
    holding: Vec<(Option<i64>, bool)>,
    /// When captures fired, within the last hour.
    fired: VecDeque<i64>,
    /// Episodes that held long enough but were over the hourly limit.
    pub suppressed: u64,
}

impl Triggers {
    /// `max_per_hour` must be at least 1.
    pub fn new(list: Vec<Trigger>, max_per_hour: u32) -> Triggers {
        let holding = vec![(None, false); list.len()];
        Triggers { list, max_per_hour: max_per_hour.max(1), holding, fired: VecDeque::new(), suppressed: 0 }
    }

    /// One second's figures; the trigger that fires now, if any (the
    /// first in the list when several do: one capture covers them).
    pub fn second(&mut self, iv: &Interval, load: Option<&LoadSecond>) -> Option<Fired> {
        let mut out = None;
        for (i, t) in self.list.iter().enumerate() {
            let value = t.figure.of(iv, load).filter(|v| t.op.holds(*v, t.threshold));
            let state = &mut self.holding[i];
            let Some(value) = value else {
                *state = (None, false);
                continue;
            };
            let since = *state.0.get_or_insert(iv.start_unix_ms);
            let held_ms = iv.unix_ms - since;
            if state.1 || held_ms < t.hold.as_millis() as i64 {
                continue;
            }
            state.1 = true;
            if out.is_some() {
                continue;
            }
            while self.fired.front().is_some_and(|&at| at <= iv.unix_ms - 3_600_000) {
                self.fired.pop_front();
            }
            if self.fired.len() >= self.max_per_hour as usize {
                self.suppressed += 1;
                continue;
            }
            self.fired.push_back(iv.unix_ms);
            out = Some(Fired { trigger: i, from_unix_ms: since, unix_ms: iv.unix_ms, value });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sec(at_s: i64, futex: Option<f64>) -> Interval {
        Interval { start_unix_ms: (at_s - 1) * 1000, unix_ms: at_s * 1000, threads_futex_pct: futex, ..Default::default() }
    }

    #[test]
    fn expressions_parse_with_units_and_durations_and_bad_ones_say_what_to_write() {
        let t = Trigger::parse("futex>=50% for 5s").unwrap();
        assert_eq!((t.figure, t.op, t.threshold, t.hold), (Figure::Futex, Op::Ge, 50.0, Duration::from_secs(5)));
        assert_eq!(t.to_string(), "futex>=50% for 5s");
        let t = Trigger::parse(" p99 > 20ms for 500ms").unwrap();
        assert_eq!((t.figure, t.op, t.threshold, t.hold), (Figure::P99, Op::Gt, 20.0, Duration::from_millis(500)));
        assert_eq!(Trigger::parse("runnable>=30").unwrap().hold, DEFAULT_HOLD);
        assert_eq!(Trigger::parse("throughput<100/s").unwrap().op, Op::Lt);
        assert_eq!(Trigger::parse("time_wait<=10").unwrap().op, Op::Le);
        for (bad, says) in [
            ("futex", "no comparison"),
            ("fuxet>=5", "unknown figure 'fuxet'"),
            ("futex>=5ms", "futex is in '%', not 'ms'"),
            ("futex>=lots", "not a number"),
            ("futex>=5% for ever", "'ever'"),
            ("futex>=5% for 0s", "from 1s to 24h"),
            ("time_wait>=5%", "no unit"),
            ("\u{1b}[2Jx>=1", "unknown figure '\\e[2Jx'"),
        ] {
            let e = Trigger::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn a_condition_fires_once_per_episode_after_it_held_and_a_gap_resets_it() {
        let mut t = Triggers::new(vec![Trigger::parse("futex>=50% for 3s").unwrap()], 10);
        // Holds from second 1 (its interval starts at 0 s): fires at 3 s.
        assert_eq!(t.second(&sec(1, Some(60.0)), None), None);
        assert_eq!(t.second(&sec(2, Some(55.0)), None), None);
        let f = t.second(&sec(3, Some(70.0)), None).expect("held 3 s");
        assert_eq!((f.from_unix_ms, f.unix_ms, f.value), (0, 3000, 70.0));
        // Still holding: the same episode, no second capture.
        assert_eq!(t.second(&sec(4, Some(80.0)), None), None);
        // A second below it, or not measured, ends the episode.
        assert_eq!(t.second(&sec(5, Some(10.0)), None), None);
        assert_eq!(t.second(&sec(6, Some(60.0)), None), None);
        assert_eq!(t.second(&sec(7, None), None), None);
        assert_eq!(t.second(&sec(8, Some(60.0)), None), None);
        assert_eq!(t.second(&sec(9, Some(60.0)), None), None);
        assert_eq!(t.second(&sec(10, Some(60.0)), None).map(|f| f.from_unix_ms), Some(7000));
    }

    #[test]
    fn at_most_n_an_hour_and_the_rest_are_counted() {
        let mut t = Triggers::new(vec![Trigger::parse("futex>=50% for 1s").unwrap()], 2);
        let mut fired = vec![];
        // An episode every 10 s for an hour and a half.
        for s in (1..5400).step_by(10) {
            if let Some(f) = t.second(&sec(s, Some(90.0)), None) {
                fired.push(f.unix_ms / 1000);
            }
            t.second(&sec(s + 1, Some(0.0)), None);
        }
        assert_eq!(fired, [1, 11, 3601, 3611], "an hour after each, a capture may come again");
        assert_eq!(t.suppressed, 540 - 4);
    }

    #[test]
    fn load_figures_come_from_the_load_s_second() {
        let mut t = Triggers::new(vec![Trigger::parse("p99>=20ms for 1s").unwrap()], 5);
        assert_eq!(t.second(&sec(1, None), None), None, "no load: never holds");
        let load = LoadSecond { p99_ms: Some(25.0), ..Default::default() };
        assert_eq!(t.second(&sec(2, None), Some(&load)).map(|f| f.value), Some(25.0));
        assert!(Figure::P99.needs_load() && !Figure::Futex.needs_load() && Figure::Futex.needs_server());
    }
}
