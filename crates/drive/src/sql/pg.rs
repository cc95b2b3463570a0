//! PostgreSQL connections: the load clients' [`PgConn`] (open, prepare, run a
//! unit) on the hand-written [`PgWire`] client, and tokio-postgres
//! connections ([`connect`], [`connect_as`]) for everything off the hot path:
//! `prepare`, the preflight and the telemetry probe.

use super::pgwire::PgWire;
use super::tls::{self, PgTls};
use super::unit::{run_unit, Control, UnitConn};
use super::workload::{Unit, Value};
use super::{connect_io_class, with_statement, Compiled, Inner, SqlTls, SqlUrl, Timed};
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::error::Error as StdError;
use std::time::Duration;
use tokio_postgres::error::SqlState;
use tokio_postgres::NoTls;

/// Opens a connection; its I/O runs on a task of the current runtime.
pub(crate) async fn connect(url: &SqlUrl, timeout: Duration) -> Result<tokio_postgres::Client, Failure> {
    connect_as(url, timeout, "scalelab").await
}

/// Opens a connection that shows as `application_name` in `pg_stat_activity`
/// (the load clients are `scalelab`, the telemetry probe `scalelab-probe`).
pub(crate) async fn connect_as(url: &SqlUrl, timeout: Duration, application_name: &str) -> Result<tokio_postgres::Client, Failure> {
    let mut cfg = tokio_postgres::Config::new();
    match &url.socket {
        Some(dir) => cfg.host(dir),
        None => cfg.host(&url.host),
    };
    cfg.port(url.port).user(&url.user).dbname(&url.database).connect_timeout(timeout).application_name(application_name);
    if let Some(p) = &url.password {
        cfg.password(p);
    }
    if url.tls == SqlTls::Off {
        let (client, connection) = match tokio::time::timeout(timeout, cfg.connect(NoTls)).await {
            Err(_) => return Err(timed_out(url)),
            Ok(r) => r.map_err(|e| connect_failure(&e, url))?,
        };
        tokio::spawn(async move {
            let _ = connection.await;
        });
        return Ok(client);
    }
    // sslmode=require|verify-full: TLS or no connection (never a plain-text fallback).
    cfg.ssl_mode(tokio_postgres::config::SslMode::Require);
    let config = tls::client_config(&url.tls).map_err(|m| Failure::new(ErrorClass::Other, m))?;
    let (client, connection) = match tokio::time::timeout(timeout, cfg.connect(PgTls(config))).await {
        Err(_) => return Err(timed_out(url)),
        Ok(r) => r.map_err(|e| connect_failure(&e, url))?,
    };
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

fn timed_out(url: &SqlUrl) -> Failure {
    Failure::new(ErrorClass::ConnectTimeout, format!("connect to {}:{} timed out", url.host, url.port))
}

fn io_in<'a>(e: &'a (dyn StdError + 'static)) -> Option<&'a std::io::Error> {
    let mut cur: Option<&'a (dyn StdError + 'static)> = Some(e);
    while let Some(c) = cur {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        cur = c.source();
    }
    None
}

fn connect_failure(e: &tokio_postgres::Error, url: &SqlUrl) -> Failure {
    if e.as_db_error().is_some() {
        return classify(e);
    }
    let class = io_in(e).map(connect_io_class).unwrap_or(ErrorClass::Other);
    let msg = match e.source() {
        Some(s) => format!("connect to {}:{}: {e}: {s}", url.host, url.port),
        None => format!("connect to {}:{}: {e}", url.host, url.port),
    };
    Failure::new(class, msg)
}

/// Maps a tokio-postgres error to an error class, keeping the server's message.
pub(crate) fn classify(e: &tokio_postgres::Error) -> Failure {
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        let class = if *code == SqlState::T_R_DEADLOCK_DETECTED {
            ErrorClass::Deadlock
        } else if *code == SqlState::LOCK_NOT_AVAILABLE {
            ErrorClass::LockWaitTimeout
        } else if *code == SqlState::T_R_SERIALIZATION_FAILURE {
            ErrorClass::SerializationFailure
        } else if *code == SqlState::TOO_MANY_CONNECTIONS {
            ErrorClass::TooManyConnections
        } else if [SqlState::ADMIN_SHUTDOWN, SqlState::CRASH_SHUTDOWN, SqlState::CANNOT_CONNECT_NOW].contains(code) {
            ErrorClass::ConnectionLost
        } else {
            ErrorClass::SqlError
        };
        return Failure::new(class, format!("{}: {} (SQLSTATE {})", db.severity(), db.message(), code.code()));
    }
    if e.is_closed() || io_in(e).is_some() {
        return Failure::new(ErrorClass::ConnectionLost, format!("connection lost: {e}"));
    }
    Failure::new(ErrorClass::Other, e.to_string())
}

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
