//! The SQL drivers: PostgreSQL (`postgres://`) and MySQL/MariaDB
//! (`mysql://`). The load clients run on hand-written protocol clients
//! (`pgwire`, `mywire`) over `stream`; tokio-postgres and mysql_async serve
//! `prepare`, the preflight, inspection and the telemetry probe.
//!
//! Each virtual client owns one connection, opened in [`Client::connect`]
//! before the window, with every statement of the workload prepared on it
//! (unless `prepare` is off: then statements go as text with literal values).
//! One [`Client::call`] is one unit of the workload (a statement or a
//! BEGIN … COMMIT transaction) and returns the statements it ran.
//!
//! - [`workload`]: units, weights, parameter generators, built-in workloads.
//! - [`dataset`]: `prepare`: the sbtest and pgbench tables, loaded fast.
//! - [`monitor`]: one extra connection for the telemetry probe (status and
//!   activity views as text rows).

pub mod dataset;
pub mod monitor;
mod mysql;
mod mywire;
mod pg;
mod pgwire;
pub(crate) mod stream;
mod tls;
mod unit;
pub mod workload;

use crate::driver::{Client, ClientCtx, Driver};
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::sync::Arc;
use std::time::Duration;
use workload::{compile, DatasetShape, GenState, Rng, Value, Workload};

/// Which server protocol a URL speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// PostgreSQL.
    Postgres,
    /// MySQL or MariaDB.
    Mysql,
}

/// A parsed `postgres://` or `mysql://` URL.
#[derive(Clone, Debug)]
pub struct SqlUrl {
    /// The protocol.
    pub engine: Engine,
    /// User name (postgres / root when absent).
    pub user: String,
    /// Password, if any (never recorded).
    pub password: Option<String>,
    /// Host name or address.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Database name.
    pub database: String,
    /// Unix socket (MySQL `?socket=/path`) or socket directory (PostgreSQL `?host=/dir`).
    pub socket: Option<String>,
    /// TLS as the URL asks for it (`sslmode=` / `ssl-mode=`); off by default.
    pub tls: SqlTls,
}

/// Whether and how a SQL connection is encrypted, from the URL.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum SqlTls {
    /// Plain TCP or a unix socket (no option, `sslmode=disable`, `ssl-mode=DISABLED`).
    #[default]
    Off,
    /// Encrypted, the certificate not checked (`sslmode=require`, `ssl-mode=REQUIRED`),
    /// as libpq and the mysql client do for these modes.
    Require,
    /// Encrypted, the certificate checked against `root_cert` (a PEM file:
    /// `sslrootcert=` / `ssl-ca=`) or the Mozilla roots, and the host name
    /// checked (`sslmode=verify-full`, `ssl-mode=VERIFY_IDENTITY`).
    VerifyFull {
        /// PEM file of the trusted root(s); None: the compiled-in Mozilla roots.
        root_cert: Option<String>,
    },
}

