//! The load path's PostgreSQL client (`pgwire`) against a real PostgreSQL 15:
//! authentication by SCRAM-SHA-256 and md5, and its failures, seen through
//! `SqlDriver::check_statements` (which opens one load connection and
//! prepares the workload on it), without the CLI's tokio-postgres preflight.

use scalelab_core::ErrorClass;
use scalelab_drive::sql::workload::parse_workload_file;
use scalelab_drive::sql::{SqlConfig, SqlDriver, SqlUrl};
use scalelab_testkit::postgres::{Postgres, MD5_USER, SCRAM_USER};
use std::time::Duration;

fn check(url: &str, sql: &str) -> Result<(), scalelab_core::result::Failure> {
    let workload = parse_workload_file("t.toml", &format!("[[unit]]\nsql = \"{sql}\"\n")).unwrap();
    let config = SqlConfig { url: SqlUrl::parse(url).unwrap(), workload, prepare: true, connect_timeout: Duration::from_secs(5) };
    SqlDriver::new(config).check_statements()
}

#[test]
fn load_connections_authenticate_and_report_failures() {
    let pg = Postgres::start();
    for role in [SCRAM_USER, MD5_USER] {
        check(&pg.url_as(role), "SELECT 1").unwrap_or_else(|f| panic!("{}: {f:?}", role.0));
        let f = check(&pg.url_as((role.0, "wrong")), "SELECT 1").unwrap_err();
        assert_eq!(f.class, ErrorClass::SqlError, "{f:?}");
        let expect = format!("FATAL: password authentication failed for user \"{}\" (SQLSTATE 28P01)", role.0);
        assert_eq!(f.message, expect);
        let f = check(&format!("postgres://{}@127.0.0.1:{}/bench", role.0, pg.port), "SELECT 1").unwrap_err();
        assert!(f.message.contains("the server asks for a password") && f.message.contains("URL has none"), "{f:?}");
    }
    // Trust, over TCP and over the unix socket; a bad statement names itself.
    check(&pg.url(), "SELECT 1").unwrap();
    check(&format!("{}?host={}", pg.url(), pg.socket_dir().display()), "SELECT 1").unwrap();
    let f = check(&pg.url(), "SELECT nosuch").unwrap_err();
    assert_eq!(f.class, ErrorClass::SqlError);
    assert!(f.message.contains("42703") && f.message.ends_with("(statement: SELECT nosuch)"), "{f:?}");
    // Unknown database, refused port, TLS refused by a server without it.
    let f = check(&pg.url().replace("/bench", "/nosuchdb"), "SELECT 1").unwrap_err();
    assert!(f.message.contains("\"nosuchdb\" does not exist"), "{f:?}");
    let f = check(&format!("postgres://postgres@127.0.0.1:{}/bench", scalelab_testkit::free_port()), "SELECT 1").unwrap_err();
    assert_eq!(f.class, ErrorClass::ConnectRefused, "{f:?}");
    let f = check(&format!("{}?sslmode=require", pg.url()), "SELECT 1").unwrap_err();
    assert!(f.message.contains("the server refused TLS"), "{f:?}");
}
