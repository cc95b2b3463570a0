//! The SQL drivers: PostgreSQL (`postgres://`) and MySQL/MariaDB
//! (`mysql://`). The load clients run on the hand-written protocol clients
//! of `scalelab-wire` (`pgwire`, `mywire`); its tokio-postgres and
//! mysql_async connections serve `prepare`, the preflight and inspection.
//!
//! Each virtual client owns one connection, opened in [`Client::connect`]
//! before the window, with every statement of the workload prepared on it
//! (unless `prepare` is off: then statements go as text with literal values).
//! One [`Client::call`] is one unit of the workload (a statement or a
//! BEGIN … COMMIT transaction) and returns the statements it ran.
//!
//! - [`workload`]: units, weights, parameter generators, built-in workloads.
//! - [`dataset`]: `prepare`: the sbtest and pgbench tables, loaded fast.
//! - [`monitor`]: re-exported from `scalelab_wire::monitor` (the telemetry
//!   probe's connection).

mod compiled;
pub mod dataset;
mod mysql;
mod pg;
mod unit;
pub mod workload;

pub use scalelab_wire::monitor;
use scalelab_wire::runtime;
pub use scalelab_wire::url::{Engine, SqlTls, SqlUrl};

use crate::driver::{Client, ClientCtx, Driver};
pub use compiled::SqlConfig;
use compiled::{Compiled, Inner};
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::sync::Arc;
use std::time::Duration;
use workload::{compile, DatasetShape, GenState, Rng, Value};

/// Drives a SQL server; cheap to share between worker threads.
pub struct SqlDriver {
    inner: Arc<Inner>,
}

/// What the preflight learned about the target.
#[derive(Clone, Debug)]
pub struct Inspection {
    /// The server's version string (e.g. `PostgreSQL 15.8`, `10.11.6-MariaDB`).
    pub server: String,
    /// The tables found, for the built-in workloads.
    pub shape: DatasetShape,
}

/// Connects once, reads the server version and which datasets are loaded.
pub fn inspect(url: &SqlUrl, connect_timeout: Duration) -> Result<Inspection, Failure> {
    runtime().block_on(async {
        let mut admin = dataset::Admin::connect(url, connect_timeout).await?;
        let server = admin.version().await?;
        let shape = admin.shape().await?;
        admin.close().await;
        Ok(Inspection { server, shape })
    })
}

impl SqlDriver {
    /// Compiles the workload's statements for the server's placeholder style.
    pub fn new(config: SqlConfig) -> SqlDriver {
        let mut units = Vec::new();
        let mut cumulative = Vec::new();
        let mut total = 0u32;
        let (mut timed, mut statement_names) = (Vec::new(), Vec::new());
        for u in &config.workload.units {
            if u.transaction {
                timed.push(Some(statement_names.len() as u32));
                for (i, sql) in u.statements.iter().enumerate() {
                    let sql: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
                    let short = match sql.char_indices().nth(60) {
                        Some((at, _)) => format!("{}...", &sql[..at]),
                        None => sql,
                    };
                    statement_names.push(format!("{} #{}: {short}", u.name, i + 1));
                }
            } else {
                timed.push(None);
            }
            units.push(
                u.statements
                    .iter()
                    .map(|s| {
                        let (pg, order) = compile(s, &u.params, |i| format!("${i}"));
                        let (my, _) = compile(s, &u.params, |_| "?".to_string());
                        Compiled { raw: s.clone(), pg, my, order }
                    })
                    .collect(),
            );
            total += u.weight;
            cumulative.push(total);
        }
        SqlDriver { inner: Arc::new(Inner { config, units, timed, statement_names, cumulative, total_weight: total }) }
    }

    /// What the driver was built from.
    pub fn config(&self) -> &SqlConfig {
        &self.inner.config
    }

    /// Opens one connection and prepares every statement (then closes it):
    /// a statement the server rejects is reported with its text.
    pub fn check_statements(&self) -> Result<(), Failure> {
        runtime().block_on(async {
            let mut c = self.client(ClientCtx::new(0));
            c.open(true).await
        })
    }
}

