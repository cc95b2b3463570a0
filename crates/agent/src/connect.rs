//! The coordinator reaching an agent: `ssh://[user@]host[:port]` runs the
//! system ssh client (`ssh -T host scalelab agent --stdio`, the user's keys
//! and known_hosts), `tcp://host:port` opens TLS and proves the token.
//! Then the handshake and the clock: a few pings, the one with the
//! shortest round trip gives the agent's clock offset.

use crate::auth;
use crate::proto::{mismatch, read_frame, write_frame, FromAgent, ToAgent};
use crate::serve::{unix_us, Reader, Writer};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncBufReadExt;

/// Where an agent is, as the user named it.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentAddr {
    /// `ssh://[user@]host[:port]`.
    Ssh { host: String, port: Option<u16> },
    /// `tcp://host:port`.
    Tcp { addr: String },
}

impl AgentAddr {
    /// Parses `ssh://...` or `tcp://host:port`; the error names what to fix.
    pub fn parse(text: &str) -> Result<AgentAddr, String> {
        let bad = |why: &str| format!("agent '{}': {why}", scalelab_core::escape_control(text));
        if let Some(rest) = text.strip_prefix("ssh://") {
            let rest = rest.trim_end_matches('/');
            let (host, port) = match rest.rsplit_once(':') {
                Some((h, p)) if !h.ends_with(']') || rest.starts_with('[') => {
                    (h.to_string(), Some(p.parse::<u16>().map_err(|_| bad("the ssh port must be a number"))?))
                }
                _ => (rest.to_string(), None),
            };
            if host.is_empty() || host.starts_with('-') || host.contains(char::is_whitespace) {
                return Err(bad("give ssh://[user@]host[:port]"));
            }
            return Ok(AgentAddr::Ssh { host, port });
        }
        if let Some(rest) = text.strip_prefix("tcp://") {
            let rest = rest.trim_end_matches('/');
            match rest.rsplit_once(':') {
                Some((h, p)) if !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0) => return Ok(AgentAddr::Tcp { addr: rest.into() }),
                _ => return Err(bad("give tcp://host:port")),
            }
        }
        Err(bad("use ssh://[user@]host[:port] or tcp://host:port"))
    }
}

/// How the coordinator reaches its agents.
#[derive(Clone, Debug, Default)]
pub struct Reach {
    /// The token of TCP agents (`--agent-token-file`).
    pub token: Option<Vec<u8>>,
    /// The scalelab binary on the ssh hosts (`--agent-command`; default `scalelab`).
    pub agent_command: Option<String>,
    /// Extra `-o` options for ssh (`--ssh-option`, `SCALELAB_SSH_OPTIONS`).
    pub ssh_options: Vec<String>,
    /// This side's protocol number.
    pub protocol: u32,
}

/// What ssh (or the remote agent) last wrote on stderr.
#[derive(Default)]
pub struct LastWords {
    line: Mutex<String>,
    /// Its stderr is closed (or there is none: a TCP agent).
    done: AtomicBool,
}

