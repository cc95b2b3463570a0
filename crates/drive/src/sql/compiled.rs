//! A SQL load as the clients run it: the config ([`SqlConfig`]), each
//! statement compiled for both placeholder styles ([`Compiled`]), and the
//! driver's shared state ([`Inner`]).

use super::workload::{compile, Unit, Value, Workload};
use scalelab_core::result::Failure;
use scalelab_wire::SqlUrl;
use std::time::Duration;

/// Everything that defines a SQL load.
#[derive(Clone, Debug)]
pub struct SqlConfig {
    /// Where to connect.
    pub url: SqlUrl,
    /// What each client sends.
    pub workload: Workload,
    /// Prepared statements (true) or text queries with literals (false).
    pub prepare: bool,
    /// Limit for opening one connection.
    pub connect_timeout: Duration,
}

/// Where a transaction unit reports its statements' latencies: the index of
/// its first statement name, and the list the engine drains.
pub(crate) type Timed<'a> = Option<(u32, &'a mut Vec<(u32, Duration)>)>;

/// One statement compiled for both placeholder styles.
#[derive(Clone, Debug)]
pub(crate) struct Compiled {
    /// The statement as written, for messages.
    pub raw: String,
    /// With `$1, $2, …`.
    pub pg: String,
    /// With `?`.
    pub my: String,
    /// Parameter index for each bind position.
    pub order: Vec<usize>,
}

impl Compiled {
    /// The statement with literal values (for `--no-prepare`).
    pub(crate) fn text(&self, unit: &Unit, values: &[Value], escape_backslash: bool) -> String {
        let mut i = 0;
        let (sql, _) = compile(&self.raw, &unit.params, |_| {
            let v = values[self.order[i]].literal(escape_backslash);
            i += 1;
            v
        });
        sql
    }
}

/// The compiled workload and its config, shared by every client of a driver.
pub(crate) struct Inner {
    pub config: SqlConfig,
    /// Per unit: its compiled statements.
    pub units: Vec<Vec<Compiled>>,
    /// Per unit: for transaction units, the index of its first statement in
    /// `statement_names` (their latencies are kept one by one).
    pub timed: Vec<Option<u32>>,
    /// Names of the statements of transaction units, for per-statement latency.
    pub statement_names: Vec<String>,
    pub cumulative: Vec<u32>,
    pub total_weight: u32,
}

/// A failure with the statement at fault appended.
pub(crate) fn with_statement(mut f: Failure, sql: &str) -> Failure {
    f.message = format!("{} (statement: {sql})", f.message);
    f
}
