//! One POST to the receiver over HTTP/1.1 (hyper), on a kept connection
//! or a new one, TLS by rustls when the URL is https.

use super::target::Target;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{AUTHORIZATION, CONTENT_ENCODING, CONTENT_TYPE, HOST, USER_AGENT};
use hyper::{HeaderMap, Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// A response body longer than this is not read to its end (the connection
/// is closed instead of kept).
pub(super) const MAX_RESPONSE_BODY: usize = 64 * 1024;
pub(super) const USER_AGENT_VALUE: &str = concat!("scalelab/", env!("CARGO_PKG_VERSION"));

/// The rustls client configuration: Mozilla roots and the host name checked,
/// or any certificate when `insecure`; ALPN offers only `http/1.1`.
pub(super) fn tls_connector(insecure: bool) -> Result<tokio_rustls::TlsConnector, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("--remote-write: TLS: {e}"))?;
    let mut config = if insecure {
        builder.dangerous().with_custom_certificate_verifier(Arc::new(AcceptAny(provider))).with_no_client_auth()
    } else {
        let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// Accepts every server certificate but still checks handshake signatures.
/// The same verifier as `scalelab_wire::tls`'s: this crate imports none of
/// ours (docs/architecture.md), and wire would bring the SQL clients along.
#[derive(Debug)]
pub(super) struct AcceptAny(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

pub(super) type Sender = SendRequest<Full<Bytes>>;
pub(super) type Tls = (tokio_rustls::TlsConnector, ServerName<'static>);

/// A response: its status and the start of its body.
pub(super) struct Answer {
    pub(super) status: StatusCode,
    pub(super) body: Vec<u8>,
}

/// POSTs `body`, on the kept connection when there is one (once more on a
/// new one if that fails before an answer: the receiver may have closed it
/// while idle). The connection is kept for the next request when the
/// response was read to its end.
pub(super) async fn post(conn: &mut Option<Sender>, target: &Target, tls: Option<&Tls>, body: Bytes) -> Result<Answer, String> {
    let mut reused = false;
    let mut sender = match conn.take() {
        Some(s) if !s.is_closed() => {
            reused = true;
            s
        }
        _ => connect(target, tls).await?,
    };
    let response = loop {
        let request = build_request(target, body.clone())?;
        let sent = match sender.ready().await {
            Ok(()) => sender.send_request(request).await,
            Err(e) => Err(e),
        };
        match sent {
            Ok(r) => break r,
            Err(_) if reused => {
                reused = false;
                sender = connect(target, tls).await?;
            }
            Err(e) => return Err(format!("sending the request: {}", chain(&e))),
        }
    };
    let (parts, mut incoming) = response.into_parts();
    let mut body = Vec::new();
    let mut complete = false;
    while body.len() <= MAX_RESPONSE_BODY {
        match incoming.frame().await {
            None => {
                complete = true;
                break;
            }
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    body.extend_from_slice(&data);
                }
            }
            Some(Err(_)) => break,
        }
    }
    if complete && !closes(&parts.headers) {
        *conn = Some(sender);
    }
    Ok(Answer { status: parts.status, body })
}

/// Whether the receiver said it closes the connection.
pub(super) fn closes(headers: &HeaderMap) -> bool {
    headers.get_all(hyper::header::CONNECTION).iter().any(|v| v.to_str().is_ok_and(|v| v.to_ascii_lowercase().contains("close")))
}

pub(super) fn build_request(target: &Target, body: Bytes) -> Result<Request<Full<Bytes>>, String> {
    let mut b = Request::builder()
        .method(Method::POST)
        .uri(target.path.as_str())
        .header(HOST, target.host_header.as_str())
        .header(CONTENT_ENCODING, "snappy")
        .header(CONTENT_TYPE, "application/x-protobuf")
        .header("X-Prometheus-Remote-Write-Version", "0.1.0")
        .header(USER_AGENT, USER_AGENT_VALUE);
    if let Some(auth) = &target.authorization {
        b = b.header(AUTHORIZATION, auth.as_str());
    }
    b.body(Full::new(body)).map_err(|e| format!("building the request: {e}"))
}

/// A new connection: the first of the host's addresses that accepts, TLS
/// when https, then the HTTP/1.1 handshake.
pub(super) async fn connect(target: &Target, tls: Option<&Tls>) -> Result<Sender, String> {
    let addrs =
        tokio::net::lookup_host((target.host.as_str(), target.port)).await.map_err(|e| format!("cannot resolve {}: {e}", target.host))?;
    let mut last = None;
    let mut stream = None;
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(s) => {
                stream = Some((s, addr));
                break;
            }
            Err(e) => last = Some(format!("connecting to {addr}: {e}")),
        }
    }
    let Some((stream, addr)) = stream else {
        return Err(last.unwrap_or_else(|| format!("{} resolves to no address", target.host)));
    };
    let _ = stream.set_nodelay(true);
    match tls {
        None => handshake(stream).await,
        Some((connector, name)) => {
            let s = connector.connect(name.clone(), stream).await.map_err(|e| format!("TLS with {addr}: {e}"))?;
            handshake(s).await
        }
    }
}

pub(super) async fn handshake<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(io: S) -> Result<Sender, String> {
    let (sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(io)).await.map_err(|e| format!("HTTP handshake: {}", chain(&e)))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// An error and its causes, `: `-separated (hyper's own message alone says
/// little, e.g. "connection error").
pub(super) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s = format!("{s}: {c}");
        cause = c.source();
    }
    s
}