impl LastWords {
    /// The last line, once stderr is closed (waiting up to a second for
    /// ssh to say why it ended: its stdout may close first).
    pub async fn get(&self) -> String {
        for _ in 0..50 {
            if self.done.load(Ordering::Relaxed) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.line.lock().expect("not poisoned").clone()
    }
}

/// An open, authenticated channel to one agent, its clock measured.
pub struct Opened {
    pub r: Reader,
    pub w: Writer,
    pub host: String,
    /// Agent clock minus coordinator clock, µs.
    pub offset_us: i64,
    /// The shortest round trip, µs.
    pub rtt_us: i64,
    /// Kept for the session: the ssh child, killed on drop.
    pub child: Option<tokio::process::Child>,
    /// The last line ssh or the remote agent wrote on stderr.
    pub stderr: Arc<LastWords>,
}

type Channel = (Reader, Writer, Option<Vec<u8>>, Option<tokio::process::Child>, Arc<LastWords>);

async fn open(addr: &AgentAddr, reach: &Reach) -> Result<Channel, String> {
    let stderr: Arc<LastWords> = Arc::default();
    match addr {
        AgentAddr::Tcp { addr } => {
            reach.token.as_ref().ok_or("a tcp:// agent needs --agent-token-file (the token the agent was started with)")?;
            let sock = tokio::time::timeout(Duration::from_secs(10), tokio::net::TcpStream::connect(addr.as_str()))
                .await
                .map_err(|_| "no answer within 10 s".to_string())?
                .map_err(|e| format!("cannot connect: {e}"))?;
            let _ = sock.set_nodelay(true);
            let name = rustls::pki_types::ServerName::try_from("scalelab-agent").expect("a valid name");
            // A port that accepts and never speaks TLS must not hold the run: timed out as the connect.
            let tls =
                tokio::time::timeout(Duration::from_secs(10), tokio_rustls::TlsConnector::from(auth::client_config()).connect(name, sock))
                    .await
                    .map_err(|_| "no TLS handshake within 10 s: is it a `scalelab agent --listen`?".to_string())?
                    .map_err(|e| format!("TLS handshake failed ({e}): is it a `scalelab agent --listen`?"))?;
            let mut ekm = vec![0u8; 32];
            tls.get_ref().1.export_keying_material(&mut ekm[..], auth::EXPORTER_LABEL, None).map_err(|e| format!("TLS exporter: {e}"))?;
            let (r, w) = tokio::io::split(tls);
            stderr.done.store(true, Ordering::Relaxed);
            Ok((Box::new(r), Box::new(w), Some(ekm), None, stderr))
        }
        AgentAddr::Ssh { host, port } => {
            let mut cmd = tokio::process::Command::new("ssh");
            cmd.arg("-T").args(["-o", "BatchMode=yes"]);
            if let Some(p) = port {
                cmd.arg("-p").arg(p.to_string());
            }
            for o in &reach.ssh_options {
                cmd.arg("-o").arg(o);
            }
            cmd.arg("--").arg(host).arg(format!("{} agent --stdio", reach.agent_command.as_deref().unwrap_or("scalelab")));
            cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
            cmd.kill_on_drop(true);
            let mut child = cmd.spawn().map_err(|e| format!("cannot run ssh: {e}"))?;
            let (r, w) = (child.stdout.take().expect("piped"), child.stdin.take().expect("piped"));
            let err = child.stderr.take().expect("piped");
            let keep = stderr.clone();
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(err).lines();
                while let Ok(Some(l)) = lines.next_line().await {
                    *keep.line.lock().expect("not poisoned") = l;
                }
                keep.done.store(true, Ordering::Relaxed);
            });
            Ok((Box::new(r), Box::new(w), None, Some(child), stderr))
        }
    }
}

async fn recv(r: &mut Reader, what: &str) -> Result<FromAgent, String> {
    match tokio::time::timeout(Duration::from_secs(30), read_frame::<_, FromAgent>(r)).await {
        Ok(Ok(Some((FromAgent::Refused { message }, _)))) => Err(message),
        Ok(Ok(Some((m, _)))) => Ok(m),
        Ok(Ok(None)) => Err(format!("the agent closed the connection (waiting for {what})")),
        Ok(Err(e)) => Err(format!("{e} (waiting for {what})")),
        Err(_) => Err(format!("{what} did not come within 30 s")),
    }
}

/// Opens the channel, says hello, proves the token (TCP) and measures the clock.
pub async fn open_agent(addr: &AgentAddr, reach: &Reach) -> Result<Opened, String> {
    greet(open(addr, reach).await?, reach).await
}

