//! What an HTTP sweep sends, checked before anything is stored or sent:
//! the requests (one URL or a weighted URL file), headers, body, timeouts,
//! which statuses count as success; and the request bytes serialized once.

use scalelab_core::redact_url;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use url::Url;

/// Why an HTTP configuration is unusable; each message names what to fix.
#[derive(Debug, thiserror::Error)]
pub enum HttpConfigError {
    #[error("invalid URL '{url}': {why}")]
    Url { url: String, why: String },
    #[error("cannot resolve host of '{0}'")]
    Resolve(String),
    #[error("all URLs must share one host and port (one connection per client): '{0}' differs from the first URL")]
    MixedHosts(String),
    #[error("invalid header '{0}': use 'Name: value'")]
    Header(String),
    #[error("header '{0}': the value holds a CR or LF character, which would inject headers; give it on one line")]
    HeaderValue(String),
    #[error("header '{name}': the value holds the control character {char}, which servers refuse or misread; remove it")]
    HeaderControl { name: String, char: String },
    #[error("header '{name}': {why}")]
    Framing { name: String, why: String },
    #[error("invalid method '{0}': use one word such as GET, POST or PUT")]
    Method(String),
    #[error("{file}:{line}: {why}")]
    UrlFile { file: String, line: usize, why: String },
    #[error("invalid expected status '{0}': use a code (200), a class (2xx), or a list (200,301)")]
    Status(String),
}

/// One request of the workload, with its share of the traffic.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RequestSpec {
    pub method: String,
    pub url: String,
    pub weight: u32,
}

/// Everything that defines the HTTP workload and how it is sent; an
/// agent is sent this very struct (docs/agents.md).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HttpConfig {
    pub requests: Vec<RequestSpec>,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub keepalive: bool,
    /// Whole-request timeout (write to last byte); a late response is a read timeout.
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// Statuses that count as success.
    pub expect: StatusMatch,
    /// Accept any TLS certificate.
    pub insecure: bool,
    /// Local addresses the connections are made from, in turn (empty: the
    /// kernel's choice). One source address has ~28k ephemeral ports toward
    /// one server address; 50k connections need two or more (127.0.0.0/8 on
    /// loopback).
    pub source_addrs: Vec<std::net::IpAddr>,
}

impl HttpConfig {
    /// The requests as a run's workload text: `GET URL`, each with its
    /// weight when there are several, URLs as `shown` writes them (redacted,
    /// or without the specimen's per-run port).
    pub fn workload_text(&self, shown: impl Fn(&str) -> String) -> String {
        let weights = self.requests.len() > 1;
        self.requests
            .iter()
            .map(|r| format!("{} {}{}", r.method, shown(&r.url), if weights { format!(" x{}", r.weight) } else { String::new() }))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// GET of one URL with keep-alive, 2xx as success and `timeout` for the
    /// request and the connect: the plain request a probe or a test sends.
    pub fn get(url: &str, timeout: Duration) -> HttpConfig {
        HttpConfig {
            requests: vec![RequestSpec { method: "GET".into(), url: url.into(), weight: 1 }],
            headers: Vec::new(),
            body: None,
            keepalive: true,
            timeout,
            connect_timeout: timeout,
            expect: StatusMatch::Any(vec![StatusRule::Class(2)]),
            insecure: false,
            source_addrs: Vec::new(),
        }
    }
}

/// Which response statuses count as success.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum StatusMatch {
    /// Any of these classes (2 = 2xx) or exact codes.
    Any(Vec<StatusRule>),
}

/// A class (`2xx`) or an exact code (`200`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum StatusRule {
    Class(u16),
    Code(u16),
}

