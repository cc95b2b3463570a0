//! The load of a sweep, from its arguments: the HTTP version and streams,
//! the HTTP request set (a URL or a URL file), the SQL workload and the
//! Redis commands, each checked before anything starts.

use super::SqlPlan;
use crate::args::SweepArgs;
use crate::error::bad;
use scalelab_core::{parse_duration, Target, TargetKind};
use scalelab_drive::http::{parse_url_file, HttpConfig, RequestSpec, StatusMatch};
use scalelab_drive::http2::{HttpVersion, MAX_STREAMS};
use scalelab_drive::redis::{RedisConfig, RedisWorkload};
use scalelab_drive::sql::workload::parse_workload_file;
use scalelab_drive::sql::SqlUrl;
use scalelab_wire::resp::RedisUrl;
use std::path::Path;
use std::time::Duration;

/// `--http` and `--streams`, checked against the target and the other
/// options: the HTTP version asked (an h2c:// target's is 2; auto is 1.1
/// where HTTP/2 cannot serve: --no-keepalive) and the streams per
/// connection (1 without HTTP/2). Load agents speak either.
pub(super) fn http_version(a: &SweepArgs, kind: TargetKind) -> anyhow::Result<(HttpVersion, u32)> {
    let given = a.http.as_deref().map(HttpVersion::parse).transpose().map_err(bad)?;
    let version = match (kind, given) {
        (TargetKind::H2c, Some(HttpVersion::Http11)) => {
            return Err(bad("--http 1.1 does not apply to an h2c:// target (HTTP/2 by prior knowledge): give its http:// URL"))
        }
        (TargetKind::H2c, _) => HttpVersion::Http2,
        (_, Some(v)) => v,
        (_, None) if a.no_keepalive => HttpVersion::Http11,
        (_, None) => HttpVersion::Auto,
    };
    let streams = a.streams.unwrap_or(1);
    if !(1..=MAX_STREAMS).contains(&streams) {
        return Err(bad(format!("--streams must be 1 to {MAX_STREAMS} streams per connection")));
    }
    if version == HttpVersion::Http2 && a.no_keepalive {
        return Err(bad(
            "--no-keepalive does not apply to HTTP/2 (its connections stay open and carry the streams): drop it, or give --http 1.1",
        ));
    }
    let h2_possible = match version {
        HttpVersion::Http2 => true,
        HttpVersion::Http11 => false,
        HttpVersion::Auto => kind == TargetKind::Https,
    };
    if streams > 1 && !h2_possible {
        return Err(bad(match (version, a.no_keepalive) {
            (_, true) => "--streams needs HTTP/2, whose connections stay open: drop --streams or --no-keepalive",
            (HttpVersion::Http11, _) if given.is_some() => "--streams needs HTTP/2: drop it, or drop --http 1.1",
            _ => "--streams needs HTTP/2, which an http:// target speaks only when asked: give --http 2 (h2c, prior knowledge) or an h2c:// URL",
        }));
    }
    Ok((version, streams))
}