impl SqlUrl {
    /// Parses `postgres://user:pass@host:port/db` or `mysql://user:pass@host:port/db[?socket=/path]`.
    pub fn parse(text: &str) -> Result<SqlUrl, String> {
        let url = url::Url::parse(text).map_err(|e| format!("invalid URL '{}': {e}", scalelab_core::redact_url(text)))?;
        let engine = match url.scheme() {
            "postgres" | "postgresql" => Engine::Postgres,
            "mysql" | "mariadb" => Engine::Mysql,
            s => return Err(format!("unsupported scheme '{s}': use postgres:// or mysql://")),
        };
        let decode =
            |s: &str| url::form_urlencoded::parse(format!("x={s}").as_bytes()).next().map(|(_, v)| v.into_owned()).unwrap_or_default();
        let user = match url.username() {
            "" if engine == Engine::Postgres => "postgres".to_string(),
            "" => "root".to_string(),
            u => decode(u),
        };
        let database = url.path().trim_start_matches('/').to_string();
        if database.is_empty() {
            return Err(format!("no database in '{}': add /DBNAME", scalelab_core::redact_url(text)));
        }
        let mut socket = None;
        let (mut mode, mut root_cert) = (None::<String>, None::<String>);
        for (k, v) in url.query_pairs() {
            match (engine, k.as_ref()) {
                (Engine::Mysql, "socket") | (Engine::Postgres, "host") => socket = Some(v.into_owned()),
                (Engine::Postgres, "sslmode") | (Engine::Mysql, "ssl-mode") => mode = Some(v.into_owned()),
                (Engine::Postgres, "sslrootcert") | (Engine::Mysql, "ssl-ca") => root_cert = Some(v.into_owned()),
                _ => {
                    return Err(format!(
                        "unsupported URL option '{k}' (supported: postgres ?host=/socketdir, sslmode=, sslrootcert=; \
                         mysql ?socket=/path, ssl-mode=, ssl-ca=)"
                    ))
                }
            }
        }
        let tls = parse_tls(engine, mode.as_deref(), root_cert)?;
        if tls != SqlTls::Off && socket.is_some() {
            return Err("TLS (sslmode / ssl-mode) is for TCP connections, not with a unix socket: drop one of the two".into());
        }
        Ok(SqlUrl {
            engine,
            user,
            password: url.password().map(decode),
            host: url.host_str().unwrap_or("127.0.0.1").trim_start_matches('[').trim_end_matches(']').to_string(),
            port: url.port().unwrap_or(if engine == Engine::Postgres { 5432 } else { 3306 }),
            database,
            socket,
            tls,
        })
    }

    /// The URL as recorded: never with the password.
    pub fn redacted(&self) -> String {
        let scheme = if self.engine == Engine::Postgres { "postgres" } else { "mysql" };
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        let mut s = format!("{scheme}://{}@{host}:{}/{}", self.user, self.port, self.database);
        if let Some(sock) = &self.socket {
            s.push_str(if self.engine == Engine::Postgres { "?host=" } else { "?socket=" });
            s.push_str(sock);
        }
        let pg = self.engine == Engine::Postgres;
        match &self.tls {
            SqlTls::Off => {}
            SqlTls::Require => s.push_str(if pg { "?sslmode=require" } else { "?ssl-mode=REQUIRED" }),
            SqlTls::VerifyFull { root_cert } => {
                s.push_str(if pg { "?sslmode=verify-full" } else { "?ssl-mode=VERIFY_IDENTITY" });
                if let Some(path) = root_cert {
                    s.push_str(if pg { "&sslrootcert=" } else { "&ssl-ca=" });
                    s.push_str(path);
                }
            }
        }
        s
    }
}

/// Reads `sslmode` (PostgreSQL: disable, require, verify-full) or `ssl-mode`
/// (MySQL: DISABLED, REQUIRED, VERIFY_IDENTITY) and the root certificate
/// option; modes that would silently fall back to plain text (prefer, allow,
/// PREFERRED) or check less than they say (verify-ca, VERIFY_CA) are refused.
fn parse_tls(engine: Engine, mode: Option<&str>, root_cert: Option<String>) -> Result<SqlTls, String> {
    let (opt, ca) = if engine == Engine::Postgres { ("sslmode", "sslrootcert") } else { ("ssl-mode", "ssl-ca") };
    let tls = match (engine, mode.map(str::to_ascii_lowercase).as_deref()) {
        (_, None) | (Engine::Postgres, Some("disable")) | (Engine::Mysql, Some("disabled")) => SqlTls::Off,
        (Engine::Postgres, Some("require")) | (Engine::Mysql, Some("required")) => SqlTls::Require,
        (Engine::Postgres, Some("verify-full")) | (Engine::Mysql, Some("verify_identity")) => SqlTls::VerifyFull { root_cert: None },
        (_, Some(_)) => {
            let supported =
                if engine == Engine::Postgres { "disable, require, verify-full" } else { "DISABLED, REQUIRED, VERIFY_IDENTITY" };
            return Err(format!("unsupported {opt}={} (supported: {supported})", mode.unwrap_or_default()));
        }
    };
    match (tls, root_cert) {
        (SqlTls::VerifyFull { .. }, root_cert) => Ok(SqlTls::VerifyFull { root_cert }),
        (tls, None) => Ok(tls),
        (_, Some(_)) => Err(format!("{ca}= needs {opt}={}", if engine == Engine::Postgres { "verify-full" } else { "VERIFY_IDENTITY" })),
    }
}

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
    fn text(&self, unit: &workload::Unit, values: &[Value], escape_backslash: bool) -> String {
        let mut i = 0;
        let (sql, _) = compile(&self.raw, &unit.params, |_| {
            let v = values[self.order[i]].literal(escape_backslash);
            i += 1;
            v
        });
        sql
    }
}

