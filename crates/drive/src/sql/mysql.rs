//! MySQL/MariaDB connections: the load path on the hand-written
//! [`super::mywire`] client (why, and its measured cost, are in its module
//! doc); mysql_async for everything else (dataset loading, the telemetry
//! probe, inspection), where the cost per query does not matter.

use super::mywire::{self, server_failure, MyWire, Prepared};
use super::unit::{run_unit, Control, UnitConn};
use super::workload::{Unit, Value};
use super::{connect_io_class, with_statement, Compiled, Inner, SqlTls, SqlUrl, Timed};
use mysql_async::{Conn, OptsBuilder, SslOpts};
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::time::Duration;

/// Opens a connection (TCP, or the unix socket of `?socket=`).
pub(crate) async fn connect(url: &SqlUrl, timeout: Duration) -> Result<Conn, Failure> {
    connect_opts(url, timeout, OptsBuilder::default().stmt_cache_size(16)).await
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
        mysql_async::Error::Server(s) => server_failure(s.code, &s.state, &s.message),
        mysql_async::Error::Io(_) => Failure::new(ErrorClass::ConnectionLost, format!("connection lost: {e}")),
        mysql_async::Error::Driver(mysql_async::DriverError::ConnectionClosed | mysql_async::DriverError::PoolDisconnected) => {
            Failure::new(ErrorClass::ConnectionLost, format!("connection lost: {e}"))
        }
        _ => Failure::new(ErrorClass::Other, e.to_string()),
    }
}

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
