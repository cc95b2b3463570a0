//! PostgreSQL connections (tokio-postgres): open, prepare, run a unit, classify errors.

use super::workload::{Unit, Value};
use super::{connect_io_class, with_statement, Compiled, Inner, SqlUrl};
use futures_util::TryStreamExt;
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::error::Error as StdError;
use std::time::Duration;
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
    let (client, connection) = match tokio::time::timeout(timeout, cfg.connect(NoTls)).await {
        Err(_) => return Err(Failure::new(ErrorClass::ConnectTimeout, format!("connect to {}:{} timed out", url.host, url.port))),
        Ok(r) => r.map_err(|e| connect_failure(&e, url))?,
    };
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
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

    async fn exec(&self, stmt: &Statement, params: &[&(dyn ToSql + Sync)]) -> Result<(), tokio_postgres::Error> {
        let rows = self.client.query_raw(stmt, params.iter().copied()).await?;
        futures_util::pin_mut!(rows);
        while rows.try_next().await?.is_some() {}
        Ok(())
    }

    async fn run_inner(&self, u: usize, unit: &Unit, stmts: &[Compiled], values: &[Value], prepare: bool) -> Result<(), Failure> {
        if prepare {
            if unit.transaction {
                self.exec(self.begin.as_ref().expect("prepared"), &[]).await.map_err(|e| classify(&e))?;
            }
            let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(8);
            for (i, s) in stmts.iter().enumerate() {
                params.clear();
                params.extend(s.order.iter().map(|&p| &values[p] as &(dyn ToSql + Sync)));
                self.exec(&self.stmts[u][i], &params).await.map_err(|e| classify(&e))?;
            }
            if unit.transaction {
                self.exec(self.commit.as_ref().expect("prepared"), &[]).await.map_err(|e| classify(&e))?;
            }
        } else {
            if unit.transaction {
                self.client.batch_execute("BEGIN").await.map_err(|e| classify(&e))?;
            }
            for s in stmts {
                self.client.batch_execute(&s.text(unit, values, false)).await.map_err(|e| classify(&e))?;
            }
            if unit.transaction {
                self.client.batch_execute("COMMIT").await.map_err(|e| classify(&e))?;
            }
        }
        Ok(())
    }

    /// Runs one unit.
    pub(crate) async fn run(&mut self, u: usize, unit: &Unit, stmts: &[Compiled], values: &[Value], prepare: bool) -> Result<(), Failure> {
        let r = self.run_inner(u, unit, stmts, values, prepare).await;
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
