//! The receiver's URL, parsed once: where to connect, the request's
//! target and headers, and how messages show it (never its credentials).

use base64::Engine;
use hyper::Uri;
use rustls::pki_types::ServerName;
use std::net::Ipv6Addr;

/// The longest `last_error`, in characters.
pub(super) const MAX_ERROR_CHARS: usize = 600;

/// The parsed URL: where to connect, what to send, and how to show it.
pub(super) struct Target {
    /// Host name or address, without the brackets of an IPv6 address.
    pub(super) host: String,
    pub(super) port: u16,
    /// The request target: path and query.
    pub(super) path: String,
    /// The `Host` header: the port only when it is not the scheme's default.
    pub(super) host_header: String,
    /// `scheme://host:port/path`: what messages show.
    pub(super) shown: String,
    /// `Basic …` when the URL has credentials.
    pub(super) authorization: Option<String>,
    /// Strings that must never appear in a message (longest first).
    pub(super) secrets: Vec<String>,
    /// The TLS server name, for https.
    pub(super) server_name: Option<ServerName<'static>>,
}

impl Target {
    pub(super) fn parse(url: &str) -> Result<Target, String> {
        const W: &str = "--remote-write";
        let url = url.trim();
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(format!("{W}: expected a URL like http://host:9090/api/v1/write"));
        };
        let tls = match scheme.to_ascii_lowercase().as_str() {
            "http" => false,
            "https" => true,
            s if !s.is_empty() && s.len() <= 16 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)) => {
                return Err(format!("{W}: {s}:// is not supported; use http:// or https://"))
            }
            _ => return Err(format!("{W}: expected a URL like http://host:9090/api/v1/write")),
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let tail = tail.split('#').next().unwrap_or("");
        let path = if tail.starts_with('/') { tail.to_string() } else { format!("/{tail}") };
        if !path.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(format!("{W}: the path may hold only visible ASCII (percent-encode the rest)"));
        }
        if path.parse::<Uri>().is_err() {
            return Err(format!("{W}: the path is not a valid request target"));
        }

        let (userinfo, hostport) = match authority.rfind('@') {
            Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
            None => (None, authority),
        };
        let (host, bracketed, port) = if let Some(inner) = hostport.strip_prefix('[') {
            let Some((h, after)) = inner.split_once(']') else {
                return Err(format!("{W}: an IPv6 address needs its closing ] (http://[::1]:9090/…)"));
            };
            if h.parse::<Ipv6Addr>().is_err() {
                return Err(format!("{W}: [{h}] is not an IPv6 address"));
            }
            let port = match after {
                "" => None,
                p => match p.strip_prefix(':') {
                    Some(p) => Some(p),
                    None => return Err(format!("{W}: expected :port after the IPv6 address")),
                },
            };
            (h, true, port)
        } else {
            match hostport.rsplit_once(':') {
                Some((h, _)) if h.contains(':') => return Err(format!("{W}: an IPv6 address goes in brackets: http://[::1]:9090/…")),
                Some((h, p)) => (h, false, Some(p)),
                None => (hostport, false, None),
            }
        };
        if host.is_empty() {
            return Err(format!("{W}: the URL has no host"));
        }
        if !bracketed && !host.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b)) {
            return Err(format!("{W}: the host must be a name, an IPv4 address or an [IPv6] address"));
        }
        let default_port = if tls { 443 } else { 80 };
        let port = match port {
            None | Some("") => default_port,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => n,
                _ => return Err(format!("{W}: the port must be a number from 1 to 65535")),
            },
        };

        let shown_host = if bracketed { format!("[{host}]") } else { host.to_string() };
        let host_header = if port == default_port { shown_host.clone() } else { format!("{shown_host}:{port}") };
        if hyper::header::HeaderValue::from_str(&host_header).is_err() {
            return Err(format!("{W}: the host is not valid in a Host header"));
        }
        let scheme = if tls { "https" } else { "http" };
        let bare_path = path.split('?').next().unwrap_or("/");
        let shown = format!("{scheme}://{shown_host}:{port}{bare_path}");

        let (authorization, mut secrets) = match userinfo {
            None => (None, Vec::new()),
            Some(info) => {
                let (user, pass) = info.split_once(':').unwrap_or((info, ""));
                let (user, pass) = (percent_decode(user), percent_decode(pass));
                let mut pair = user.clone();
                pair.push(b':');
                pair.extend_from_slice(&pass);
                let token = base64::engine::general_purpose::STANDARD.encode(&pair);
                let raw_pass = info.split_once(':').map_or("", |(_, p)| p);
                let secrets = vec![
                    info.to_string(),
                    raw_pass.to_string(),
                    String::from_utf8_lossy(&pair).into_owned(),
                    String::from_utf8_lossy(&pass).into_owned(),
                    token.clone(),
                ];
                (Some(format!("Basic {token}")), secrets)
            }
        };
        secrets.retain(|s| !s.is_empty() && s != ":");
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();

        let server_name = if tls {
            match ServerName::try_from(host.to_string()) {
                Ok(n) => Some(n),
                Err(_) => return Err(format!("{W}: {shown_host} is not a valid TLS server name")),
            }
        } else {
            None
        };
        Ok(Target { host: host.to_string(), port, path, host_header, shown, authorization, secrets, server_name })
    }

    /// `message` as one line of at most [`MAX_ERROR_CHARS`], prefixed with
    /// the shown URL, with every credential replaced by `***`.
    pub(super) fn error(&self, message: &str) -> String {
        let mut line = one_line(&format!("remote write to {}: {message}", self.shown));
        for s in &self.secrets {
            line = line.replace(s.as_str(), "***");
        }
        if line.chars().count() > MAX_ERROR_CHARS {
            line = line.chars().take(MAX_ERROR_CHARS).collect::<String>() + "…";
        }
        line
    }
}

/// `%XX` decoded (a `%` not followed by two hex digits is kept as is).
pub(super) fn percent_decode(s: &str) -> Vec<u8> {
    pub(super) fn hex(b: Option<&u8>) -> Option<u8> {
        (*b? as char).to_digit(16).map(|d| d as u8)
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if let (Some(h), Some(l)) = (hex(b.get(i + 1)), hex(b.get(i + 2))) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// Control characters (newlines included) as spaces, ends trimmed.
pub(super) fn one_line(s: &str) -> String {
    s.trim().chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}
