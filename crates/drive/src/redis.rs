//! Redis as a target (`redis://`): the workloads (`get`, `set`, `mixed`,
//! `incr`, `lpush-lpop`, `hot-key`), the keyspace they touch (filled
//! before the load when it is missing), and the client that sends
//! `--pipeline N` commands per round trip on one connection
//! ([`scalelab_wire::resp`]). A unit of work is one round trip: its
//! statements are its commands, so `queries` counts commands as
//! redis-benchmark does.

use crate::driver::{Client, ClientCtx, Driver};
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use scalelab_wire::resp::{RedisUrl, RespConn};
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

/// What each command does and to which key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RedisWorkload {
    /// `GET` of a random key of the keyspace.
    Get,
    /// `SET` of a random key to a value of `--value-size` bytes.
    Set,
    /// 9 `GET`s to 1 `SET`, random keys.
    Mixed,
    /// `INCR` of a random counter.
    Incr,
    /// `LPUSH` then `LPOP` on a random list (it stays about empty).
    LpushLpop,
    /// `INCR` of one key by every client: the hottest key there is.
    HotKey,
}

impl RedisWorkload {
    /// Every workload, as `--workload` names them.
    pub const ALL: [RedisWorkload; 6] = [
        RedisWorkload::Get,
        RedisWorkload::Set,
        RedisWorkload::Mixed,
        RedisWorkload::Incr,
        RedisWorkload::LpushLpop,
        RedisWorkload::HotKey,
    ];

    /// The name `--workload` takes.
    pub fn name(self) -> &'static str {
        match self {
            RedisWorkload::Get => "get",
            RedisWorkload::Set => "set",
            RedisWorkload::Mixed => "mixed",
            RedisWorkload::Incr => "incr",
            RedisWorkload::LpushLpop => "lpush-lpop",
            RedisWorkload::HotKey => "hot-key",
        }
    }

    /// Parses a `--workload` name; the error lists the names.
    pub fn parse(name: &str) -> Result<RedisWorkload, String> {
        Self::ALL.into_iter().find(|w| w.name() == name).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|w| w.name()).collect();
            format!("unknown Redis workload '{name}': one of {}", names.join(", "))
        })
    }

    /// True when its commands read the keyspace (which must then be filled).
    pub fn reads_keyspace(self) -> bool {
        matches!(self, RedisWorkload::Get | RedisWorkload::Mixed)
    }
}

/// Everything that defines a Redis load; an agent is sent this very
/// struct (and loads the session's target, whatever `url` says).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RedisConfig {
    pub url: RedisUrl,
    pub workload: RedisWorkload,
    /// Keys the random commands spread over.
    pub keyspace: u64,
    /// Bytes of each value written (`SET`, `LPUSH`, the keyspace's fill).
    pub value_size: usize,
    /// Commands per round trip.
    pub pipeline: u32,
    pub connect_timeout: Duration,
}

impl RedisConfig {
    /// The workload in words, for the run's record.
    pub fn describe(&self) -> String {
        let what = match self.workload {
            RedisWorkload::Get => format!("GET of {} keys", self.keyspace),
            RedisWorkload::Set => format!("SET of {} keys, {} B values", self.keyspace, self.value_size),
            RedisWorkload::Mixed => format!("9 GET : 1 SET of {} keys, {} B values", self.keyspace, self.value_size),
            RedisWorkload::Incr => format!("INCR of {} counters", self.keyspace),
            RedisWorkload::LpushLpop => format!("LPUSH + LPOP of {} lists, {} B values", self.keyspace, self.value_size),
            RedisWorkload::HotKey => "INCR of one key by every client".to_string(),
        };
        let pipelined = if self.pipeline > 1 { format!(", {} commands per round trip", self.pipeline) } else { String::new() };
        let resp3 = if self.url.resp3 { " (RESP3)" } else { "" };
        format!("redis {}: {what}{pipelined}{resp3}", self.workload.name())
    }
}

/// The key prefix: the load touches only keys under it.
pub const PREFIX: &str = "scalelab:";

