//! A sweep of a Redis target: the workload and keyspace from the
//! arguments, the server asked what it is, the keyspace filled when the
//! workload reads it and it is missing.

use super::prepared::Prepared;
use crate::args::SweepArgs;
use crate::error::bad;
use scalelab_drive::redis::{fill_keyspace, inspect, RedisConfig, RedisDriver, RedisWorkload};
use scalelab_wire::resp::RedisUrl;
use std::sync::Arc;
use std::time::Duration;

/// The largest keyspace a sweep fills or spreads over (a fill of 100
/// million 32-byte values is about 10 GB of Redis memory).
const MAX_KEYSPACE: u64 = 100_000_000;

/// Checks the Redis options, asks the server what it is, fills the keyspace
/// when needed and builds the driver.
pub fn prepare_redis(a: &SweepArgs, target: &str) -> anyhow::Result<Prepared<RedisDriver>> {
    let url = RedisUrl::parse(target).map_err(bad)?;
    let name = url.redacted.clone();
    let workload = RedisWorkload::parse(a.workload.as_deref().unwrap_or("get")).map_err(|e| bad(format!("--workload: {e}")))?;
    let pipeline = a.pipeline.unwrap_or(1);
    if !(1..=10_000).contains(&pipeline) {
        return Err(bad("--pipeline must be 1 to 10000 commands per round trip"));
    }
    let keyspace = a.keyspace.unwrap_or(10_000);
    if !(1..=MAX_KEYSPACE).contains(&keyspace) {
        return Err(bad(format!("--keyspace must be 1 to {MAX_KEYSPACE} keys")));
    }
    let value_size = a.value_size.unwrap_or(32);
    if value_size > 64 << 20 {
        return Err(bad("--value-size must be at most 67108864 bytes (64 MiB)"));
    }
    let timeout = scalelab_core::parse_duration(&a.timeout).map_err(|e| bad(format!("--timeout: {e}")))?.min(Duration::from_secs(10));
    let server = inspect(&url, timeout).map_err(|f| bad(format!("cannot use {name}: {}", f.message)))?;
    let config = RedisConfig { url, workload, keyspace, value_size, pipeline, connect_timeout: timeout };
    let filled = fill_keyspace(&config).map_err(|f| bad(format!("{name}: filling the keyspace: {}", f.message)))?;
    if filled > 0 && !a.quiet {
        esayln!("prepared {} keys of {value_size} B under scalelab:key: (MSET)", scalelab_core::thousands(filled as f64));
    }
    if scalelab_core::redact_url(target) != target && !a.quiet {
        esayln!("warning: the password in the URL is visible in `ps` for the whole run: prefer a Redis user without one on loopback, or a short-lived password");
    }
    let mut options = serde_json::Map::new();
    options.insert("workload".into(), workload.name().into());
    options.insert("pipeline".into(), pipeline.into());
    options.insert("keyspace".into(), keyspace.into());
    options.insert("value_size".into(), value_size.into());
    Ok(Prepared {
        workload: config.describe(),
        driver: Arc::new(RedisDriver::new(config)),
        target_name: name,
        server: Some(server),
        options,
        specimen: None,
        sql_url: None,
    })
}
