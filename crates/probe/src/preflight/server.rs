//! The server's side of the preflight: worker processes of nginx or Apache
//! (from the process tree), and the database settings that change what a
//! benchmark measures (through the probe's own monitoring connection).

use super::files::text;
use crate::Roots;
use scalelab_core::preflight::{DbSettings, Reading, Workers};
use scalelab_wire::monitor::Monitor;
use scalelab_wire::{Engine, SqlUrl};
use std::time::Duration;

/// Worker processes of an nginx or Apache master: its children with the
/// same program name (nginx: only `worker process`es, not the cache
/// manager or loader).
pub fn workers(roots: &Roots, pid: u32) -> Reading<Workers> {
    let comm = text(&roots.proc.join(format!("{pid}/comm")))?;
    if !matches!(comm.as_str(), "nginx" | "apache2" | "httpd") {
        return Err(format!("the server process is {comm:?}, not nginx or Apache: no worker processes to count"));
    }
    let children = crate::tree::descendants(&roots.proc, pid).map_err(|e| format!("cannot list {}: {e}", roots.proc.display()))?;
    let workers: Vec<u32> = children
        .into_iter()
        .filter(|c| {
            let cmdline = std::fs::read(roots.proc.join(format!("{c}/cmdline"))).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline);
            text(&roots.proc.join(format!("{c}/comm"))).is_ok_and(|n| n == comm) && (comm != "nginx" || cmdline.contains("worker process"))
        })
        .collect();
    // A process whose task dir cannot be read (gone since) counts as one thread.
    let threads =
        workers.iter().map(|w| std::fs::read_dir(roots.proc.join(format!("{w}/task"))).map_or(1, |d| d.count().max(1) as u32)).sum();
    Ok(Workers { server: comm, workers: workers.len() as u32, threads })
}

/// A size setting in bytes: `shared_buffers` is in units of its `unit` ("8kB").
fn pg_bytes(setting: &str, unit: Option<&str>) -> Option<u64> {
    let n: u64 = setting.parse().ok()?;
    let unit = unit.unwrap_or("");
    let digits: String = unit.chars().take_while(|c| c.is_ascii_digit()).collect();
    let times: u64 = if digits.is_empty() { 1 } else { digits.parse().ok()? };
    let scale = match &unit[digits.len()..] {
        "" | "B" => 1,
        "kB" => 1024,
        "MB" => 1 << 20,
        "GB" => 1 << 30,
        _ => return None,
    };
    Some(n * times * scale)
}

/// PostgreSQL settings from `(name, setting, unit)` rows of `pg_settings`.
pub fn pg_settings(rows: &[(String, String, Option<String>)], database_bytes: Option<u64>) -> DbSettings {
    let get = |name: &str| rows.iter().find(|r| r.0 == name);
    DbSettings::Postgres {
        fsync: get("fsync").map(|r| r.1 == "on"),
        synchronous_commit: get("synchronous_commit").map(|r| r.1.clone()),
        shared_buffers_bytes: get("shared_buffers").and_then(|r| pg_bytes(&r.1, r.2.as_deref())),
        database_bytes,
    }
}

/// MySQL settings from `SHOW GLOBAL VARIABLES` rows.
pub fn mysql_settings(vars: &[(String, String)], innodb_bytes: Option<u64>) -> DbSettings {
    let get = |name: &str| vars.iter().find(|v| v.0.eq_ignore_ascii_case(name)).map(|v| v.1.as_str());
    let query_cache = match (get("query_cache_type"), get("query_cache_size").and_then(|s| s.parse().ok())) {
        (Some(t), Some(size)) => Some((t.to_string(), size)),
        _ => None,
    };
    DbSettings::Mysql {
        flush_log_at_trx_commit: get("innodb_flush_log_at_trx_commit").and_then(|s| s.parse().ok()),
        buffer_pool_bytes: get("innodb_buffer_pool_size").and_then(|s| s.parse().ok()),
        innodb_bytes,
        query_cache,
        external_locking: get("skip_external_locking").map(|s| s.eq_ignore_ascii_case("OFF")),
    }
}

fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

/// Reads the settings through a monitoring connection of its own.
pub fn db_settings(url: &SqlUrl, timeout: Duration) -> Reading<DbSettings> {
    let mut m = Monitor::connect(url, timeout).map_err(|f| format!("cannot connect to {}: {}", url.redacted(), f.message))?;
    let db = literal(m.target_database());
    let q = |m: &mut Monitor, sql: &str| m.query(sql).map_err(|f| format!("{}: {}", url.redacted(), f.message));
    match m.engine() {
        Engine::Postgres => {
            let rows =
                q(&mut m, "SELECT name, setting, unit FROM pg_settings WHERE name IN ('fsync','synchronous_commit','shared_buffers')")?;
            let rows: Vec<_> = rows
                .rows
                .into_iter()
                .filter_map(|r| Some((r.first()?.clone()?, r.get(1)?.clone()?, r.get(2).cloned().flatten())))
                .collect();
            let size = q(&mut m, &format!("SELECT pg_database_size({db})")).ok();
            let size = size.and_then(|s| s.rows.first()?.first()?.as_deref()?.parse().ok());
            Ok(pg_settings(&rows, size))
        }
        Engine::Mysql => {
            let rows = q(
                &mut m,
                "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('innodb_flush_log_at_trx_commit','innodb_buffer_pool_size','query_cache_type','query_cache_size','skip_external_locking')",
            )?;
            let vars: Vec<_> = rows.rows.into_iter().filter_map(|r| Some((r.first()?.clone()?, r.get(1)?.clone()?))).collect();
            let size = q(
                &mut m,
                &format!("SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.tables WHERE table_schema = {db} AND engine = 'InnoDB'"),
            )
            .ok();
            let size = size.and_then(|s| s.rows.first()?.first()?.as_deref()?.parse().ok());
            Ok(mysql_settings(&vars, size))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_units() {
        assert_eq!(pg_bytes("16384", Some("8kB")), Some(128 << 20));
        assert_eq!(pg_bytes("4", Some("MB")), Some(4 << 20));
        assert_eq!(pg_bytes("x", None), None);
    }
}
