//! `scalelab agent`: over the standard streams (started by ssh, which
//! authenticated the user), or listening on TCP with TLS and a token.

use crate::auth;
use crate::serve::{serve, Proof, Reader, Writer};
use std::path::Path;
use std::time::Duration;
use tokio::net::TcpListener;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime")
}

/// One session over stdin/stdout (`scalelab agent --stdio`); its lines go
/// to `log`. Err: why it was refused.
pub fn stdio(protocol: u32, log: crate::Log) -> Result<(), String> {
    runtime().block_on(async {
        let r: Reader = Box::new(tokio::io::stdin());
        let w: Writer = Box::new(tokio::io::stdout());
        serve(r, w, None, protocol, log).await
    })
}

/// Where a TCP agent listens, with what.
pub struct ListenConfig<'a> {
    pub addr: &'a str,
    pub token_file: &'a Path,
    pub cert_key: Option<(&'a Path, &'a Path)>,
    pub protocol: u32,
    /// Where its lines go: warnings, refusals, sessions.
    pub log: crate::Log,
}

/// Listens on `addr` until killed, one session per connection. Every
/// refusal is one line to `log` (the token is never in one). Err: the
/// listener could not start (bad input).
pub fn listen(c: &ListenConfig<'_>) -> Result<(), String> {
    // A regular file of bounded size first (a fifo or /dev/zero is named
    // as such), then a secret only its owner may read, as ssh wants of a
    // private key.
    let token = auth::read_token(c.token_file)?;
    auth::check_private(c.token_file, "--token-file")?;
    if let Some((_, key)) = c.cert_key {
        auth::check_private(key, "--key")?;
    }
    let tls = tokio_rustls::TlsAcceptor::from(auth::server_config(c.cert_key)?);
    if let Some(why) = auth::weak(&token) {
        (c.log)(&format!("agent: warning: the token in {} is weak ({why}): make one with `openssl rand -hex 32`", c.token_file.display()));
    }
    let (protocol, log) = (c.protocol, c.log.clone());
    runtime().block_on(async move {
        let listener = TcpListener::bind(c.addr).await.map_err(|e| format!("--listen {}: {e}", c.addr))?;
        let local = listener.local_addr().map_err(|e| e.to_string())?;
        if local.ip().is_unspecified() {
            log(&format!(
                "agent: warning: --listen {} accepts coordinators on every interface: prefer the address of the network the coordinator is on, or firewall the port",
                c.addr
            ));
        }
        log(&format!("scalelab agent listening on {local} (TLS, token; protocol {protocol})"));
        loop {
            let (sock, peer) = match listener.accept().await {
                Ok(x) => x,
                Err(e) => {
                    log(&format!("agent: accept: {e}"));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let (tls, token, log) = (tls.clone(), token.clone(), log.clone());
            tokio::spawn(async move {
                let _ = sock.set_nodelay(true);
                let stream = match tokio::time::timeout(Duration::from_secs(10), tls.accept(sock)).await {
                    Ok(Ok(s)) => s,
                    Ok(Err(e)) => return log(&format!("agent: refused {peer}: TLS handshake failed ({e})")),
                    Err(_) => return log(&format!("agent: refused {peer}: no TLS handshake within 10 s")),
                };
                let mut ekm = vec![0u8; 32];
                if let Err(e) = stream.get_ref().1.export_keying_material(&mut ekm[..], auth::EXPORTER_LABEL, None) {
                    return log(&format!("agent: refused {peer}: no TLS exporter ({e})"));
                }
                let (r, w) = tokio::io::split(stream);
                match serve(Box::new(r), Box::new(w), Some(Proof { token, ekm }), protocol, log.clone()).await {
                    Ok(()) => log(&format!("agent: session from {peer} ended")),
                    Err(why) => log(&format!("agent: refused {peer}: {why}")),
                }
            });
        }
    })
}
