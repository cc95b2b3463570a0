//! TLS for SQL connections, when the URL asks for it (`sslmode=` for
//! PostgreSQL, `ssl-mode=` for MySQL): rustls with the ring provider, the
//! same stack as the HTTPS driver, so no OpenSSL is linked.
//!
//! PostgreSQL: tokio-postgres negotiates TLS itself (SSLRequest, then the
//! handshake) through the [`MakeTlsConnect`] / [`TlsConnect`] traits, which
//! [`PgTls`] implements on top of tokio-rustls.

use super::SqlTls;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::ClientConfig;
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
pub(crate) fn client_config(mode: &SqlTls) -> Result<Arc<ClientConfig>, String> {
    match mode {
        SqlTls::Off => Err("TLS is off".into()),
        SqlTls::Require => Ok(crate::http::tls::config(true)),
        SqlTls::VerifyFull { root_cert: None } => Ok(crate::http::tls::config(false)),
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
pub(crate) struct PgTls(pub Arc<ClientConfig>);

impl MakeTlsConnect<Socket> for PgTls {
    type Stream = PgTlsStream;
    type TlsConnect = PgTlsConnect;
    type Error = rustls::pki_types::InvalidDnsNameError;

    fn make_tls_connect(&mut self, domain: &str) -> Result<PgTlsConnect, Self::Error> {
        Ok(PgTlsConnect { config: self.0.clone(), name: ServerName::try_from(domain.to_string())? })
    }
}

/// One TLS handshake to one server name.
pub(crate) struct PgTlsConnect {
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
pub(crate) struct PgTlsStream(Box<tokio_rustls::client::TlsStream<Socket>>);

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
