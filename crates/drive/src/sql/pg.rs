//! PostgreSQL load clients: [`PgConn`] (open, prepare, run a unit) on the
//! hand-written [`PgWire`] client; tokio-postgres connections for the rest
//! are in `scalelab_wire::pg`.

use super::compiled::{with_statement, Compiled, Inner, Timed};
use super::unit::{run_unit, Control, UnitConn};
use super::workload::{Unit, Value};
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use scalelab_wire::pgwire::PgWire;

/// A load client's PostgreSQL connection with the workload prepared on it
/// (the hand-written [`PgWire`] client: see its module for why).
pub(crate) struct PgConn {
    wire: PgWire,
    /// Per unit, per statement: the prepared statement's name (`s{unit}_{i}`).
    names: Vec<Vec<String>>,
}

/// Names of the prepared BEGIN and COMMIT.
const BEGIN: &str = "begin";
const COMMIT: &str = "commit";

impl PgConn {
    /// Connects and, with `prepare`, prepares every statement of the
    /// workload plus BEGIN and COMMIT (each its own Parse + Describe + Sync,
    /// all sent in one write); a statement the server rejects is reported
    /// with its text. `sole`: the calling thread owns only this connection.
    pub(crate) async fn open(inner: &Inner, prepare: bool, sole: bool) -> Result<PgConn, Failure> {
        let mut wire = PgWire::connect(&inner.config.url, inner.config.connect_timeout, "scalelab", sole).await?;
        let names: Vec<Vec<String>> =
            inner.units.iter().enumerate().map(|(u, unit)| (0..unit.len()).map(|i| format!("s{u}_{i}")).collect()).collect();
        if prepare {
            let mut raw = Vec::new();
            for (unit, unit_names) in inner.units.iter().zip(&names) {
                for (s, name) in unit.iter().zip(unit_names) {
                    wire.queue_prepare(name, &s.pg)?;
                    raw.push(s.raw.as_str());
                }
            }
            wire.queue_prepare(BEGIN, "BEGIN")?;
            wire.queue_prepare(COMMIT, "COMMIT")?;
            raw.extend(["BEGIN", "COMMIT"]);
            wire.send().await?;
            let mut first = None;
            for sql in raw {
                match wire.reply().await {
                    Ok(()) => {}
                    // The connection went away: not the statement's fault.
                    Err(f) if wire.broken() => return Err(first.unwrap_or(f)),
                    Err(f) => first = first.or(Some(with_statement(f, sql))),
                }
            }
            if let Some(f) = first {
                return Err(f);
            }
        }
        Ok(PgConn { wire, names })
    }

    /// Runs one unit.
    pub(crate) async fn run(
        &mut self,
        u: usize,
        unit: &Unit,
        stmts: &[Compiled],
        values: &[Value],
        prepare: bool,
        timed: Timed<'_>,
    ) -> Result<(), Failure> {
        let r = run_unit(self, u, unit, stmts, values, prepare, timed).await;
        match r {
            Err(mut f) if self.wire.broken() => {
                f.class = ErrorClass::ConnectionLost;
                Err(f)
            }
            r => r,
        }
    }

    /// Ends a failed transaction; false when the connection is unusable.
    pub(crate) async fn rollback(&mut self) -> bool {
        if self.wire.broken() || self.wire.queue_query("ROLLBACK").is_err() {
            return false;
        }
        let _ = self.wire.round_trip().await;
        !self.wire.broken()
    }
}

impl UnitConn for PgConn {
    async fn control(&mut self, c: Control, prepare: bool) -> Result<(), Failure> {
        if prepare {
            let name = match c {
                Control::Begin => BEGIN,
                Control::Commit => COMMIT,
            };
            self.wire.queue_execute(name, std::iter::empty())?;
        } else {
            self.wire.queue_query(c.sql())?;
        }
        self.wire.round_trip().await
    }

    async fn statement(&mut self, u: usize, i: usize, s: &Compiled, unit: &Unit, values: &[Value], prepare: bool) -> Result<(), Failure> {
        if prepare {
            self.wire.queue_execute(&self.names[u][i], s.order.iter().map(|&p| &values[p]))?;
        } else {
            self.wire.queue_query(&s.text(unit, values, false))?;
        }
        self.wire.round_trip().await
    }
}
