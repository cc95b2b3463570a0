//! The preflight's checks as text (`scalelab preflight`), as warning lines
//! (the start of a sweep), as JSON (stable ids), and as one summary cell of
//! the report's configuration table.

use scalelab_core::preflight::{Check, CheckStatus};

/// Every check: status, id and figure on one line, then why and the fix
/// (for warnings) indented below.
pub fn text(checks: &[Check]) -> String {
    let mut out = String::new();
    let width = checks.iter().map(|c| c.id.len()).max().unwrap_or(0);
    for c in checks {
        out.push_str(&format!("{:<11} {:<width$}  {}\n", c.status.name(), c.id, c.figure));
        if c.status == CheckStatus::Warn {
            out.push_str(&format!("{:<11} {:<width$}  why: {}\n", "", "", c.why));
            out.push_str(&format!("{:<11} {:<width$}  fix: {}\n", "", "", c.fix));
        }
    }
    let (w, u) = counts(checks);
    out.push_str(&format!("{} checks: {} ok, {w} warn, {u} unavailable\n", checks.len(), checks.len() - w - u));
    out
}

fn counts(checks: &[Check]) -> (usize, usize) {
    let n = |s| checks.iter().filter(|c| c.status == s).count();
    (n(CheckStatus::Warn), n(CheckStatus::Unavailable))
}

/// One line per warning, for stderr at the start of a sweep.
pub fn warning_lines(checks: &[Check]) -> Vec<String> {
    checks
        .iter()
        .filter(|c| c.status == CheckStatus::Warn)
        .map(|c| format!("warning: preflight {}: {} (fix: {})", c.id, c.figure, c.fix))
        .collect()
}

/// The `machine.noise` check on one line, when it is not a warning (a
/// warning is one of [`warning_lines`] already): printed at the start of
/// every sweep, since it says which differences the run can show.
pub fn noise_line(checks: &[Check]) -> Option<String> {
    let c = checks.iter().find(|c| c.id == "machine.noise" && c.status == CheckStatus::Ok)?;
    Some(format!("preflight {}: {}", c.id, c.figure))
}

/// The JSON document of `scalelab preflight --json`: the checks in their
/// order, each `id`, `status`, `figure`, `why`, `fix`, then the counts.
#[derive(serde::Serialize)]
pub struct Document<'a> {
    pub checks: &'a [Check],
    pub ok: usize,
    pub warn: usize,
    pub unavailable: usize,
}

pub fn json(checks: &[Check]) -> Document<'_> {
    let (warn, unavailable) = counts(checks);
    Document { checks, ok: checks.len() - warn - unavailable, warn, unavailable }
}

/// The configuration table's cell: the warnings with their figures, or
/// "all ok", or "-" for a run recorded before the preflight existed.
pub fn summary(checks: Option<&[Check]>) -> String {
    let Some(checks) = checks else { return "-".into() };
    let warned: Vec<String> = checks.iter().filter(|c| c.status == CheckStatus::Warn).map(|c| format!("{}: {}", c.id, c.figure)).collect();
    let (_, u) = counts(checks);
    let unavailable = if u > 0 { format!(" ({u} unavailable)") } else { String::new() };
    if warned.is_empty() {
        format!("{} checks ok{unavailable}", checks.len() - u)
    } else {
        format!("{} warn: {}{unavailable}", warned.len(), warned.join("; "))
    }
}
