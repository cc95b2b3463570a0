//! MySQL/MariaDB through mysql_async, for everything off the hot path
//! (dataset loading, the telemetry probe, inspection), where the cost per
//! query does not matter; the load path is [`crate::mywire`].

use crate::io_class::connect_io_class;
use crate::mywire::server_failure;
use crate::url::{SqlTls, SqlUrl};
use mysql_async::{Conn, OptsBuilder, SslOpts};
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::time::Duration;

/// Opens a connection (TCP, or the unix socket of `?socket=`).
pub async fn connect(url: &SqlUrl, timeout: Duration) -> Result<Conn, Failure> {
    connect_opts(url, timeout, OptsBuilder::default().stmt_cache_size(16)).await
}

/// Opens the telemetry probe's connection: the session settings the driver
/// would otherwise read with a `SELECT @@max_allowed_packet, @@wait_timeout`
/// are given, so the probe runs no SELECT (it must not count in `Com_select`).
pub async fn connect_probe(url: &SqlUrl, timeout: Duration) -> Result<Conn, Failure> {
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
pub fn classify(e: &mysql_async::Error) -> Failure {
    match e {
        mysql_async::Error::Server(s) => server_failure(s.code, &s.state, &s.message),
        mysql_async::Error::Io(_) => Failure::new(ErrorClass::ConnectionLost, format!("connection lost: {e}")),
        mysql_async::Error::Driver(mysql_async::DriverError::ConnectionClosed | mysql_async::DriverError::PoolDisconnected) => {
            Failure::new(ErrorClass::ConnectionLost, format!("connection lost: {e}"))
        }
        _ => Failure::new(ErrorClass::Other, e.to_string()),
    }
}
