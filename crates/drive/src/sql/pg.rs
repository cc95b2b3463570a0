//! PostgreSQL connections (tokio-postgres): open, prepare, run a unit, classify errors.
//!
//! Client cost, measured (callgrind, user-space instructions per query,
//! point-select, 1 client): scalelab's client thread 12 700 (13 100 before
//! statements used `execute_raw`), sysbench's (libpq plus its Lua) 7 000.
//! tokio-postgres splits each query between the caller and a connection task
//! (request and response cross two channels, two task wake-ups): about
//! 3 000 instructions in `Connection::poll`, 5 500 on the caller's side, and
//! the runtime's park on epoll about 1 700.

use super::tls::{self, PgTls};
use super::workload::{Unit, Value};
use super::{connect_io_class, with_statement, Compiled, Inner, SqlTls, SqlUrl, Timed};
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::error::Error as StdError;
use std::time::{Duration, Instant};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{IsNull, ToSql, Type};
use tokio_postgres::{NoTls, Statement};

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

/// A PostgreSQL connection with the workload prepared on it.
pub(crate) struct PgConn {
    client: tokio_postgres::Client,
    /// Per unit, per statement (empty without prepare).
    stmts: Vec<Vec<Statement>>,
    begin: Option<Statement>,
    commit: Option<Statement>,
}

impl PgConn {
    pub(crate) async fn open(inner: &Inner, prepare: bool) -> Result<PgConn, Failure> {
        let client = connect(&inner.config.url, inner.config.connect_timeout).await?;
        let mut stmts = Vec::new();
        let (mut begin, mut commit) = (None, None);
        if prepare {
            for unit in &inner.units {
                let mut v = Vec::new();
                for s in unit {
                    v.push(client.prepare(&s.pg).await.map_err(|e| with_statement(classify(&e), &s.raw))?);
                }
                stmts.push(v);
            }
            begin = Some(client.prepare("BEGIN").await.map_err(|e| classify(&e))?);
            commit = Some(client.prepare("COMMIT").await.map_err(|e| classify(&e))?);
        }
        Ok(PgConn { client, stmts, begin, commit })
    }

    /// Executes a prepared statement and discards its rows: `execute_raw`
    /// skips DataRow messages without building a `Row` for each (the rows
    /// still cross the wire, as with pgbench and sysbench, which also read
    /// and drop them).
    async fn exec(&self, stmt: &Statement, params: &[&(dyn ToSql + Sync)]) -> Result<(), tokio_postgres::Error> {
        self.client.execute_raw(stmt, params.iter().copied()).await.map(drop)
    }

    async fn run_inner(
        &self,
        u: usize,
        unit: &Unit,
        stmts: &[Compiled],
        values: &[Value],
        prepare: bool,
        mut timed: Timed<'_>,
    ) -> Result<(), Failure> {
        if prepare {
            if unit.transaction {
                self.exec(self.begin.as_ref().expect("prepared"), &[]).await.map_err(|e| classify(&e))?;
            }
            let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(8);
            for (i, s) in stmts.iter().enumerate() {
                params.clear();
                params.extend(s.order.iter().map(|&p| &values[p] as &(dyn ToSql + Sync)));
                let t0 = timed.is_some().then(Instant::now);
                self.exec(&self.stmts[u][i], &params).await.map_err(|e| classify(&e))?;
                if let (Some(t0), Some((base, times))) = (t0, timed.as_mut()) {
                    times.push((*base + i as u32, t0.elapsed()));
                }
            }
            if unit.transaction {
                self.exec(self.commit.as_ref().expect("prepared"), &[]).await.map_err(|e| classify(&e))?;
            }
        } else {
            if unit.transaction {
                self.client.batch_execute("BEGIN").await.map_err(|e| classify(&e))?;
            }
            for (i, s) in stmts.iter().enumerate() {
                let t0 = timed.is_some().then(Instant::now);
                self.client.batch_execute(&s.text(unit, values, false)).await.map_err(|e| classify(&e))?;
                if let (Some(t0), Some((base, times))) = (t0, timed.as_mut()) {
                    times.push((*base + i as u32, t0.elapsed()));
                }
            }
            if unit.transaction {
                self.client.batch_execute("COMMIT").await.map_err(|e| classify(&e))?;
            }
        }
        Ok(())
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
        let r = self.run_inner(u, unit, stmts, values, prepare, timed).await;
        match r {
            Err(mut f) if self.client.is_closed() => {
                f.class = ErrorClass::ConnectionLost;
                Err(f)
            }
            r => r,
        }
    }

    /// Ends a failed transaction; false when the connection is unusable.
    pub(crate) async fn rollback(&mut self) -> bool {
        self.client.batch_execute("ROLLBACK").await.is_ok()
    }
}

impl ToSql for Value {
    fn to_sql(&self, ty: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
        match self {
            Value::Int(i) => match *ty {
                Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
                Type::INT8 => i.to_sql(ty, out),
                Type::FLOAT4 => (*i as f32).to_sql(ty, out),
                Type::FLOAT8 => (*i as f64).to_sql(ty, out),
                Type::BOOL => (*i != 0).to_sql(ty, out),
                _ => i.to_string().as_str().to_sql(ty, out),
            },
            Value::Text(s) => match *ty {
                Type::INT2 => s.parse::<i16>()?.to_sql(ty, out),
                Type::INT4 => s.parse::<i32>()?.to_sql(ty, out),
                Type::INT8 => s.parse::<i64>()?.to_sql(ty, out),
                Type::FLOAT8 => s.parse::<f64>()?.to_sql(ty, out),
                _ => s.as_str().to_sql(ty, out),
            },
        }
    }

    fn accepts(ty: &Type) -> bool {
        matches!(*ty, Type::INT2 | Type::INT4 | Type::INT8 | Type::FLOAT4 | Type::FLOAT8 | Type::BOOL) || <&str as ToSql>::accepts(ty)
    }

    tokio_postgres::types::to_sql_checked!();
}