/// Makes Redis clients.
pub struct RedisDriver {
    config: Arc<RedisConfig>,
    value: Arc<Vec<u8>>,
}

impl RedisDriver {
    /// A driver for `config`.
    pub fn new(config: RedisConfig) -> RedisDriver {
        let value = Arc::new(vec![b'x'; config.value_size]);
        RedisDriver { config: Arc::new(config), value }
    }

    /// The configuration it loads with.
    pub fn config(&self) -> &RedisConfig {
        &self.config
    }
}

impl Driver for RedisDriver {
    type Client = RedisClient;

    fn client(&self, ctx: ClientCtx) -> RedisClient {
        RedisClient {
            config: self.config.clone(),
            value: self.value.clone(),
            ctx,
            conn: None,
            connected_once: false,
            reconnects: 0,
            rng: 0x9e37_79b9_7f4a_7c15 ^ (u64::from(ctx.id) + 1).wrapping_mul(0x2545_f491_4f6c_dd1d),
            key: Vec::with_capacity(64),
            push_next: true,
        }
    }
}

/// One connection and its own random keys.
pub struct RedisClient {
    config: Arc<RedisConfig>,
    value: Arc<Vec<u8>>,
    ctx: ClientCtx,
    conn: Option<RespConn>,
    connected_once: bool,
    reconnects: u64,
    rng: u64,
    /// The key of the command being written (reused).
    key: Vec<u8>,
    /// lpush-lpop: the next command is the push.
    push_next: bool,
}

impl RedisClient {
    fn next(&mut self) -> u64 {
        // xorshift64*: cheap and good enough to spread keys.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Writes `scalelab:<kind>:<n>` into the reused key buffer.
    fn key_of(&mut self, kind: &str, n: u64) {
        self.key.clear();
        let _ = write!(self.key, "{PREFIX}{kind}:{n}");
    }

    /// Queues the workload's next command on `conn`.
    fn queue(&mut self, conn: &mut RespConn) {
        let n = self.next() % self.config.keyspace.max(1);
        match self.config.workload {
            RedisWorkload::Get => {
                self.key_of("key", n);
                conn.command(&[b"GET", &self.key]);
            }
            RedisWorkload::Set => {
                self.key_of("key", n);
                conn.command(&[b"SET", &self.key, &self.value]);
            }
            RedisWorkload::Mixed => {
                self.key_of("key", n);
                if self.next().is_multiple_of(10) {
                    conn.command(&[b"SET", &self.key, &self.value]);
                } else {
                    conn.command(&[b"GET", &self.key]);
                }
            }
            RedisWorkload::Incr => {
                self.key_of("counter", n);
                conn.command(&[b"INCR", &self.key]);
            }
            RedisWorkload::LpushLpop => {
                // The pop takes from the list the push filled.
                if self.push_next {
                    self.key_of("list", n);
                    conn.command(&[b"LPUSH", &self.key, &self.value]);
                } else {
                    conn.command(&[b"LPOP", &self.key]);
                }
                self.push_next = !self.push_next;
            }
            RedisWorkload::HotKey => conn.command(&[b"INCR", b"scalelab:hot"]),
        }
    }
}

impl Client for RedisClient {
    async fn connect(&mut self) -> Result<(), Failure> {
        let conn = RespConn::connect(&self.config.url, self.config.connect_timeout, self.ctx.owns_one_connection).await?;
        if self.connected_once {
            self.reconnects += 1;
        }
        self.connected_once = true;
        self.conn = Some(conn);
        Ok(())
    }

    async fn call(&mut self) -> Result<u32, Failure> {
        if self.conn.is_none() {
            self.connect().await?;
        }
        let mut conn = self.conn.take().expect("connected above");
        for _ in 0..self.config.pipeline {
            self.queue(&mut conn);
        }
        match conn.round_trip().await {
            Ok(()) => {
                self.conn = Some(conn);
                Ok(self.config.pipeline)
            }
            // An error reply leaves the connection in step: keep it.
            Err(f) if matches!(f.class, ErrorClass::ServerError | ErrorClass::OutOfMemory | ErrorClass::Busy) => {
                self.conn = Some(conn);
                Err(f)
            }
            Err(f) => Err(f),
        }
    }

