//! MySQL/MariaDB load clients on the hand-written `scalelab_wire::mywire`
//! client (why, and its measured cost, are in its module doc); mysql_async
//! connections for the rest are in `scalelab_wire::mysql`.

use super::compiled::{with_statement, Compiled, Inner, Timed};
use super::unit::{run_unit, Control, UnitConn};
use super::workload::{Unit, Value};
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use scalelab_wire::mywire::{self, MyWire, Prepared};

/// A MySQL connection with the workload prepared on it.
pub(crate) struct MyConn {
    wire: MyWire,
    /// Per unit, per statement (empty without prepare).
    stmts: Vec<Vec<Prepared>>,
}

impl MyConn {
    /// Connects and prepares every statement of the workload (unless
    /// `prepare` is off); a statement the server rejects is named. `sole`:
    /// the calling thread owns only this connection.
    pub(crate) async fn open(inner: &Inner, prepare: bool, sole: bool) -> Result<MyConn, Failure> {
        let mut wire = mywire::connect(&inner.config.url, inner.config.connect_timeout, sole).await?;
        let mut stmts = Vec::new();
        if prepare {
            for unit in &inner.units {
                let mut v = Vec::new();
                for s in unit {
                    let p = wire.prepare(&s.my).await.map_err(|f| with_statement(f, &s.raw))?;
                    if p.params() != s.order.len() {
                        let msg = format!("the server counts {} placeholder(s), the workload binds {}", p.params(), s.order.len());
                        return Err(with_statement(Failure::new(ErrorClass::Other, msg), &s.raw));
                    }
                    v.push(p);
                }
                stmts.push(v);
            }
        }
        Ok(MyConn { wire, stmts })
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
        run_unit(self, u, unit, stmts, values, prepare, timed).await
    }

    /// Ends a failed transaction; false when the connection is unusable.
    pub(crate) async fn rollback(&mut self) -> bool {
        self.wire.query("ROLLBACK").await.is_ok()
    }
}

impl UnitConn for MyConn {
    async fn control(&mut self, c: Control, _prepare: bool) -> Result<(), Failure> {
        self.wire.query(c.sql()).await
    }

    async fn statement(&mut self, u: usize, i: usize, s: &Compiled, unit: &Unit, values: &[Value], prepare: bool) -> Result<(), Failure> {
        if prepare {
            self.wire.execute(&self.stmts[u][i], &s.order, values).await
        } else {
            self.wire.query(&s.text(unit, values, true)).await
        }
    }
}

impl Drop for MyConn {
    fn drop(&mut self) {
        self.wire.quit_now();
    }
}
