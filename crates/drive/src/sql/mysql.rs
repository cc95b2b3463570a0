//! MySQL/MariaDB connections (mysql_async): open, prepare, run a unit, classify errors.
//!
//! Client cost, measured (callgrind, user-space instructions per query,
//! point-select against MariaDB 10.11, 1 client): scalelab's client thread
//! 15 700, of which mysql_async's `exec_drop` alone is about 12 200
//! (COM_STMT_EXECUTE encoding, column definitions re-parsed into an
//! `Arc<[Column]>` on every execution, each row decoded into a `Row`, boxed
//! futures and pooled buffers); sysbench's whole client thread (libmysqlclient
//! plus its Lua) is 4 750. The engine, the parameter generators and the
//! histograms are a few hundred. So the crate is where the remaining CPU per
//! query goes; a hand-written hot path (prepare / execute / skip rows on our
//! own socket, as the HTTP driver does) is the way to reach sysbench's CPU
//! per query, not done yet.

use super::workload::{Unit, Value};
use super::{connect_io_class, with_statement, Compiled, Inner, SqlTls, SqlUrl, Timed};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, OptsBuilder, Params, SslOpts, Statement};
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::time::{Duration, Instant};

/// Opens a connection (TCP, or the unix socket of `?socket=`).
pub(crate) async fn connect(url: &SqlUrl, timeout: Duration, stmt_cache: usize) -> Result<Conn, Failure> {
    connect_opts(url, timeout, OptsBuilder::default().stmt_cache_size(stmt_cache)).await
}

/// Opens the telemetry probe's connection: the session settings the driver
/// would otherwise read with a `SELECT @@max_allowed_packet, @@wait_timeout`
/// are given, so the probe runs no SELECT (it must not count in `Com_select`).
pub(crate) async fn connect_probe(url: &SqlUrl, timeout: Duration) -> Result<Conn, Failure> {
    let opts = OptsBuilder::default().stmt_cache_size(0).max_allowed_packet(Some(16 << 20)).wait_timeout(Some(28_800));
    connect_opts(url, timeout, opts).await
}

async fn connect_opts(url: &SqlUrl, timeout: Duration, base: OptsBuilder) -> Result<Conn, Failure> {
    let mut opts = base
        .ip_or_hostname(url.host.clone())
        .tcp_port(url.port)
        .user(Some(url.user.clone()))
        .pass(url.password.clone())
        .db_name(Some(url.database.clone()))
        .prefer_socket(false)
        .tcp_nodelay(true);
    if let Some(s) = &url.socket {
        opts = opts.socket(Some(s.clone()));
    }
    // ssl-mode=REQUIRED|VERIFY_IDENTITY: mysql_async's rustls stream (ring
    // provider); it refuses a server without TLS rather than falling back.
    match &url.tls {
        SqlTls::Off => {}
        SqlTls::Require => opts = opts.ssl_opts(SslOpts::default().with_danger_accept_invalid_certs(true)),
        SqlTls::VerifyFull { root_cert } => {
            let mut ssl = SslOpts::default();
            if let Some(path) = root_cert {
                if let Err(e) = std::fs::metadata(path) {
                    return Err(Failure::new(ErrorClass::Other, format!("root certificate {path}: {e}")));
                }
                ssl = ssl.with_root_certs(vec![std::path::PathBuf::from(path).into()]);
            }
            opts = opts.ssl_opts(ssl);
        }
    }
    match tokio::time::timeout(timeout, Conn::new(opts)).await {
        Err(_) => Err(Failure::new(ErrorClass::ConnectTimeout, format!("connect to {}:{} timed out", url.host, url.port))),
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(match &e {
            mysql_async::Error::Io(mysql_async::IoError::Io(io)) => Failure::new(
                connect_io_class(io),
                format!("connect to {}: {io}", url.socket.clone().unwrap_or_else(|| format!("{}:{}", url.host, url.port))),
            ),
            mysql_async::Error::Io(mysql_async::IoError::Tls(t)) => {
                Failure::new(ErrorClass::Other, format!("TLS with {}:{}: {t}", url.host, url.port))
            }
            _ => classify(&e),
        }),
    }
}

