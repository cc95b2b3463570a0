//! Opening a connection: the server's greeting, TLS, the handshake
//! response and the authentication exchange (mysql_native_password,
//! caching_sha2_password).

use super::conn::MyWire;
use super::errors::{err_packet, malformed, Error};
use super::packets::{COLLATION, MAX_PACKET};
use crate::stream::Stream;
use crate::url::{SqlTls, SqlUrl};
use mysql_common::constants::CapabilityFlags;
use mysql_common::io::ParseBuf;
use mysql_common::packets::{AuthPlugin, HandshakePacket, HandshakeResponse, SslRequest};
use mysql_common::proto::MySerialize;
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::time::Duration;

/// The server's greeting, as the handshake needs it.
#[derive(Debug)]
pub(super) struct Greeting {
    pub(super) capabilities: CapabilityFlags,
    pub(super) version: (u16, u16, u16),
    pub(super) nonce: Vec<u8>,
    pub(super) plugin: Vec<u8>,
}

/// Reads the v10 greeting (an ERR packet here is the server refusing us,
/// e.g. too many connections).
pub(super) fn greeting(p: &[u8]) -> Result<Greeting, Failure> {
    if p.first() == Some(&0xFF) {
        return Err(err_packet(p));
    }
    let bad =
        |why: String| Failure::new(ErrorClass::Other, format!("unexpected greeting from the server ({why}): is it MySQL or MariaDB?"));
    if p.first() != Some(&10) {
        return Err(bad(format!("protocol version {:?}, expected 10", p.first())));
    }
    let hs = ParseBuf(p).parse::<HandshakePacket>(()).map_err(|e| bad(e.to_string()))?;
    let capabilities = hs.capabilities();
    let needed = CapabilityFlags::CLIENT_PROTOCOL_41 | CapabilityFlags::CLIENT_SECURE_CONNECTION;
    if !capabilities.contains(needed) {
        return Err(Failure::new(ErrorClass::Other, "the server is too old (no 4.1 protocol with secure authentication)"));
    }
    Ok(Greeting {
        capabilities,
        version: hs.server_version_parsed().unwrap_or((5, 5, 5)),
        nonce: hs.nonce(),
        plugin: hs.auth_plugin_name_ref().unwrap_or(b"mysql_native_password").to_vec(),
    })
}

/// The authentication data of `plugin` for `password` and the server's nonce.
pub(super) fn auth_data(plugin: &[u8], password: Option<&str>, nonce: &[u8]) -> Result<Vec<u8>, Failure> {
    let pass = password.unwrap_or("").as_bytes();
    let data = match plugin {
        b"mysql_native_password" => mysql_common::scramble::scramble_native(nonce, pass).map(|s| s.to_vec()),
        b"caching_sha2_password" => mysql_common::scramble::scramble_sha256(nonce, pass).map(|s| s.to_vec()),
        b"client_ed25519" => {
            return Err(Failure::new(
                ErrorClass::Other,
                "the server asks for MariaDB's client_ed25519 authentication plugin, which scalelab does not support: \
                 use a user IDENTIFIED VIA mysql_native_password",
            ))
        }
        other => {
            return Err(Failure::new(
                ErrorClass::Other,
                format!(
                    "the server asks for the authentication plugin '{}', which scalelab does not support \
                     (it speaks mysql_native_password and caching_sha2_password)",
                    String::from_utf8_lossy(other)
                ),
            ))
        }
    };
    Ok(data.unwrap_or_default()) // None: empty password, empty data
}

/// caching_sha2_password's full authentication over plain TCP: the password
/// (NUL-terminated) XORed with the nonce, encrypted with the server's RSA
/// public key (OAEP). mysql_common panics on a key it cannot parse; that is
/// caught and reported.
pub(super) fn rsa_encrypt(password: &[u8], nonce: &[u8], pem: &[u8]) -> Result<Vec<u8>, Failure> {
    let mut pass = password.to_vec();
    pass.push(0);
    if !nonce.is_empty() {
        for (i, b) in pass.iter_mut().enumerate() {
            *b ^= nonce[i % nonce.len()];
        }
    }
    std::panic::catch_unwind(|| mysql_common::crypto::encrypt(&pass, pem))
        .map_err(|_| Failure::new(ErrorClass::Other, "the server's RSA public key (caching_sha2_password) could not be read"))
}

/// Opens a connection (TCP, or the unix socket of `?socket=`), with TLS if
/// the URL asks for it, and authenticates; the whole within `timeout`.
/// `sole`: the calling thread owns only this connection ([`Stream::settle`]).
pub async fn connect(url: &SqlUrl, timeout: Duration, sole: bool) -> Result<MyWire, Failure> {
    let addr = url.socket.clone().unwrap_or_else(|| format!("{}:{}", url.host, url.port));
    match tokio::time::timeout(timeout, handshake(url, timeout, &addr, sole)).await {
        Err(_) => Err(Failure::new(ErrorClass::ConnectTimeout, format!("connect to {addr} timed out"))),
        Ok(r) => r,
    }
}

