//! TLS for https targets (rustls with the ring provider; Mozilla roots
//! compiled in, so nothing is fetched at run time).

use scalelab_wire::tls::config;
use std::sync::Arc;

/// A TLS connector; `insecure` accepts any certificate (self-signed test servers).
pub fn connector(insecure: bool) -> tokio_rustls::TlsConnector {
    let mut config = (*config(insecure)).clone();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    tokio_rustls::TlsConnector::from(Arc::new(config))
}
