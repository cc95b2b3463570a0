//! The telemetry probe's own database connection: one extra connection (not
//! one of the load clients) that runs status and activity queries and hands
//! back text rows, so the parsers in `scalelab-probe` stay driver-free.
//!
//! PostgreSQL: the connection goes to the maintenance database `postgres`
//! when it can, so that the probe's own polls (10 per second) do not count
//! in the target database's transaction counters; it falls back to the
//! target database. It shows as `scalelab-probe` in `pg_stat_activity`.

use crate::url::{Engine, SqlUrl};
use crate::{mysql, pg};
use mysql_async::prelude::Queryable;
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::time::Duration;

/// The `application_name` of the probe's PostgreSQL connection.
pub const PROBE_APPLICATION_NAME: &str = "scalelab-probe";

/// What one query returned, every value as text (SQL NULL is `None`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TextRows {
    /// Column names, in order (empty when no row came back from MySQL).
    pub columns: Vec<String>,
    /// One entry per row, one value per column.
    pub rows: Vec<Vec<Option<String>>>,
}

impl TextRows {
    /// The rows as `(column, value)` pairs, for name-based parsers.
    pub fn named(&self) -> Vec<Vec<(&str, Option<&str>)>> {
        self.rows.iter().map(|r| self.columns.iter().map(String::as_str).zip(r.iter().map(|v| v.as_deref())).collect()).collect()
    }
}

enum Conn {
    Pg(tokio_postgres::Client),
    My(mysql_async::Conn),
    Closed,
}

/// A monitoring connection with its own single-threaded runtime, used from
/// one probe thread; every query is bounded by the connect timeout.
pub struct Monitor {
    rt: tokio::runtime::Runtime,
    conn: Conn,
    timeout: Duration,
    database: String,
}

impl Monitor {
    /// Opens the connection (see the module doc for which database).
    pub fn connect(url: &SqlUrl, timeout: Duration) -> Result<Monitor, Failure> {
        let rt = crate::runtime();
        let conn = rt.block_on(async {
            match url.engine {
                Engine::Postgres => {
                    let mut maintenance = url.clone();
                    maintenance.database = "postgres".into();
                    match pg::connect_as(&maintenance, timeout, PROBE_APPLICATION_NAME).await {
                        Ok(c) => Ok(Conn::Pg(c)),
                        Err(_) => pg::connect_as(url, timeout, PROBE_APPLICATION_NAME).await.map(Conn::Pg),
                    }
                }
                Engine::Mysql => mysql::connect_probe(url, timeout).await.map(Conn::My),
            }
        })?;
        Ok(Monitor { rt, conn, timeout, database: url.database.clone() })
    }

    /// Opens the connection to the target URL's own database (PostgreSQL:
    /// not the maintenance one), where its relation names resolve: for a
    /// one-off look at its locks (`watch --trigger`).
    pub fn connect_target(url: &SqlUrl, timeout: Duration) -> Result<Monitor, Failure> {
        if url.engine == Engine::Mysql {
            return Monitor::connect(url, timeout);
        }
        let rt = crate::runtime();
        let conn = rt.block_on(pg::connect_as(url, timeout, PROBE_APPLICATION_NAME)).map(Conn::Pg)?;
        Ok(Monitor { rt, conn, timeout, database: url.database.clone() })
    }

    /// The server protocol.
    pub fn engine(&self) -> Engine {
        match self.conn {
            Conn::Pg(_) => Engine::Postgres,
            Conn::My(_) | Conn::Closed => Engine::Mysql,
        }
    }

    /// The database of the target URL (the one the load runs in).
    pub fn target_database(&self) -> &str {
        &self.database
    }

    /// Runs one statement (simple/text protocol) and returns its rows as text.
    /// An error, or no answer within the timeout, is a [`Failure`]; after a
    /// connection-class failure the monitor is unusable.
    pub fn query(&mut self, sql: &str) -> Result<TextRows, Failure> {
        let timeout = self.timeout;
        let conn = &mut self.conn;
        self.rt.block_on(async move {
            let work = async {
                match conn {
                    Conn::Pg(c) => {
                        let msgs = c.simple_query(sql).await.map_err(|e| pg::classify(&e))?;
                        let mut out = TextRows::default();
                        for m in msgs {
                            if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
                                if out.columns.is_empty() {
                                    out.columns = r.columns().iter().map(|c| c.name().to_string()).collect();
                                }
                                out.rows.push((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect());
                            }
                        }
                        Ok(out)
                    }
                    Conn::My(c) => {
                        let rows: Vec<mysql_async::Row> = c.query(sql).await.map_err(|e| mysql::classify(&e))?;
                        let mut out = TextRows::default();
                        for r in rows {
                            if out.columns.is_empty() {
                                out.columns = r.columns_ref().iter().map(|c| c.name_str().into_owned()).collect();
                            }
                            out.rows.push(
                                r.unwrap()
                                    .into_iter()
                                    .map(|v| match v {
                                        mysql_async::Value::NULL => None,
                                        mysql_async::Value::Bytes(b) => Some(String::from_utf8_lossy(&b).into_owned()),
                                        other => Some(other.as_sql(true)),
                                    })
                                    .collect(),
                            );
                        }
                        Ok(out)
                    }
                    Conn::Closed => Err(Failure::new(ErrorClass::ConnectionLost, "the probe connection is closed")),
                }
            };
            match tokio::time::timeout(timeout, work).await {
                Ok(r) => r,
                Err(_) => Err(Failure::new(ErrorClass::ReadTimeout, format!("no answer within {:.1}s", timeout.as_secs_f64()))),
            }
        })
    }
}

impl Drop for Monitor {
    /// Says goodbye to a MySQL server (COM_QUIT), so the probe does not show
    /// as an aborted client; PostgreSQL's connection task ends with the runtime.
    fn drop(&mut self) {
        if let Conn::My(c) = std::mem::replace(&mut self.conn, Conn::Closed) {
            let _ = self.rt.block_on(async { tokio::time::timeout(Duration::from_secs(1), c.disconnect()).await });
        }
    }
}