/// Maps a mysql_async error to an error class, keeping the server's message.
pub(crate) fn classify(e: &mysql_async::Error) -> Failure {
    match e {
        mysql_async::Error::Server(s) => {
            let class = match s.code {
                1213 => ErrorClass::Deadlock,
                1205 => ErrorClass::LockWaitTimeout,
                1040 | 1203 => ErrorClass::TooManyConnections,
                2006 | 2013 | 1927 | 1053 => ErrorClass::ConnectionLost,
                _ => ErrorClass::SqlError,
            };
            Failure::new(class, format!("ERROR {} ({}): {}", s.code, s.state, s.message))
        }
        mysql_async::Error::Io(_) => Failure::new(ErrorClass::ConnectionLost, format!("connection lost: {e}")),
        mysql_async::Error::Driver(mysql_async::DriverError::ConnectionClosed | mysql_async::DriverError::PoolDisconnected) => {
            Failure::new(ErrorClass::ConnectionLost, format!("connection lost: {e}"))
        }
        _ => Failure::new(ErrorClass::Other, e.to_string()),
    }
}

fn to_my(v: &Value) -> mysql_async::Value {
    match v {
        Value::Int(i) => mysql_async::Value::Int(*i),
        Value::Text(s) => mysql_async::Value::Bytes(s.as_bytes().to_vec()),
    }
}

/// A MySQL connection with the workload prepared on it.
pub(crate) struct MyConn {
    conn: Conn,
    /// Per unit, per statement (empty without prepare).
    stmts: Vec<Vec<Statement>>,
}

impl MyConn {
    pub(crate) async fn open(inner: &Inner, prepare: bool) -> Result<MyConn, Failure> {
        let n: usize = inner.units.iter().map(Vec::len).sum();
        let mut conn = connect(&inner.config.url, inner.config.connect_timeout, n + 16).await?;
        let mut stmts = Vec::new();
        if prepare {
            for unit in &inner.units {
                let mut v = Vec::new();
                for s in unit {
                    v.push(conn.prep(&s.my).await.map_err(|e| with_statement(classify(&e), &s.raw))?);
                }
                stmts.push(v);
            }
        }
        Ok(MyConn { conn, stmts })
    }

    /// Runs one unit.
    pub(crate) async fn run(
        &mut self,
        u: usize,
        unit: &Unit,
        stmts: &[Compiled],
        values: &[Value],
        prepare: bool,
        mut timed: Timed<'_>,
    ) -> Result<(), Failure> {
        if unit.transaction {
            self.conn.query_drop("BEGIN").await.map_err(|e| classify(&e))?;
        }
        for (i, s) in stmts.iter().enumerate() {
            let t0 = timed.is_some().then(Instant::now);
            if prepare {
                let params = if s.order.is_empty() {
                    Params::Empty
                } else {
                    Params::Positional(s.order.iter().map(|&p| to_my(&values[p])).collect())
                };
                self.conn.exec_drop(&self.stmts[u][i], params).await.map_err(|e| classify(&e))?;
            } else {
                self.conn.query_drop(s.text(unit, values, true)).await.map_err(|e| classify(&e))?;
            }
            if let (Some(t0), Some((base, times))) = (t0, timed.as_mut()) {
                times.push((*base + i as u32, t0.elapsed()));
            }
        }
        if unit.transaction {
            self.conn.query_drop("COMMIT").await.map_err(|e| classify(&e))?;
        }
        Ok(())
    }

    /// Ends a failed transaction; false when the connection is unusable.
    pub(crate) async fn rollback(&mut self) -> bool {
        self.conn.query_drop("ROLLBACK").await.is_ok()
    }
}
