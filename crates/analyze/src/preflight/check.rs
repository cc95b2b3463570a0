//! Building a [`Check`]: one constructor per status, and the assumptions
//! the judgements share.

use scalelab_core::preflight::{Check, CheckStatus, PreflightFacts, Reading};

/// New connections per second one client is assumed able to open without
/// keep-alive (the plan's rate is not known before the run): a ~1 ms
/// request on loopback, ~10 ms over a network.
pub fn per_client_rate(loopback: bool) -> u64 {
    if loopback {
        1000
    } else {
        100
    }
}

/// How long a closed connection's port stays in TIME_WAIT (`TCP_TIMEWAIT_LEN`).
pub const TIME_WAIT_S: u64 = 60;

fn check(id: &str, status: CheckStatus, figure: String, why: &str, fix: &str) -> Check {
    Check { id: id.into(), status, figure, why: why.into(), fix: fix.into() }
}

pub fn ok(id: &str, figure: String, why: &str) -> Check {
    check(id, CheckStatus::Ok, figure, why, "")
}

pub fn warn(id: &str, figure: String, why: &str, fix: &str) -> Check {
    check(id, CheckStatus::Warn, figure, why, fix)
}

pub fn unavailable(id: &str, reason: &str, why: &str) -> Check {
    check(id, CheckStatus::Unavailable, reason.to_string(), why, "")
}

/// Ok or warn by `bad`, or unavailable with the reading's reason.
pub fn judge<T>(id: &str, reading: &Reading<T>, why: &str, fix: &str, f: impl FnOnce(&T) -> (bool, String)) -> Check {
    match reading {
        Ok(v) => {
            let (bad, figure) = f(v);
            if bad {
                warn(id, figure, why, fix)
            } else {
                ok(id, figure, why)
            }
        }
        Err(e) => unavailable(id, e, why),
    }
}

/// A CPU list shown as ranges ("0-3,8").
pub fn cpus_text(cpus: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j { cpus[i].to_string() } else { format!("{}-{}", cpus[i], cpus[j]) });
        i = j + 1;
    }
    out.join(",")
}

/// Other work ran lately: a load average of at least half the CPUs (and
/// at least 1.0), or CPU pressure (some, avg10) of at least 10 %.
pub(super) fn other_work(f: &PreflightFacts) -> bool {
    let cpus = f.logical_cpus.as_ref().copied().unwrap_or(1).max(1);
    let busy_load = f.load1.as_ref().is_ok_and(|l| *l >= (f64::from(cpus) / 2.0).max(1.0));
    let busy_psi = f.cpu_pressure.as_ref().is_ok_and(|p| *p >= 10.0);
    busy_load || busy_psi
}
