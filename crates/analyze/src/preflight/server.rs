//! Judgements of the server, the database and the target.

use super::check::{judge, ok, unavailable, warn};
use scalelab_core::preflight::{Check, DbSettings, PreflightFacts, PreflightPlan};

fn mib(b: u64) -> String {
    format!("{:.0} MiB", b as f64 / 1048576.0)
}

pub fn checks(f: &PreflightFacts, plan: &PreflightPlan, out: &mut Vec<Check>) {
    out.push(judge(
        "server.workers",
        &f.workers,
        "an nginx with fewer worker processes than CPUs can keep only that many cores busy; Apache serves each connection with a process (prefork) or a thread (worker, event) and starts more only as clients arrive (at most 32 processes a second): until it has one per client the steps measure its spawning",
        "nginx: `worker_processes auto;`; Apache: start them before the run, StartServers and MinSpareServers (prefork) or MinSpareThreads (worker, event) at least the planned clients, with MaxRequestWorkers and ServerLimit above them",
        |w| {
            let cpus = f.logical_cpus.as_ref().copied().unwrap_or(1);
            if w.server == "nginx" {
                return (w.workers < cpus, format!("nginx with {} worker process(es) on {cpus} CPU(s)", w.workers));
            }
            let clients = plan.max_concurrency;
            (
                w.threads < clients,
                format!("{} with {} worker process(es), {} thread(s) serving, for {clients} client(s)", w.server, w.workers, w.threads),
            )
        },
    ));
    // A database target, or a database read beside another (`--db-probe`).
    if plan.target.kind().capabilities().db_probe || f.db.is_ok() {
        database(f, out);
    }
    let lo = plan.target.is_loopback();
    let network = match (&plan.client_net, lo) {
        (Some(spec), _) => format!("loopback through an emulated client network ({spec}): the wire is emulated, not a NIC"),
        (None, true) => "loopback: no NIC, no wire; client and server share this machine".into(),
        (None, false) => format!("over the network{}", f.route.as_ref().map(|r| format!(" via {}", r.interface)).unwrap_or_default()),
    };
    out.push(ok("target.network", network, "loopback results have no network cost and are not comparable with clients over a network"));
    let https = plan.target.kind().capabilities().tls;
    let tls_why = "with TLS each request pays encryption, and each new connection a handshake that can cost more than the request";
    let tls_text = if https { "TLS (https)" } else { "no TLS" };
    if https && !plan.keepalive {
        out.push(warn(
            "target.tls",
            format!("{tls_text}, a new connection per request"),
            tls_why,
            "use keep-alive, or read the result as TLS handshakes per second",
        ));
    } else {
        out.push(ok("target.tls", tls_text.into(), tls_why));
    }
    out.push(judge(
        "target.server",
        &f.server_version,
        "a result belongs to one server version: record it to compare like with like",
        "",
        |v| (false, v.clone()),
    ));
}

