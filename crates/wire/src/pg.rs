//! PostgreSQL through tokio-postgres, for everything off the hot path:
//! `prepare`, the preflight, inspection and the telemetry probe
//! ([`connect`], [`connect_as`]), and the mapping of its errors to classes.

use crate::io_class::connect_io_class;
use crate::tls::{self, PgTls};
use crate::url::{SqlTls, SqlUrl};
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::error::Error as StdError;
use std::time::Duration;
use tokio_postgres::error::SqlState;
use tokio_postgres::NoTls;

/// Opens a connection; its I/O runs on a task of the current runtime.
pub async fn connect(url: &SqlUrl, timeout: Duration) -> Result<tokio_postgres::Client, Failure> {
    connect_as(url, timeout, "scalelab").await
}

/// Opens a connection that shows as `application_name` in `pg_stat_activity`
/// (the load clients are `scalelab`, the telemetry probe `scalelab-probe`).
pub async fn connect_as(url: &SqlUrl, timeout: Duration, application_name: &str) -> Result<tokio_postgres::Client, Failure> {
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
pub fn classify(e: &tokio_postgres::Error) -> Failure {
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
