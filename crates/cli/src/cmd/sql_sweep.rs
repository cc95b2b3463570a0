//! SQL targets of `scalelab sweep`: with the URL and workload planned
//! (`plan.rs`), connect once (preflight: credentials, database, server
//! version, dataset), check that every statement prepares, and build the
//! [`SqlDriver`].

use super::plan::SqlPlan;
use super::prepared::Prepared;
use crate::error::bad;
use scalelab_core::Target;
use scalelab_drive::sql::workload::builtin;
use scalelab_drive::sql::{inspect, SqlConfig, SqlDriver};
use std::sync::Arc;

/// Connects once to the planned SQL target and builds its driver; every
/// problem is one clear line (exit 2) before anything is stored.
pub fn prepare_sql(plan: &SqlPlan, target: &Target, quiet: bool) -> anyhow::Result<Prepared<SqlDriver>> {
    let url = plan.url.clone();
    let name = url.redacted();
    let info = inspect(&url, plan.timeout).map_err(|f| bad(format!("cannot use {name}: {}", f.message)))?;
    let workload = match &plan.file {
        Some(w) => w.clone(),
        None => builtin(plan.builtin.as_deref().unwrap_or_default(), &info.shape).map_err(bad)?,
    };
    let description = workload.describe();
    let mut options = serde_json::Map::new();
    options.insert("workload".into(), workload.name.clone().into());
    let unit = if workload.units.iter().any(|u| u.transaction) { "tx/s" } else { "q/s" };
    options.insert("throughput_unit".into(), unit.into());
    options.insert("prepared_statements".into(), plan.prepare.into());
    let config = SqlConfig { url, workload, prepare: plan.prepare, connect_timeout: plan.timeout };
    let driver = SqlDriver::new(config);
    driver.check_statements().map_err(|f| bad(format!("{name}: {}", f.message)))?;
    // A password in the URL is in the command line: `ps` shows it to every
    // user for the whole run. Said once the target is usable (bad input stays
    // one line); the run goes on, it is the user's call.
    if target.redacted() != target.as_given() && !quiet {
        esayln!(
            "warning: the password in the URL is visible in `ps` for the whole run: use --password-file, PGPASSWORD or ~/.pgpass (PostgreSQL), MYSQL_PWD or ~/.my.cnf (MySQL)"
        );
    }
    Ok(Prepared { driver: Arc::new(driver), target_name: name, workload: description, server: Some(info.server), options, specimen: None })
}