fn database(f: &PreflightFacts, out: &mut Vec<Check>) {
    let why_dur = "a server that does not wait for its log to reach the disk commits far faster than a durable one: the results are incomparable with a durable server";
    let why_buf = "a dataset larger than the database's cache is read from the OS cache or the disk: the first steps warm the cache and the curve measures that";
    let s = match &f.db {
        Ok(s) => s,
        Err(e) => {
            out.push(unavailable("db.settings", e, "database settings decide durability and caching"));
            return;
        }
    };
    match s {
        DbSettings::Postgres { fsync, synchronous_commit, shared_buffers_bytes, database_bytes } => {
            let off = |v: &Option<bool>| *v == Some(false);
            let sync_off = synchronous_commit.as_deref().is_some_and(|v| v == "off" || v == "local");
            let figure = format!(
                "fsync {}, synchronous_commit {}",
                fsync.map_or("?", |v| if v { "on" } else { "off" }),
                synchronous_commit.as_deref().unwrap_or("?")
            );
            if off(fsync) || sync_off {
                out.push(warn("db.durability", figure, why_dur, "`ALTER SYSTEM SET fsync = on; ALTER SYSTEM SET synchronous_commit = on;` then reload, or say in the result that durability was off"));
            } else if fsync.is_none() && synchronous_commit.is_none() {
                out.push(unavailable("db.durability", "pg_settings returned neither fsync nor synchronous_commit", why_dur));
            } else {
                out.push(ok("db.durability", figure, why_dur));
            }
            out.push(match (shared_buffers_bytes, database_bytes) {
                (Some(b), Some(d)) if d > b => warn(
                    "db.buffer",
                    format!("shared_buffers {} < database {}", mib(*b), mib(*d)),
                    why_buf,
                    "raise shared_buffers (about a quarter of RAM), or warm the cache before the run (pg_prewarm)",
                ),
                (Some(b), Some(d)) => ok("db.buffer", format!("shared_buffers {} >= database {}", mib(*b), mib(*d)), why_buf),
                _ => unavailable("db.buffer", "shared_buffers or the database size could not be read", why_buf),
            });
        }
        DbSettings::Mysql { flush_log_at_trx_commit, buffer_pool_bytes, innodb_bytes, query_cache, external_locking } => {
            out.push(match flush_log_at_trx_commit {
                Some(1) => ok("db.durability", "innodb_flush_log_at_trx_commit 1".into(), why_dur),
                Some(v) => warn(
                    "db.durability",
                    format!("innodb_flush_log_at_trx_commit {v} (the log is flushed about once a second, not at each commit)"),
                    why_dur,
                    "`SET GLOBAL innodb_flush_log_at_trx_commit = 1`, or say in the result that durability was off",
                ),
                None => unavailable("db.durability", "innodb_flush_log_at_trx_commit not found (InnoDB disabled?)", why_dur),
            });
            out.push(match (buffer_pool_bytes, innodb_bytes) {
                (Some(b), Some(d)) if d > b => warn(
                    "db.buffer",
                    format!("innodb_buffer_pool_size {} < InnoDB data {}", mib(*b), mib(*d)),
                    why_buf,
                    "raise innodb_buffer_pool_size above the dataset (restart on MariaDB < 10.2), or warm it before the run",
                ),
                (Some(b), Some(d)) => ok("db.buffer", format!("innodb_buffer_pool_size {} >= InnoDB data {}", mib(*b), mib(*d)), why_buf),
                _ => unavailable("db.buffer", "the buffer pool size or the data size could not be read", why_buf),
            });
            let why_qc = "the query cache serves repeated SELECTs from memory behind one global mutex: it measures the cache (and its lock), not the engine";
            out.push(match query_cache {
                None => ok("db.query_cache", "no query cache (MySQL 8)".into(), why_qc),
                Some((t, size)) if *size > 0 && !matches!(t.to_ascii_uppercase().as_str(), "OFF" | "0") => warn(
                    "db.query_cache",
                    format!("query_cache_type {t}, query_cache_size {}", mib(*size)),
                    why_qc,
                    "`SET GLOBAL query_cache_type = OFF; SET GLOBAL query_cache_size = 0;`",
                ),
                Some((t, size)) => ok("db.query_cache", format!("query_cache_type {t}, query_cache_size {}", mib(*size)), why_qc),
            });
            let why_lock =
                "external locking makes MyISAM take file locks (fcntl) on every table access, a kernel round trip that serializes readers";
            out.push(match external_locking {
                Some(true) => warn(
                    "db.external_locking",
                    "external locking on (skip_external_locking OFF)".into(),
                    why_lock,
                    "start mysqld with --skip-external-locking (the default)",
                ),
                Some(false) => ok("db.external_locking", "external locking off".into(), why_lock),
                None => unavailable("db.external_locking", "skip_external_locking not found", why_lock),
            });
        }
    }
}