pub(crate) struct Inner {
    pub config: SqlConfig,
    /// Per unit: its compiled statements.
    pub units: Vec<Vec<Compiled>>,
    /// Per unit: for transaction units, the index of its first statement in
    /// `statement_names` (their latencies are kept one by one).
    timed: Vec<Option<u32>>,
    /// Names of the statements of transaction units, for per-statement latency.
    statement_names: Vec<String>,
    cumulative: Vec<u32>,
    total_weight: u32,
}

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

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime")
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

/// Classifies an I/O error met while connecting.
pub(crate) fn connect_io_class(e: &std::io::Error) -> ErrorClass {
    match e.kind() {
        _ if crate::cpu::is_fd_limit(e) => ErrorClass::FdLimit,
        std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound => ErrorClass::ConnectRefused,
        std::io::ErrorKind::TimedOut => ErrorClass::ConnectTimeout,
        std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::UnexpectedEof => {
            ErrorClass::ConnectionLost
        }
        _ => ErrorClass::Other,
    }
}

/// A failure with the statement at fault appended.
pub(crate) fn with_statement(mut f: Failure, sql: &str) -> Failure {
    f.message = format!("{} (statement: {sql})", f.message);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_redact() {
        let u = SqlUrl::parse("postgres://bob:s%40cret@127.0.0.1:5433/bench").unwrap();
        assert_eq!((u.engine, u.user.as_str(), u.password.as_deref(), u.port), (Engine::Postgres, "bob", Some("s@cret"), 5433));
        assert_eq!(u.redacted(), "postgres://bob@127.0.0.1:5433/bench");
        let m = SqlUrl::parse("mysql://root@localhost/db?socket=/tmp/my.sock").unwrap();
        assert_eq!((m.port, m.socket.as_deref()), (3306, Some("/tmp/my.sock")));
        assert!(!m.redacted().contains("***"));
        assert!(SqlUrl::parse("mysql://root@localhost/").is_err());
        assert!(SqlUrl::parse("mysql://u:pw@h/db?bogus=1").unwrap_err().contains("bogus"));
        assert_eq!(scalelab_core::redact_url("mysql://u:pw@h/db"), "mysql://u:***@h/db");
    }

    #[test]
    fn tls_options_parse_and_bad_combinations_are_refused() {
        let u = SqlUrl::parse("postgres://u@h/db?sslmode=require").unwrap();
        assert_eq!(u.tls, SqlTls::Require);
        assert_eq!(u.redacted(), "postgres://u@h:5432/db?sslmode=require");
        let u = SqlUrl::parse("postgres://u@h/db?sslmode=verify-full&sslrootcert=/ca.pem").unwrap();
        assert_eq!(u.tls, SqlTls::VerifyFull { root_cert: Some("/ca.pem".into()) });
        assert_eq!(SqlUrl::parse("postgres://u@h/db?sslmode=disable").unwrap().tls, SqlTls::Off);
        assert_eq!(SqlUrl::parse("mysql://u@h/db?ssl-mode=REQUIRED").unwrap().tls, SqlTls::Require);
        assert!(SqlUrl::parse("postgres://u@h/db?sslmode=prefer").unwrap_err().contains("unsupported sslmode=prefer"));
        assert!(SqlUrl::parse("mysql://u@h/db?ssl-mode=VERIFY_CA").unwrap_err().contains("VERIFY_IDENTITY"));
        assert!(SqlUrl::parse("postgres://u@h/db?sslmode=require&sslrootcert=/x").unwrap_err().contains("needs sslmode=verify-full"));
        assert!(SqlUrl::parse("postgres://u@h/db?sslmode=require&host=/tmp").unwrap_err().contains("unix socket"));
        assert!(SqlUrl::parse("mysql://u@h/db?sslmode=require").unwrap_err().contains("unsupported URL option 'sslmode'"));
    }
}