impl StatusMatch {
    /// Parses `200`, `2xx`, `200,301,3xx`.
    pub fn parse(text: &str) -> Result<Self, HttpConfigError> {
        let err = || HttpConfigError::Status(text.to_string());
        let mut rules = Vec::new();
        for part in text.split(',').map(str::trim) {
            if let Some(c) = part.strip_suffix("xx") {
                let c: u16 = c.parse().map_err(|_| err())?;
                if !(1..=5).contains(&c) {
                    return Err(err());
                }
                rules.push(StatusRule::Class(c));
            } else {
                let c: u16 = part.parse().map_err(|_| err())?;
                if !(100..=599).contains(&c) {
                    return Err(err());
                }
                rules.push(StatusRule::Code(c));
            }
        }
        Ok(StatusMatch::Any(rules))
    }

    /// True when `status` counts as success.
    pub fn accepts(&self, status: u16) -> bool {
        let StatusMatch::Any(rules) = self;
        rules.iter().any(|r| match *r {
            StatusRule::Class(c) => status / 100 == c,
            StatusRule::Code(c) => status == c,
        })
    }
}

/// Parses a `--url-file`: one request per line, `[WEIGHT] [METHOD] URL`;
/// blank lines and `#` comments are skipped.
pub fn parse_url_file(name: &str, text: &str) -> Result<Vec<RequestSpec>, HttpConfigError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let err = |why: &str| HttpConfigError::UrlFile { file: name.to_string(), line: i + 1, why: why.to_string() };
        let mut parts: Vec<&str> = line.split_whitespace().collect();
        let mut weight = 1u32;
        if let Ok(w) = parts[0].parse::<u32>() {
            if w == 0 {
                return Err(err("weight must be at least 1"));
            }
            weight = w;
            parts.remove(0);
        }
        let (method, url) = match parts.as_slice() {
            [url] => ("GET".to_string(), url.to_string()),
            [m, url] if m.chars().all(|c| c.is_ascii_uppercase()) => (m.to_string(), url.to_string()),
            _ => return Err(err("expected '[WEIGHT] [METHOD] URL'")),
        };
        out.push(RequestSpec { method, url, weight });
    }
    if out.is_empty() {
        return Err(HttpConfigError::UrlFile { file: name.to_string(), line: 0, why: "no URL in file".into() });
    }
    Ok(out)
}

/// Refuses header names that are not one token and values holding CR or LF
/// (they would end the header, or the whole request head, early: header
/// injection) or another control character (a tab excepted, as RFC 9110
/// allows): servers answer 400 to them, or pass them on to logs and
/// terminals. Called before anything is stored or sent.
pub fn check_headers(headers: &[(String, String)]) -> Result<(), HttpConfigError> {
    for (name, value) in headers {
        if name.is_empty() || name.contains(|c: char| c.is_whitespace() || c.is_control() || c == ':') {
            return Err(HttpConfigError::Header(name.escape_debug().to_string()));
        }
        if value.contains(['\r', '\n']) {
            return Err(HttpConfigError::HeaderValue(name.clone()));
        }
        if let Some(c) = value.chars().find(|c| c.is_control() && *c != '\t') {
            return Err(HttpConfigError::HeaderControl { name: name.clone(), char: format!("U+{:04X}", u32::from(c)) });
        }
    }
    Ok(())
}

/// Headers that frame the request: at most one of each may be sent (two
/// `Host` headers are a 400 at nginx; two lengths let the server and a
/// proxy disagree on where the body ends).
const SINGLE: [&str; 3] = ["host", "content-length", "transfer-encoding"];

