//! SQL targets of `scalelab sweep`: parse the URL and workload, connect once
//! (preflight: credentials, database, server version, dataset), check that
//! every statement prepares, and build the [`SqlDriver`].

use super::prepared::Prepared;
use crate::args::SweepArgs;
use crate::error::bad;
use scalelab_drive::sql::workload::{builtin, parse_workload_file};
use scalelab_drive::sql::{inspect, SqlConfig, SqlDriver, SqlUrl};
use std::sync::Arc;
use std::time::Duration;

/// Builds a prepared SQL target; every problem is one clear line (exit 2)
/// before anything is stored.
pub fn prepare_sql(a: &SweepArgs, target: &str) -> anyhow::Result<Prepared<SqlDriver>> {
    let url = SqlUrl::parse(target).map_err(bad)?;
    let name = url.redacted();
    let file_workload = match &a.workload_file {
        Some(path) => {
            // A regular file of at most 16 MiB, as every input file: /dev/zero or a fifo is refused.
            let bytes = scalelab_probe::read::read_user_file(path, 16 << 20)
                .map_err(|e| bad(format!("--workload-file {}: {e}", path.display())))?;
            let text = String::from_utf8(bytes).map_err(|_| bad(format!("--workload-file {}: not UTF-8 text", path.display())))?;
            Some(parse_workload_file(&path.display().to_string(), &text).map_err(|e| bad(e.to_string()))?)
        }
        None => None,
    };
    if file_workload.is_none() && a.workload.is_none() {
        return Err(bad(
            "a SQL target needs --workload NAME (e.g. point-select, pgbench-select; see docs/workloads.md) or --workload-file FILE",
        ));
    }
    let timeout = scalelab_core::parse_duration(&a.timeout).map_err(|e| bad(format!("--timeout: {e}")))?.min(Duration::from_secs(10));
    let info = inspect(&url, timeout).map_err(|f| bad(format!("cannot use {name}: {}", f.message)))?;
    let workload = match file_workload {
        Some(w) => w,
        None => builtin(a.workload.as_deref().unwrap_or_default(), &info.shape).map_err(bad)?,
    };
    let description = workload.describe();
    let mut options = serde_json::Map::new();
    options.insert("workload".into(), workload.name.clone().into());
    let unit = if workload.units.iter().any(|u| u.transaction) { "tx/s" } else { "q/s" };
    options.insert("throughput_unit".into(), unit.into());
    options.insert("prepared_statements".into(), (!a.no_prepare).into());
    let sql_url = Some(url.clone());
    let config = SqlConfig { url, workload, prepare: !a.no_prepare, connect_timeout: timeout };
    let driver = SqlDriver::new(config);
    driver.check_statements().map_err(|f| bad(format!("{name}: {}", f.message)))?;
    // A password in the URL is in the command line: `ps` shows it to every
    // user for the whole run. Said once the target is usable (bad input stays
    // one line); the run goes on, it is the user's call.
    if scalelab_core::redact_url(target) != target && !a.quiet {
        esayln!(
            "warning: the password in the URL is visible in `ps` for the whole run: use --password-file, PGPASSWORD or ~/.pgpass (PostgreSQL), MYSQL_PWD or ~/.my.cnf (MySQL)"
        );
    }
    Ok(Prepared {
        driver: Arc::new(driver),
        target_name: name,
        workload: description,
        server: Some(info.server),
        options,
        specimen: None,
        sql_url,
    })
}
