//! The control protocol between a coordinator and its agents: frames of a
//! big-endian u32 length and a JSON body; histograms travel as HDR V2
//! deflated bytes in base64 (`wire_step`). The first frame each way is a
//! `hello` carrying the protocol number, whose shape never changes, so two
//! versions can always tell each other apart.

use scalelab_core::{LiveTick, StepPlan, StepResult};
use scalelab_drive::http::HttpConfig;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// This build's protocol number: bump it on any change of the frames.
pub const PROTOCOL: u32 = 3;

/// A frame larger than this is refused (a step with 10 minutes of
/// per-second histograms is well under a megabyte).
const MAX_FRAME: u32 = 64 << 20;

/// The line both sides print when their protocols differ.
pub fn mismatch(agent: u32, coordinator: u32) -> String {
    format!("agent speaks protocol {agent}, coordinator {coordinator}: use the same scalelab version on both")
}

/// The SQL workload of a load agent, as the coordinator built and checked it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SqlSpec {
    pub workload: scalelab_drive::sql::workload::Workload,
    /// Prepared statements (false: `--no-prepare`, text queries).
    pub prepare: bool,
    pub connect_timeout_ms: u64,
}

/// Frames from the coordinator to an agent.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToAgent {
    /// The first frame: the coordinator's protocol and its nonce (hex).
    Hello { protocol: u32, nonce: String },
    /// TCP only: HMAC-SHA256(token, "coordinator" | nonces | TLS exporter), hex.
    Auth { proof: String },
    /// A clock probe; answered by `pong` with the agent's clock.
    Ping { seq: u32 },
    /// The session: the one target this agent may send load to, and how;
    /// `http2`: spoken as HTTP/2 with that many streams per connection
    /// (h2c on `http://`, h2 by ALPN on `https://`), else HTTP/1.1.
    Load { target: String, http: HttpConfig, http2: Option<u32>, threads: Option<u32>, no_pin: bool },
    /// Sends SQL load to `target` (a database URL): the workload as the
    /// coordinator built it (it prepared the dataset and checked the
    /// statements; the agent only runs the workload).
    LoadSql { target: String, sql: SqlSpec, threads: Option<u32>, no_pin: bool },
    /// Sends Redis load to `target` (a `redis://` URL), as `redis` says
    /// (the coordinator filled the keyspace).
    LoadRedis { target: String, redis: scalelab_drive::redis::RedisConfig, threads: Option<u32>, no_pin: bool },
    /// Probes for the server on the agent's host (`--server-agent`), and
    /// the database to poll from there (`--db-probe`, or a SQL target).
    Probe { server_pid: Option<u32>, port: Option<u16>, interval_ms: u64, thread_hz: f64, db: Option<String> },
    /// Run this agent's share of a step, starting at `start_at_unix_us` on the agent's clock.
    Step { index: usize, plan: StepPlan, start_at_unix_us: i64 },
    /// Cut the running step short (the coordinator was interrupted).
    Stop,
    /// The run is over: stop probes and close.
    Bye,
}

/// Frames from an agent to the coordinator.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromAgent {
    /// The first frame: the agent's protocol, its nonce (hex), host and
    /// version. Over TCP host and version are empty: a stranger learns
    /// nothing about the host before the token is proven (they come in `auth`).
    Hello { protocol: u32, nonce: String, host: String, version: String },
    /// TCP only: HMAC-SHA256(token, "agent" | nonces | TLS exporter), hex,
    /// then the host and version, sent once the coordinator proved the token.
    Auth {
        proof: String,
        #[serde(default)]
        host: String,
        #[serde(default)]
        version: String,
    },
    /// The agent will not go on, and why (one line).
    Refused { message: String },
    /// Answer to `ping`: the agent's wall clock, µs since the epoch.
    Pong { seq: u32, agent_unix_us: i64 },
    /// The session is set up (the driver built and the target reached).
    Ready { server: Option<String>, cores: u32 },
    /// Progress of the running step (about four times a second).
    Tick { index: usize, tick: LiveTick },
    /// The agent's share of step `index`, whole.
    /// The result's own serde form (histograms as their store encoding),
    /// on the agent's clock.
    StepDone { index: usize, result: Box<StepResult> },
    /// Probe records of the server's host (`--server-agent`), typed samples as JSON.
    Records { records: Vec<serde_json::Value> },
    /// Something failed on the agent (one line).
    Error { message: String },
}

/// Writes one frame.
pub async fn write_frame<W: AsyncWrite + Unpin, T: Serialize>(w: &mut W, msg: &T) -> std::io::Result<usize> {
    let body = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    let mut buf = Vec::with_capacity(body.len() + 4);
    buf.extend_from_slice(&(body.len() as u32).to_be_bytes());
    buf.extend_from_slice(&body);
    w.write_all(&buf).await?;
    w.flush().await?;
    Ok(buf.len())
}

/// Frames before the peer is authenticated (hello, auth) are small: a
/// stranger cannot make the agent allocate more than this.
pub const MAX_HANDSHAKE_FRAME: u32 = 4096;

/// Reads one frame; `Ok(None)` at a clean end of stream.
pub async fn read_frame<R: AsyncRead + Unpin, T: for<'de> Deserialize<'de>>(r: &mut R) -> std::io::Result<Option<(T, usize)>> {
    read_frame_max(r, MAX_FRAME).await
}

/// [`read_frame`] refusing frames over `max` bytes.
pub async fn read_frame_max<R: AsyncRead + Unpin, T: for<'de> Deserialize<'de>>(
    r: &mut R,
    max: u32,
) -> std::io::Result<Option<(T, usize)>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let n = u32::from_be_bytes(len);
    if n > max {
        return Err(std::io::Error::other(format!("a frame of {n} bytes is over the limit: not a scalelab agent peer")));
    }
    let mut body = vec![0u8; n as usize];
    r.read_exact(&mut body).await?;
    let msg = serde_json::from_slice(&body).map_err(|e| std::io::Error::other(format!("unreadable frame: {e}")))?;
    Ok(Some((msg, n as usize + 4)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        write_frame(&mut a, &ToAgent::Ping { seq: 7 }).await.unwrap();
        write_frame(&mut a, &ToAgent::Hello { protocol: 9, nonce: "ab".into() }).await.unwrap();
        drop(a);
        let (m, _): (ToAgent, _) = read_frame(&mut b).await.unwrap().unwrap();
        assert!(matches!(m, ToAgent::Ping { seq: 7 }));
        let (m, _): (ToAgent, _) = read_frame(&mut b).await.unwrap().unwrap();
        assert!(matches!(m, ToAgent::Hello { protocol: 9, .. }));
        assert!(read_frame::<_, ToAgent>(&mut b).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_stranger_cannot_announce_a_huge_frame_before_the_handshake() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        tokio::io::AsyncWriteExt::write_all(&mut a, &(50u32 << 20).to_be_bytes()).await.unwrap();
        let e = read_frame_max::<_, ToAgent>(&mut b, MAX_HANDSHAKE_FRAME).await.unwrap_err();
        assert!(e.to_string().contains("over the limit"), "{e}");
    }
}