/// [`check_headers`], then the framing: a header that frames the request
/// given twice, a `Transfer-Encoding` (scalelab sends the body as it is,
/// with a Content-Length), or a `Content-Length` that is not the body's
/// length (the server would wait for bytes that never come, or read the
/// rest of the body as the next request) are refused. A `Content-Length`
/// equal to the body's length is sent once, in place of scalelab's.
pub fn check_request_headers(headers: &[(String, String)], body: Option<&[u8]>) -> Result<(), HttpConfigError> {
    check_headers(headers)?;
    let framing = |name: &str, why: String| Err(HttpConfigError::Framing { name: name.to_string(), why });
    for single in SINGLE {
        let given: Vec<&(String, String)> = headers.iter().filter(|(k, _)| k.eq_ignore_ascii_case(single)).collect();
        if let [(name, _), _, ..] = given.as_slice() {
            return framing(name, format!("given {} times; give it once", given.len()));
        }
    }
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("transfer-encoding") {
            return framing(
                name,
                "scalelab sends the body as given, framed by Content-Length; remove this header (a chunked body would be sent unchunked)"
                    .into(),
            );
        }
        if name.eq_ignore_ascii_case("content-length") {
            let len = body.map_or(0, <[u8]>::len);
            let bytes = |n: usize| format!("{n} byte{}", if n == 1 { "" } else { "s" });
            let given = value.trim();
            if given.is_empty() || !given.bytes().all(|b| b.is_ascii_digit()) {
                return framing(
                    name,
                    format!("'{given}' is not a length; remove the header (scalelab sets it to the body's {})", bytes(len)),
                );
            }
            if given.parse::<usize>().ok() != Some(len) {
                return framing(
                    name,
                    format!(
                        "{given} disagrees with the body ({}), which would desynchronise the connection; remove the header (scalelab sets it) or make it {len}",
                        bytes(len)
                    ),
                );
            }
        }
    }
    Ok(())
}

/// Refuses a method that is not one HTTP token (`-X 'GET / HTTP/1.1\r\n…'`
/// would inject a request line).
pub fn check_method(method: &str) -> Result<(), HttpConfigError> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if method.is_empty() || !method.chars().all(token) {
        return Err(HttpConfigError::Method(method.escape_debug().to_string()));
    }
    Ok(())
}

pub(crate) fn parse_url(text: &str) -> Result<Url, HttpConfigError> {
    let err = |why: String| HttpConfigError::Url { url: redact_url(text), why };
    let url = Url::parse(text).map_err(|e| err(e.to_string()))?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(err("scheme must be http or https".into()));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(err("no host".into()));
    }
    Ok(url)
}

/// `Authorization: Basic …` from the URL's `user:password@` (percent-decoded),
/// as curl sends it; None without credentials in the URL.
pub(crate) fn basic_auth(url: &Url) -> Option<String> {
    use base64::Engine as _;
    if url.username().is_empty() && url.password().is_none() {
        return None;
    }
    let decode = |s: &str| percent_encoding::percent_decode_str(s).collect::<Vec<u8>>();
    let mut pair = decode(url.username());
    pair.push(b':');
    pair.extend(decode(url.password().unwrap_or("")));
    Some(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair)))
}

pub(super) fn serialize_request(method: &str, url: &Url, host: &str, config: &HttpConfig) -> Vec<u8> {
    let mut path = url.path().to_string();
    if let Some(q) = url.query() {
        path.push('?');
        path.push_str(q);
    }
    // A header the user gave replaces scalelab's of the same name (Host,
    // User-Agent, Connection, Authorization, Content-Length): two of them
    // make servers answer 400, or disagree on the framing.
    let has = |n: &str| config.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(n));
    let mut s = format!("{method} {path} HTTP/1.1\r\n");
    if !has("host") {
        s.push_str(&format!("Host: {host}\r\n"));
    }
    if !has("user-agent") {
        s.push_str(concat!("User-Agent: scalelab/", env!("CARGO_PKG_VERSION"), "\r\n"));
    }
    if !config.keepalive && !has("connection") {
        s.push_str("Connection: close\r\n");
    }
    // An Authorization header given with -H wins over the URL's credentials, as with curl.
    if let Some(auth) = basic_auth(url).filter(|_| !has("authorization")) {
        s.push_str(&format!("Authorization: {auth}\r\n"));
    }
    for (k, v) in &config.headers {
        s.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(body) = &config.body {
        if !has("content-length") {
            s.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
    }
    s.push_str("\r\n");
    let mut bytes = s.into_bytes();
    if let Some(body) = &config.body {
        bytes.extend_from_slice(body);
    }
    bytes
}