/// The handshake and the clock on an open channel.
async fn greet((mut r, mut w, ekm, child, stderr): Channel, reach: &Reach) -> Result<Opened, String> {
    let with_stderr = |e: String| {
        let stderr = stderr.clone();
        async move {
            let last = stderr.get().await;
            if last.is_empty() {
                e
            } else {
                format!("{e}; ssh said: {}", scalelab_core::escape_control(&last))
            }
        }
    };
    let c_nonce = auth::nonce();
    if let Err(e) = write_frame(&mut w, &ToAgent::Hello { protocol: reach.protocol, nonce: c_nonce.clone() }).await {
        return Err(with_stderr(e.to_string()).await);
    }
    let (a_nonce, mut host) = match recv(&mut r, "the agent's hello").await {
        Ok(FromAgent::Hello { protocol, nonce, host, .. }) if protocol == reach.protocol => (nonce, host),
        Ok(FromAgent::Hello { protocol, .. }) => return Err(mismatch(protocol, reach.protocol)),
        Ok(_) => return Err("the agent's first frame was not a hello".into()),
        Err(e) => return Err(with_stderr(e).await),
    };
    if let (Some(ekm), Some(token)) = (&ekm, &reach.token) {
        let mine = auth::proof(token, "coordinator", &c_nonce, &a_nonce, ekm);
        write_frame(&mut w, &ToAgent::Auth { proof: mine }).await.map_err(|e| e.to_string())?;
        match recv(&mut r, "the agent's token proof").await? {
            FromAgent::Auth { proof, host: h, .. } if auth::verify(token, "agent", &c_nonce, &a_nonce, ekm, &proof) => {
                // The agent names its host once the token is proven (not in its hello).
                if !h.is_empty() {
                    host = h;
                }
            }
            _ => return Err("the agent's token proof did not match: it is not the agent holding this token".into()),
        }
    }
    let (mut offset_us, mut rtt_us) = (0, i64::MAX);
    for seq in 0..5 {
        let t0 = Instant::now();
        let c0 = unix_us();
        write_frame(&mut w, &ToAgent::Ping { seq }).await.map_err(|e| e.to_string())?;
        match recv(&mut r, "a pong").await? {
            FromAgent::Pong { seq: s, agent_unix_us } if s == seq => {
                let rtt = t0.elapsed().as_micros() as i64;
                if rtt < rtt_us {
                    rtt_us = rtt;
                    offset_us = agent_unix_us - (c0 + rtt / 2);
                }
            }
            _ => return Err("the agent answered a ping with something else".into()),
        }
    }
    Ok(Opened { r, w, host, offset_us, rtt_us, child, stderr })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Copies `from` to `to`, each chunk `delay` late (a slow link, one way).
    async fn link(mut from: tokio::io::DuplexStream, mut to: tokio::io::DuplexStream, delay: Duration) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(n) = from.read(&mut buf).await {
            if n == 0 {
                break;
            }
            tokio::time::sleep(delay).await;
            if to.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    }

    /// An agent (its real `serve`) behind a link with `there` and `back` delays.
    async fn clock_over(there: Duration, back: Duration) -> Opened {
        let (c_w, l1) = tokio::io::duplex(1 << 16);
        let (l2, a_r) = tokio::io::duplex(1 << 16);
        let (a_w, l3) = tokio::io::duplex(1 << 16);
        let (l4, c_r) = tokio::io::duplex(1 << 16);
        tokio::spawn(link(l1, l2, there));
        tokio::spawn(link(l3, l4, back));
        tokio::spawn(crate::serve::serve(Box::new(a_r), Box::new(a_w), None, crate::PROTOCOL, std::sync::Arc::new(|_: &str| {})));
        let stderr: Arc<LastWords> = Arc::default();
        stderr.done.store(true, Ordering::Relaxed);
        let reach = Reach { protocol: crate::PROTOCOL, ..Default::default() };
        greet((Box::new(c_r), Box::new(c_w), None, None, stderr), &reach).await.unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn added_latency_does_not_skew_the_clock_beyond_half_its_asymmetry() {
        // Same clock on both sides: the true offset is 0.
        let o = clock_over(Duration::from_millis(25), Duration::from_millis(25)).await;
        assert!(o.rtt_us >= 50_000, "the round trip includes the delay: {}", o.rtt_us);
        assert!(o.offset_us.abs() < 5_000, "a symmetric delay leaves the offset near 0: {} µs", o.offset_us);
        // 40 ms there, 10 ms back: the estimate is off by the asymmetry's half, never more.
        let o = clock_over(Duration::from_millis(40), Duration::from_millis(10)).await;
        assert!((o.offset_us - 15_000).abs() < 5_000, "offset {} µs, rtt {} µs", o.offset_us, o.rtt_us);
        assert!(o.offset_us.abs() <= o.rtt_us / 2, "bounded by half the round trip");
    }

    /// An agent that says hello and then nothing: the coordinator's line is
    /// grammatical. On paused time: the 30 s wait passes at once.
    #[tokio::test(start_paused = true)]
    async fn a_silent_agent_is_named_in_a_sentence() {
        let (c_w, mut a_r) = tokio::io::duplex(1 << 16);
        let (mut a_w, c_r) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move {
            let _ = read_frame::<_, ToAgent>(&mut a_r).await;
            let hello = FromAgent::Hello { protocol: crate::PROTOCOL, nonce: auth::nonce(), host: String::new(), version: String::new() };
            write_frame(&mut a_w, &hello).await.unwrap();
            // Then silence, the channel kept open.
            tokio::time::sleep(Duration::from_secs(120)).await;
            drop((a_r, a_w));
        });
        let stderr: Arc<LastWords> = Arc::default();
        stderr.done.store(true, Ordering::Relaxed);
        let reach = Reach { protocol: crate::PROTOCOL, token: Some(b"9f1c2e7a5b3d4c6e8f0a1b2c3d4e5f60".to_vec()), ..Default::default() };
        let e = greet((Box::new(c_r), Box::new(c_w), Some(vec![7u8; 32]), None, stderr), &reach).await.err().unwrap();
        assert_eq!(e, "the agent's token proof did not come within 30 s");
    }

    #[test]
    fn agent_addresses() {
        assert_eq!(AgentAddr::parse("ssh://u@h:2222").unwrap(), AgentAddr::Ssh { host: "u@h".into(), port: Some(2222) });
        assert_eq!(AgentAddr::parse("ssh://h").unwrap(), AgentAddr::Ssh { host: "h".into(), port: None });
        assert_eq!(AgentAddr::parse("tcp://10.0.0.5:7070").unwrap(), AgentAddr::Tcp { addr: "10.0.0.5:7070".into() });
        for bad in ["tcp://h", "http://h:1", "ssh://-oProxyCommand=x", "ssh://h:x"] {
            assert!(AgentAddr::parse(bad).is_err(), "{bad}");
        }
    }
}
