//! TCP agents: TLS (a self-signed certificate made at start unless one is
//! given) and a token that never crosses the wire. Each side sends a random
//! nonce and proves it knows the token with HMAC-SHA256(token, role |
//! nonces | TLS exporter keying material), checked in constant time. The
//! exporter binds the proof to this TLS session, so a man in the middle
//! (possible with an unverified certificate) holds two sessions with
//! different keying material and cannot relay a valid proof.

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;

/// The exporter label of this protocol (RFC 5705 / RFC 8446 7.5).
pub const EXPORTER_LABEL: &[u8] = b"EXPORTER-scalelab-agent-v1";

/// A fresh 32-byte nonce, hex.
pub fn nonce() -> String {
    let mut b = [0u8; 32];
    SystemRandom::new().fill(&mut b).expect("the system's random source works");
    hex(&b)
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    (s.len() & 1 == 0).then_some(())?;
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// The token from its file: the first line, trimmed; at least 16 bytes.
pub fn read_token(path: &Path) -> Result<Vec<u8>, String> {
    // A regular file of at most 64 KiB: /dev/zero was read until memory ran out, a fifo hung.
    let bytes = scalelab_probe::read::read_user_file(path, 64 << 10).map_err(|e| format!("token file {}: {e}", path.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    let token = text.lines().next().unwrap_or("").trim();
    if token.len() < 16 {
        return Err(format!("token file {}: the token must be at least 16 characters (e.g. `openssl rand -hex 32`)", path.display()));
    }
    Ok(token.as_bytes().to_vec())
}

/// Refuses a secret (`flag`'s file) that group or others may read or
/// write, as ssh refuses such a private key: scalelab agents run as root on
/// shared machines.
pub fn check_private(path: &Path, flag: &str) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let mode = std::fs::metadata(path).map_err(|e| format!("{flag} {}: {e}", path.display()))?.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "{flag} {}: its mode {mode:04o} lets group or others read it; fix: `chmod 600 {}` (only its owner may read a secret)",
            path.display(),
            path.display()
        ));
    }
    Ok(())
}

/// Why `token` is easy to guess (few distinct characters, or repeats):
/// its estimated strength in bits is below 64. None for a strong token.
pub fn weak(token: &[u8]) -> Option<String> {
    let mut counts = [0usize; 256];
    for &b in token {
        counts[b as usize] += 1;
    }
    let n = token.len() as f64;
    // Shannon entropy of its characters, times its length: 16 x 'a' is 0 bits, `openssl rand -hex 32` about 250.
    let bits: f64 = counts.iter().filter(|&&c| c > 0).map(|&c| -(c as f64 / n) * (c as f64 / n).log2()).sum::<f64>() * n;
    (bits < 64.0).then(|| format!("about {bits:.0} bits (few distinct characters)"))
}

fn message(role: &str, coordinator_nonce: &str, agent_nonce: &str, ekm: &[u8]) -> Vec<u8> {
    let mut m = Vec::new();
    for part in [role.as_bytes(), b"|", coordinator_nonce.as_bytes(), b"|", agent_nonce.as_bytes(), b"|", ekm] {
        m.extend_from_slice(part);
    }
    m
}

/// The proof of `role` ("coordinator" or "agent"), hex.
pub fn proof(token: &[u8], role: &str, coordinator_nonce: &str, agent_nonce: &str, ekm: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, token);
    hex(hmac::sign(&key, &message(role, coordinator_nonce, agent_nonce, ekm)).as_ref())
}

/// Whether `given` is the proof of `role` (constant-time comparison).
pub fn verify(token: &[u8], role: &str, coordinator_nonce: &str, agent_nonce: &str, ekm: &[u8], given: &str) -> bool {
    let Some(tag) = unhex(given) else { return false };
    let key = hmac::Key::new(hmac::HMAC_SHA256, token);
    hmac::verify(&key, &message(role, coordinator_nonce, agent_nonce, ekm), &tag).is_ok()
}

/// The most a certificate chain or key file may hold (a chain of a dozen
/// certificates is under 32 KiB).
const MAX_PEM_BYTES: u64 = 1 << 20;

/// The agent's TLS configuration: the given certificate and key (PEM
/// files), or a self-signed certificate made now.
pub fn server_config(cert_key: Option<(&Path, &Path)>) -> Result<Arc<rustls::ServerConfig>, String> {
    let (certs, key) = match cert_key {
        Some((c, k)) => {
            // Read as any user file is (a regular file, bounded): a PEM
            // iterator over /dev/zero reads until memory runs out.
            let read = |p: &Path, what: &str| {
                scalelab_probe::read::read_user_file(p, MAX_PEM_BYTES).map_err(|e| format!("{what} {}: {e}", p.display()))
            };
            let cert_pem = read(c, "--cert")?;
            let key_pem = read(k, "--key")?;
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
                .collect::<Result<_, _>>()
                .map_err(|e| format!("--cert {}: not a PEM certificate ({e})", c.display()))?;
            if certs.is_empty() {
                return Err(format!("--cert {}: no PEM certificate in it (a -----BEGIN CERTIFICATE----- block)", c.display()));
            }
            let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| match e {
                rustls::pki_types::pem::Error::NoItemsFound => {
                    format!("--key {}: no PEM private key in it (a -----BEGIN PRIVATE KEY----- block)", k.display())
                }
                e => format!("--key {}: not a PEM private key ({e})", k.display()),
            })?;
            (certs, key)
        }
        None => {
            let made = rcgen::generate_simple_self_signed(vec!["scalelab-agent".to_string()]).map_err(|e| e.to_string())?;
            let key = PrivateKeyDer::try_from(made.key_pair.serialize_der()).map_err(|e| e.to_string())?;
            (vec![made.cert.der().clone()], key)
        }
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("TLS certificate: {e}"))?;
    Ok(Arc::new(config))
}

/// The coordinator's TLS configuration: the certificate is not checked
/// (the agent's is self-signed); the token proof bound to the session is.
pub fn client_config() -> Arc<rustls::ClientConfig> {
    scalelab_wire::tls::config(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_need_the_token_the_role_and_the_session() {
        let (t, c, a, ekm) = (b"0123456789abcdef0123", nonce(), nonce(), [7u8; 32]);
        let p = proof(t, "coordinator", &c, &a, &ekm);
        assert!(verify(t, "coordinator", &c, &a, &ekm, &p));
        assert!(!verify(b"0123456789abcdef0124", "coordinator", &c, &a, &ekm, &p), "another token");
        assert!(!verify(t, "agent", &c, &a, &ekm, &p), "the other role (a reflected proof)");
        assert!(!verify(t, "coordinator", &c, &a, &[8u8; 32], &p), "another TLS session");
        assert!(!verify(t, "coordinator", &c, &a, &ekm, "zz"), "garbage");
        assert_ne!(nonce(), nonce());
    }

    #[test]
    fn weak_tokens_are_told_apart_from_random_ones() {
        assert!(weak(b"aaaaaaaaaaaaaaaa").is_some());
        assert!(weak(b"abababababababab").is_some());
        assert!(weak(b"9f1c2e7a5b3d4c6e8f0a1b2c3d4e5f60").is_none());
        assert!(weak(nonce().as_bytes()).is_none());
    }
}
