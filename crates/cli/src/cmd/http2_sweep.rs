//! A sweep of an HTTP target spoken as HTTP/2: which version the planned
//! load gets (`--http`, and under auto an `https://` server's choice by
//! ALPN), then the HTTP/2 driver with its preflight, the server's stream
//! limit and what the run records (`http_protocol`, `streams`).

use super::plan::SweepPlan;
use super::prepared::Prepared;
use crate::error::bad;
use scalelab_core::TargetKind;
use scalelab_drive::http::HttpConfig;
use scalelab_drive::http2::{server_offers_h2, H2Driver, HttpVersion};
use std::sync::Arc;

/// Whether the planned HTTP load is spoken as HTTP/2: `--http 2` and
/// h2c:// say so, `--http 1.1` and the specimen say not, auto asks an
/// `https://` server by ALPN (one TLS handshake, no request). Under auto
/// a server that does not choose h2 is loaded with HTTP/1.1, unless
/// `--streams` asked for more than one stream (refused, one line).
pub fn speaks_h2(plan: &SweepPlan, config: &HttpConfig, version: HttpVersion, streams: u32) -> anyhow::Result<bool> {
    if plan.specimen.is_some() {
        return Ok(false);
    }
    match version {
        HttpVersion::Http11 => Ok(false),
        HttpVersion::Http2 => Ok(true),
        HttpVersion::Auto => {
            let name = plan.target.redacted();
            let h2 = server_offers_h2(config).map_err(|f| bad(format!("cannot reach {name}: {}", f.message)))?;
            if !h2 && streams > 1 {
                return Err(bad(format!(
                    "{name} did not choose HTTP/2 by ALPN, and --streams needs it: drop --streams (HTTP/1.1), or check the server's http2 setting"
                )));
            }
            Ok(h2)
        }
    }
}

/// Builds the HTTP/2 driver (h2c on `http://`, h2 by ALPN on `https://`)
/// and sends the preflight request; warns when the server allows fewer
/// streams per connection than `--streams`.
pub fn prepare_h2(
    plan: &SweepPlan,
    config: &HttpConfig,
    expect_status: &str,
    version: HttpVersion,
    streams: u32,
) -> anyhow::Result<Prepared<H2Driver>> {
    let driver = H2Driver::new(config, streams).map_err(|e| bad(e.to_string()))?;
    let target_name = plan.target.redacted().to_string();
    let preflight = driver.preflight().map_err(|f| bad(format!("cannot reach {target_name} over HTTP/2: {}", f.message)))?;
    let answer = &preflight.answer;
    if !answer.accepted {
        esayln!(
            "warning: {target_name} answered status {} to the first request, which --expect-status {expect_status} does not accept: such responses count as errors",
            answer.status
        );
    }
    if let Some(max) = preflight.max_streams.filter(|m| streams > *m) {
        esayln!(
            "warning: {target_name} allows {max} concurrent streams per connection (SETTINGS_MAX_CONCURRENT_STREAMS): with --streams {streams}, {} of each connection's clients wait for a stream to end, and the level's concurrency overstates what the server runs at once",
            streams - max
        );
    }
    // An h2c:// target's URLs were planned as http://: shown as given.
    let h2c_target = plan.target.kind() == TargetKind::H2c;
    let shown = |u: &str| {
        let u = scalelab_core::redact_url(u);
        match u.strip_prefix("http://") {
            Some(rest) if h2c_target => format!("h2c://{rest}"),
            _ => u,
        }
    };
    let urls = config.workload_text(shown);
    let per = if streams == 1 { "1 stream per connection".to_string() } else { format!("{streams} streams per connection") };
    let workload = format!("{urls} ({}, {per})", driver.protocol());
    let mut options = serde_json::Map::new();
    // HTTP/2 connections stay open: the keep-alive of HTTP/1.1's terms.
    options.insert("keepalive".into(), true.into());
    options.insert("timeout_s".into(), config.timeout.as_secs_f64().into());
    options.insert("expect_status".into(), expect_status.into());
    options.insert("http".into(), version.name().into());
    options.insert("http_protocol".into(), driver.protocol().into());
    options.insert("streams".into(), streams.into());
    if let Some(max) = preflight.max_streams {
        options.insert("server_max_streams".into(), max.into());
    }
    Ok(Prepared { driver: Arc::new(driver), target_name, workload, server: preflight.answer.server, options, specimen: None })
}
