//! The request loop both SQL protocols share: one unit of work (a
//! transaction, or a single statement) on one open connection, with each
//! statement's latency recorded when asked.

use super::compiled::{Compiled, Timed};
use super::workload::{Unit, Value};
use scalelab_core::result::Failure;
use std::time::Instant;

/// The transaction control statements of a unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Control {
    Begin,
    Commit,
}

impl Control {
    /// The statement's text.
    pub(crate) fn sql(self) -> &'static str {
        match self {
            Control::Begin => "BEGIN",
            Control::Commit => "COMMIT",
        }
    }
}

/// What the request loop asks of a protocol's connection.
pub(crate) trait UnitConn {
    /// Sends BEGIN or COMMIT (prepared when `prepare` and the protocol
    /// prepares them) and reads its reply.
    async fn control(&mut self, c: Control, prepare: bool) -> Result<(), Failure>;

    /// Sends statement `i` of unit `u` (its prepared form with `prepare`,
    /// else its text with `values` inlined) and reads the whole reply.
    async fn statement(&mut self, u: usize, i: usize, s: &Compiled, unit: &Unit, values: &[Value], prepare: bool) -> Result<(), Failure>;
}

/// Runs unit `u` (`unit`, compiled as `stmts`) with `values` on `conn`;
/// with `timed`, each statement's latency is pushed as (base + i, latency).
pub(crate) async fn run_unit<C: UnitConn>(
    conn: &mut C,
    u: usize,
    unit: &Unit,
    stmts: &[Compiled],
    values: &[Value],
    prepare: bool,
    mut timed: Timed<'_>,
) -> Result<(), Failure> {
    if unit.transaction {
        conn.control(Control::Begin, prepare).await?;
    }
    for (i, s) in stmts.iter().enumerate() {
        let t0 = timed.is_some().then(Instant::now);
        conn.statement(u, i, s, unit, values, prepare).await?;
        if let (Some(t0), Some((base, times))) = (t0, timed.as_mut()) {
            times.push((*base + i as u32, t0.elapsed()));
        }
    }
    if unit.transaction {
        conn.control(Control::Commit, prepare).await?;
    }
    Ok(())
}
