//! TLS for SQL connections, when the URL asks for it (`sslmode=` for
//! PostgreSQL, `ssl-mode=` for MySQL): rustls with the ring provider, the
//! same stack as the HTTPS driver (whose base configuration, [`config`], is
//! here too), so no OpenSSL is linked.
//!
//! PostgreSQL: tokio-postgres negotiates TLS itself (SSLRequest, then the
//! handshake) through the [`MakeTlsConnect`] / [`TlsConnect`] traits, which
//! [`PgTls`] implements on top of tokio-rustls.

use crate::url::SqlTls;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use tokio_postgres::Socket;

/// The rustls client configuration for a TLS mode: `Require` encrypts
/// without checking the certificate (like libpq's `sslmode=require`);
/// `VerifyFull` checks it against `root_cert` (a PEM file) or the Mozilla
/// roots, and checks the host name.
pub fn client_config(mode: &SqlTls) -> Result<Arc<ClientConfig>, String> {
    match mode {
        SqlTls::Off => Err("TLS is off".into()),
        SqlTls::Require => Ok(config(true)),
        SqlTls::VerifyFull { root_cert: None } => Ok(config(false)),
        SqlTls::VerifyFull { root_cert: Some(path) } => {
            let mut roots = rustls::RootCertStore::empty();
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .map_err(|e| format!("root certificate {path}: {e}"))?
                .collect::<Result<_, _>>()
                .map_err(|e| format!("root certificate {path}: {e}"))?;
            if certs.is_empty() {
                return Err(format!("root certificate {path}: no PEM certificate in the file"));
            }
            for c in certs {
                roots.add(c).map_err(|e| format!("root certificate {path}: {e}"))?;
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?
                .with_root_certificates(roots)
                .with_no_client_auth();
            Ok(Arc::new(config))
        }
    }
}

/// A tokio-postgres TLS connector backed by rustls.
#[derive(Clone)]
pub struct PgTls(pub Arc<ClientConfig>);

impl MakeTlsConnect<Socket> for PgTls {
    type Stream = PgTlsStream;
    type TlsConnect = PgTlsConnect;
    type Error = rustls::pki_types::InvalidDnsNameError;

    fn make_tls_connect(&mut self, domain: &str) -> Result<PgTlsConnect, Self::Error> {
        Ok(PgTlsConnect { config: self.0.clone(), name: ServerName::try_from(domain.to_string())? })
    }
}

/// One TLS handshake to one server name.
pub struct PgTlsConnect {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl TlsConnect<Socket> for PgTlsConnect {
    type Stream = PgTlsStream;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<PgTlsStream>> + Send>>;

    fn connect(self, stream: Socket) -> Self::Future {
        Box::pin(async move {
            let tls = tokio_rustls::TlsConnector::from(self.config).connect(self.name, stream).await?;
            Ok(PgTlsStream(Box::new(tls)))
        })
    }
}

/// An established TLS stream to PostgreSQL.
pub struct PgTlsStream(Box<tokio_rustls::client::TlsStream<Socket>>);

impl AsyncRead for PgTlsStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for PgTlsStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

impl TlsStream for PgTlsStream {
    fn channel_binding(&self) -> ChannelBinding {
        // SCRAM channel binding is optional (tokio-postgres "prefer"); none offered.
        ChannelBinding::none()
    }
}

/// A rustls client configuration without ALPN (shared with the HTTPS driver, which
/// adds ALPN; SQL servers must not be offered `http/1.1`); `insecure` accepts any
/// certificate, otherwise the Mozilla roots and the host name are checked.
pub fn config(insecure: bool) -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions");
    let config = if insecure {
        builder.dangerous().with_custom_certificate_verifier(Arc::new(AcceptAny(provider))).with_no_client_auth()
    } else {
        let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    Arc::new(config)
}

/// Accepts every server certificate but still checks handshake signatures.
#[derive(Debug)]
struct AcceptAny(Arc<rustls::crypto::CryptoProvider>);

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