    fn reconnects(&self) -> u64 {
        self.reconnects
    }
}

/// What the server says it is (`INFO server`): `Redis 7.0.15` (or Valkey).
pub fn inspect(url: &RedisUrl, timeout: Duration) -> Result<String, Failure> {
    block_on(timeout, async {
        let mut c = RespConn::connect(url, timeout, false).await?;
        let info = c.query_text(&[b"INFO", b"server"]).await?;
        let field = |k: &str| info.lines().find_map(|l| l.strip_prefix(k)).map(|v| v.trim().to_string());
        let name = if field("valkey_version:").is_some() { "Valkey" } else { "Redis" };
        Ok(format!(
            "{name} {}",
            field("valkey_version:").or_else(|| field("redis_version:")).unwrap_or_else(|| "(version not said)".into())
        ))
    })
}

/// Fills the keyspace the workload reads when it is missing (its first and
/// last keys absent): `MSET` of 500 keys per command. Returns the keys
/// written (0: they were there).
pub fn fill_keyspace(config: &RedisConfig) -> Result<u64, Failure> {
    if !config.workload.reads_keyspace() {
        return Ok(0);
    }
    block_on(Duration::from_secs(600), async {
        let mut c = RespConn::connect(&config.url, config.connect_timeout, false).await?;
        let last = config.keyspace.saturating_sub(1);
        let have = c.query_text(&[b"EXISTS", format!("{PREFIX}key:0").as_bytes(), format!("{PREFIX}key:{last}").as_bytes()]).await?;
        if have.trim_start_matches(':').trim() == "2" {
            return Ok(0);
        }
        let value = vec![b'x'; config.value_size];
        let mut n = 0;
        while n < config.keyspace {
            let end = (n + 500).min(config.keyspace);
            let keys: Vec<Vec<u8>> = (n..end).map(|i| format!("{PREFIX}key:{i}").into_bytes()).collect();
            let mut args: Vec<&[u8]> = vec![b"MSET"];
            for k in &keys {
                args.push(k);
                args.push(&value);
            }
            c.command(&args);
            c.round_trip().await?;
            n = end;
        }
        Ok(config.keyspace)
    })
}

/// Runs `f` on a runtime of its own (`scalelab_wire::runtime`), within `timeout`.
fn block_on<T>(timeout: Duration, f: impl std::future::Future<Output = Result<T, Failure>>) -> Result<T, Failure> {
    scalelab_wire::runtime().block_on(async {
        tokio::time::timeout(timeout, f).await.unwrap_or_else(|_| Err(Failure::new(ErrorClass::ReadTimeout, "no answer in time")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_parse_by_name_and_describe_themselves() {
        for w in RedisWorkload::ALL {
            assert_eq!(RedisWorkload::parse(w.name()), Ok(w));
        }
        assert_eq!(
            RedisWorkload::parse("scan").unwrap_err(),
            "unknown Redis workload 'scan': one of get, set, mixed, incr, lpush-lpop, hot-key"
        );
        let config = RedisConfig {
            url: RedisUrl::parse("redis://127.0.0.1:1").unwrap(),
            workload: RedisWorkload::Set,
            keyspace: 100,
            value_size: 16,
            pipeline: 8,
            connect_timeout: Duration::from_secs(1),
        };
        assert_eq!(config.describe(), "redis set: SET of 100 keys, 16 B values, 8 commands per round trip");
        // Keys stay under the prefix and inside the keyspace.
        let d = RedisDriver::new(config);
        let mut c = d.client(ClientCtx::new(3));
        for _ in 0..1000 {
            let n = c.next() % 100;
            c.key_of("key", n);
            let k = String::from_utf8(c.key.clone()).unwrap();
            assert!(k.starts_with("scalelab:key:") && k["scalelab:key:".len()..].parse::<u64>().unwrap() < 100, "{k}");
        }
    }
}
