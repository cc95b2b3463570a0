//! A sweep of a Redis target: with its workload and keyspace planned
//! (`plan.rs`), the server asked what it is and the keyspace filled when
//! the workload reads it and it is missing.

use super::prepared::Prepared;
use crate::error::bad;
use scalelab_core::Target;
use scalelab_drive::redis::{fill_keyspace, inspect, RedisConfig, RedisDriver};
use std::sync::Arc;

/// Asks the planned Redis target what it is, fills the keyspace when the
/// workload reads it and it is missing, and builds the driver.
pub fn prepare_redis(config: &RedisConfig, target: &Target, quiet: bool) -> anyhow::Result<Prepared<RedisDriver>> {
    let config = config.clone();
    let name = config.url.redacted.clone();
    let server = inspect(&config.url, config.connect_timeout).map_err(|f| bad(format!("cannot use {name}: {}", f.message)))?;
    let filled = fill_keyspace(&config).map_err(|f| bad(format!("{name}: filling the keyspace: {}", f.message)))?;
    if filled > 0 && !quiet {
        esayln!("prepared {} keys of {} B under scalelab:key: (MSET)", scalelab_core::thousands(filled as f64), config.value_size);
    }
    if target.redacted() != target.as_given() && !quiet {
        esayln!("warning: the password in the URL is visible in `ps` for the whole run: prefer a Redis user without one on loopback, or a short-lived password");
    }
    let mut options = serde_json::Map::new();
    options.insert("workload".into(), config.workload.name().into());
    options.insert("pipeline".into(), config.pipeline.into());
    options.insert("keyspace".into(), config.keyspace.into());
    options.insert("value_size".into(), config.value_size.into());
    Ok(Prepared {
        workload: config.describe(),
        target_name: name,
        driver: Arc::new(RedisDriver::new(config)),
        server: Some(server),
        options,
        specimen: None,
    })
}