/// The HTTP request set: one URL (or `--url-file`'s), headers, body, timeout.
pub(super) fn http_config(a: &SweepArgs, url: &str) -> anyhow::Result<HttpConfig> {
    let requests = match &a.url_file {
        Some(path) => {
            let text = read_url_file(path)?;
            parse_url_file(&path.display().to_string(), &text).map_err(|e| bad(e.to_string()))?
        }
        None => vec![RequestSpec { method: a.method.as_deref().unwrap_or("GET").to_ascii_uppercase(), url: url.to_string(), weight: 1 }],
    };
    let mut headers = Vec::new();
    for h in &a.headers {
        let (k, v) = h.split_once(':').ok_or_else(|| bad(format!("invalid header '{h}': use 'Name: value'")))?;
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    scalelab_drive::http::check_headers(&headers).map_err(|e| bad(e.to_string()))?;
    for r in &requests {
        scalelab_drive::http::check_method(&r.method).map_err(|e| bad(e.to_string()))?;
    }
    let body = match (&a.body, &a.body_file) {
        (Some(b), _) => Some(b.clone().into_bytes()),
        (None, Some(p)) => {
            Some(scalelab_probe::read::read_user_file(p, MAX_BODY_BYTES).map_err(|e| bad(format!("--body-file {}: {e}", p.display())))?)
        }
        (None, None) => None,
    };
    scalelab_drive::http::check_request_headers(&headers, body.as_deref()).map_err(|e| bad(e.to_string()))?;
    let timeout = parse_duration(&a.timeout).map_err(|e| bad(format!("--timeout: {e}")))?;
    if timeout.is_zero() {
        return Err(bad("--timeout must be above 0"));
    }
    Ok(HttpConfig {
        requests,
        headers,
        body,
        keepalive: !a.no_keepalive,
        timeout,
        connect_timeout: timeout.min(Duration::from_secs(5)),
        expect: StatusMatch::parse(&a.expect_status).map_err(|e| bad(e.to_string()))?,
        insecure: a.insecure,
        source_addrs: a.source_address.clone(),
    })
}

/// A SQL target's URL, workload choice and timeout (the workload file read
/// and parsed here; the connection comes later).
pub(super) fn sql_plan(a: &SweepArgs, target: &Target) -> anyhow::Result<SqlPlan> {
    let url = SqlUrl::parse(target.as_given()).map_err(bad)?;
    let file = match &a.workload_file {
        Some(path) => {
            // A regular file of at most 16 MiB, as every input file: /dev/zero or a fifo is refused.
            let bytes = scalelab_probe::read::read_user_file(path, 16 << 20)
                .map_err(|e| bad(format!("--workload-file {}: {e}", path.display())))?;
            let text = String::from_utf8(bytes).map_err(|_| bad(format!("--workload-file {}: not UTF-8 text", path.display())))?;
            Some(parse_workload_file(&path.display().to_string(), &text).map_err(|e| bad(e.to_string()))?)
        }
        None => None,
    };
    if file.is_none() && a.workload.is_none() {
        return Err(bad(
            "a SQL target needs --workload NAME (e.g. point-select, pgbench-select; see docs/workloads.md) or --workload-file FILE",
        ));
    }
    Ok(SqlPlan { url, builtin: a.workload.clone(), file, prepare: !a.no_prepare, timeout: connect_timeout(a)? })
}

/// The largest keyspace a sweep fills or spreads over (a fill of 100
/// million 32-byte values is about 10 GB of Redis memory).
const MAX_KEYSPACE: u64 = 100_000_000;

/// A Redis target's load: URL, workload, keyspace, value size, pipeline.
pub(super) fn redis_config(a: &SweepArgs, target: &Target) -> anyhow::Result<RedisConfig> {
    let url = RedisUrl::parse(target.as_given()).map_err(bad)?;
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
    Ok(RedisConfig { url, workload, keyspace, value_size, pipeline, connect_timeout: connect_timeout(a)? })
}

/// `--timeout` as the connect and preflight timeout of a database or
/// Redis target (at most 10 s).
fn connect_timeout(a: &SweepArgs) -> anyhow::Result<Duration> {
    Ok(parse_duration(&a.timeout).map_err(|e| bad(format!("--timeout: {e}")))?.min(Duration::from_secs(10)))
}

/// The largest `--body-file` read: it is held in memory and sent whole.
const MAX_BODY_BYTES: u64 = 64 << 20;

/// The largest `--url-file` read (about 100,000 URLs).
const MAX_URL_FILE_BYTES: u64 = 16 << 20;

/// `--url-file` as text: a regular file of bounded size (a device was read
/// until memory ran out, a fifo hung), in UTF-8.
fn read_url_file(path: &Path) -> anyhow::Result<String> {
    let fail = |e: String| bad(format!("--url-file {}: {e}", path.display()));
    let bytes = scalelab_probe::read::read_user_file(path, MAX_URL_FILE_BYTES).map_err(fail)?;
    String::from_utf8(bytes).map_err(|e| fail(format!("not UTF-8 text ({e})")))
}

/// The target of a URL file given without a positional target: the origin
/// (`scheme://host:port/`) of its URLs, which share one (the HTTP driver
/// refuses mixed hosts). Without it the run would be recorded as the
/// specimen's and observe the idle specimen instead of the server.
pub(super) fn url_file_target(path: &Path) -> anyhow::Result<String> {
    let text = read_url_file(path)?;
    let requests = parse_url_file(&path.display().to_string(), &text).map_err(|e| bad(e.to_string()))?;
    let first = requests.first().ok_or_else(|| bad(format!("--url-file {}: no URL in the file", path.display())))?;
    let target = Target::parse(&first.url).map_err(|e| bad(format!("--url-file {}: {e}", path.display())))?;
    // Credentials stay in the file's URLs (sent from there), not in the target's name.
    Ok(format!("{}/", target.origin()))
}