async fn handshake(url: &SqlUrl, timeout: Duration, addr: &str, sole: bool) -> Result<MyWire, Failure> {
    let stream = match &url.socket {
        Some(path) => Stream::unix(path, timeout).await?,
        None => Stream::tcp(&url.host, url.port, timeout).await?,
    };
    let mut c = MyWire::new(stream, false);
    let len = c.packet().await.map_err(|e| e.at_connect(addr))?;
    let g = greeting(&c.inbox.data()[..len]);
    c.inbox.consume(len);
    let g = g?;
    let wanted = CapabilityFlags::CLIENT_LONG_PASSWORD
        | CapabilityFlags::CLIENT_LONG_FLAG
        | CapabilityFlags::CLIENT_PROTOCOL_41
        | CapabilityFlags::CLIENT_SECURE_CONNECTION
        | CapabilityFlags::CLIENT_PLUGIN_AUTH
        | CapabilityFlags::CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
        | CapabilityFlags::CLIENT_CONNECT_WITH_DB
        | CapabilityFlags::CLIENT_TRANSACTIONS
        | CapabilityFlags::CLIENT_MULTI_RESULTS
        | CapabilityFlags::CLIENT_PS_MULTI_RESULTS
        | CapabilityFlags::CLIENT_DEPRECATE_EOF;
    let mut caps = wanted & g.capabilities;
    let secure = url.socket.is_some() || url.tls != SqlTls::Off;
    if url.tls != SqlTls::Off {
        if !g.capabilities.contains(CapabilityFlags::CLIENT_SSL) {
            return Err(Failure::new(
                ErrorClass::Other,
                format!("{addr} does not offer TLS, which the URL's ssl-mode asks for: drop ssl-mode or enable TLS on the server"),
            ));
        }
        caps |= CapabilityFlags::CLIENT_SSL;
        c.start();
        SslRequest::new(caps, MAX_PACKET, COLLATION).serialize(&mut c.out);
        c.send().await.map_err(|e| e.at_connect(addr))?;
        let MyWire { stream, inbox, out, seq, .. } = c;
        c = MyWire { stream: stream.into_tls(&url.tls, &url.host, timeout).await?, inbox, out, deprecate_eof: false, seq };
    }
    c.deprecate_eof = caps.contains(CapabilityFlags::CLIENT_DEPRECATE_EOF);
    // An unsupported default plugin: answer with mysql_native_password; the
    // server switches if the user needs another one.
    let mut plugin = g.plugin.clone();
    if plugin != b"mysql_native_password" && plugin != b"caching_sha2_password" {
        plugin = b"mysql_native_password".to_vec();
    }
    let data = auth_data(&plugin, url.password.as_deref(), &g.nonce)?;
    c.start();
    HandshakeResponse::new(
        Some(&data[..]),
        g.version,
        Some(url.user.as_bytes()),
        Some(url.database.as_bytes()),
        Some(AuthPlugin::from_bytes(&plugin)),
        caps,
        None,
        MAX_PACKET,
    )
    .serialize(&mut c.out);
    c.send().await.map_err(|e| e.at_connect(addr))?;
    c.authenticate(plugin, g.nonce, url.password.as_deref(), secure).await.map_err(|e| e.at_connect(addr))?;
    let MyWire { stream, inbox, out, deprecate_eof, seq } = c;
    let stream = stream.settle(sole).map_err(|e| Error::Io(e).at_connect(addr))?;
    Ok(MyWire { stream, inbox, out, deprecate_eof, seq })
}

impl MyWire {
    /// The authentication exchange after the handshake response: OK, ERR,
    /// one auth switch (0xFE), caching_sha2_password's fast (0x01 0x03) or
    /// full (0x01 0x04) authentication.
    async fn authenticate(&mut self, mut plugin: Vec<u8>, mut nonce: Vec<u8>, password: Option<&str>, secure: bool) -> Result<(), Error> {
        let mut switched = false;
        loop {
            let len = self.packet().await?;
            let p = self.inbox.data()[..len].to_vec();
            self.inbox.consume(len);
            match p.first() {
                Some(0x00) => return Ok(()),
                Some(0xFF) => return Err(Error::Fail(err_packet(&p))),
                Some(0xFE) if !switched => {
                    switched = true;
                    let Some(end) = p[1..].iter().position(|&b| b == 0) else {
                        return Err(Error::Fail(Failure::new(
                            ErrorClass::Other,
                            "the server asks for the old mysql_old_password authentication, which scalelab does not support",
                        )));
                    };
                    plugin = p[1..1 + end].to_vec();
                    nonce = p[2 + end..].to_vec();
                    if nonce.last() == Some(&0) {
                        nonce.pop();
                    }
                    let data = auth_data(&plugin, password, &nonce).map_err(Error::Fail)?;
                    self.start();
                    self.out.extend_from_slice(&data);
                    self.send().await?;
                }
                Some(0x01) if plugin == b"caching_sha2_password" => match p.get(1) {
                    Some(0x03) => {} // fast authentication succeeded: OK follows
                    Some(0x04) => {
                        let pass = password.unwrap_or("").as_bytes();
                        self.start();
                        if secure {
                            self.out.extend_from_slice(pass);
                            self.out.push(0);
                        } else {
                            // Ask for the server's public key (0x02); it comes as AuthMoreData (0x01, PEM).
                            self.out.push(0x02);
                            self.send().await?;
                            let len = self.packet().await?;
                            let key = self.inbox.data()[..len].to_vec();
                            self.inbox.consume(len);
                            if key.first() != Some(&0x01) {
                                return Err(match key.first() {
                                    Some(0xFF) => Error::Fail(err_packet(&key)),
                                    _ => malformed("no RSA public key for caching_sha2_password"),
                                });
                            }
                            let enc = rsa_encrypt(pass, &nonce, &key[1..]).map_err(Error::Fail)?;
                            self.start();
                            self.out.extend_from_slice(&enc);
                        }
                        self.send().await?;
                    }
                    _ => return Err(malformed("unknown caching_sha2_password step")),
                },
                _ => return Err(malformed(&format!("unexpected packet during authentication (first byte {:?})", p.first()))),
            }
        }
    }
}