impl Driver for SqlDriver {
    type Client = SqlClient;

    fn client(&self, ctx: ClientCtx) -> SqlClient {
        let id = ctx.id;
        let gens = self.inner.config.workload.units.iter().map(|u| u.params.iter().map(|(_, g)| GenState::new(g, id)).collect()).collect();
        SqlClient {
            inner: self.inner.clone(),
            conn: None,
            rng: Rng::new(u64::from(id) + 1),
            gens,
            values: Vec::new(),
            times: Vec::new(),
            opened: 0,
            sole: ctx.owns_one_connection,
        }
    }

    fn statement_names(&self) -> Vec<String> {
        self.inner.statement_names.clone()
    }
}

/// An open connection with the workload's statements prepared.
enum Conn {
    Pg(pg::PgConn),
    My(mysql::MyConn),
}

/// One virtual SQL client: one connection, one unit in flight.
pub struct SqlClient {
    inner: Arc<Inner>,
    conn: Option<Conn>,
    rng: Rng,
    gens: Vec<Vec<GenState>>,
    values: Vec<Value>,
    /// Statement latencies of the last transaction unit, for the engine.
    times: Vec<(u32, Duration)>,
    opened: u64,
    /// This client's thread owns only its connection (see [`ClientCtx`]).
    sole: bool,
}

impl SqlClient {
    async fn open(&mut self, always_prepare: bool) -> Result<(), Failure> {
        let prepare = always_prepare || self.inner.config.prepare;
        let conn = match self.inner.config.url.engine {
            Engine::Postgres => Conn::Pg(pg::PgConn::open(&self.inner, prepare, self.sole).await?),
            Engine::Mysql => Conn::My(mysql::MyConn::open(&self.inner, prepare, self.sole).await?),
        };
        self.conn = Some(conn);
        self.opened += 1;
        Ok(())
    }

    fn pick(&mut self) -> usize {
        if self.inner.cumulative.len() == 1 {
            return 0;
        }
        let r = self.rng.below(u64::from(self.inner.total_weight)) as u32;
        self.inner.cumulative.iter().position(|&c| r < c).unwrap_or(0)
    }
}

impl Client for SqlClient {
    async fn connect(&mut self) -> Result<(), Failure> {
        self.open(false).await
    }

    async fn call(&mut self) -> Result<u32, Failure> {
        if self.conn.is_none() {
            self.open(false).await?;
        }
        let u = self.pick();
        self.values.clear();
        for g in &mut self.gens[u] {
            self.values.push(g.draw(&mut self.rng));
        }
        // Borrow the shared workload rather than cloning its Arc: a clone per
        // unit is an atomic increment and decrement on a cache line that every
        // worker thread shares.
        let inner = &*self.inner;
        let unit = &inner.config.workload.units[u];
        let stmts = &inner.units[u];
        let prepare = inner.config.prepare;
        let conn = self.conn.as_mut().expect("connection open");
        let timed = inner.timed[u].map(|base| (base, &mut self.times));
        let result = match conn {
            Conn::Pg(c) => c.run(u, unit, stmts, &self.values, prepare, timed).await,
            Conn::My(c) => c.run(u, unit, stmts, &self.values, prepare, timed).await,
        };
        match result {
            Ok(()) => Ok((stmts.len() + if unit.transaction { 2 } else { 0 }) as u32),
            Err(f) => {
                if f.class == ErrorClass::ConnectionLost {
                    self.conn = None;
                } else if unit.transaction {
                    let alive = match conn {
                        Conn::Pg(c) => c.rollback().await,
                        Conn::My(c) => c.rollback().await,
                    };
                    if !alive {
                        self.conn = None;
                    }
                }
                Err(f)
            }
        }
    }

    fn reconnects(&self) -> u64 {
        self.opened.saturating_sub(1)
    }

    fn statement_times(&mut self) -> Option<&mut Vec<(u32, Duration)>> {
        Some(&mut self.times)
    }
}
