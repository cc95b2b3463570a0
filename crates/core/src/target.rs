//! [`Target`]: what is measured, parsed once (kind, host, port, loopback or
//! not, a display without the password) and handed to everything that needs
//! to know where the server is: the database probe, the search for the
//! server's process, the verdicts' "is there a link between client and
//! server". The drivers still parse the full URL for what only they use
//! (paths, credentials, TLS options).

use crate::text::redact_url;

/// The kind of a target, from its URL scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TargetKind {
    Http,
    Https,
    /// `h2c://`: HTTP/2 over cleartext TCP by prior knowledge (no upgrade,
    /// no TLS), as `http://` with `--http 2`.
    H2c,
    /// `postgres://` or `postgresql://`.
    Postgres,
    /// `mysql://` or `mariadb://`.
    Mysql,
    /// `redis://` or `rediss://` (TLS).
    Redis,
    /// The built-in specimen (`specimen` or `specimen:MODE`).
    Specimen,
    /// Any other scheme (`tcp://host:port`, `redis://...`): a server that
    /// can be observed (`watch`) but not loaded. Only [`Target::parse_any`]
    /// gives it.
    Other,
}

/// A family of `sweep` options that act on some kinds of target only; an
/// option of a family the target's kind does not take is refused (one
/// line, exit 2) rather than silently ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionFamily {
    /// How an HTTP request is made and sent.
    Http,
    /// Which HTTP version is spoken, and HTTP/2's streams per connection.
    Http2,
    /// A named workload (SQL and Redis).
    Workload,
    /// A SQL workload of the user's own.
    Sql,
    /// How Redis commands are sent and on what keys.
    Redis,
    /// The built-in specimen's behaviour.
    Specimen,
}

impl OptionFamily {
    /// Every family, in the order messages and docs list them.
    pub const ALL: [OptionFamily; 6] =
        [OptionFamily::Http, OptionFamily::Http2, OptionFamily::Workload, OptionFamily::Sql, OptionFamily::Redis, OptionFamily::Specimen];

    /// The family's options, as `sweep --help` names them.
    pub fn options(self) -> &'static [&'static str] {
        match self {
            OptionFamily::Http => {
                &["-H/--header", "-X/--method", "--body", "--body-file", "--no-keepalive", "--url-file", "--insecure", "--source-address"]
            }
            OptionFamily::Http2 => &["--http", "--streams"],
            OptionFamily::Workload => &["--workload"],
            OptionFamily::Sql => &["--workload-file", "--no-prepare"],
            OptionFamily::Redis => &["--pipeline", "--keyspace", "--value-size"],
            OptionFamily::Specimen => &["--specimen", "--work-us", "--workers", "--fix"],
        }
    }

    /// What the family is for, as a refusal says it ("they are for …").
    pub fn for_what(self) -> &'static str {
        match self {
            OptionFamily::Http => "HTTP targets",
            OptionFamily::Http2 => "http://, https:// and h2c:// targets",
            OptionFamily::Workload => "SQL and Redis targets",
            OptionFamily::Sql => "SQL targets",
            OptionFamily::Redis => "Redis targets",
            OptionFamily::Specimen => "a sweep without a target (the specimen)",
        }
    }

    /// The family an option (as [`OptionFamily::options`] names it) belongs to.
    pub fn of(option: &str) -> Option<OptionFamily> {
        Self::ALL.into_iter().find(|f| f.options().contains(&option))
    }
}

/// Which driver loads a kind of target (crates/drive): a new protocol is a
/// new driver and a new variant here, and every `match` on it then asks
/// for its case at compile time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// HTTP: HTTP/1.1 (`drive::http`) or HTTP/2 (`drive::http2`), as
    /// `--http` and the server's ALPN choose; the specimen speaks HTTP/1.1.
    Http,
    /// PostgreSQL and MySQL wire protocols (`drive::sql`).
    Sql,
    /// RESP, Redis's protocol (`drive::redis`).
    Redis,
}

/// What a kind of target is and takes, in one place: the sweep's option
/// checks, preflight, the probes and docs/targets.md's table read it here
/// rather than asking "is it SQL?" each in its own way. A new kind is an
/// entry in [`TargetKind::capabilities`], a driver and its tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// The kind in a sentence: "an HTTP target".
    pub noun: &'static str,
    /// The driver `sweep` loads it with (None: [`TargetKind::Other`], only watched).
    pub driver: Option<Driver>,
    /// The option families it takes.
    pub options: &'static [OptionFamily],
    /// Its connections stay open between requests whatever the options (a
    /// database session); HTTP's stay open only with keep-alive.
    pub persistent_connections: bool,
    /// It has a dataset that `sweep` prepares before the load (`--no-prepare` skips it).
    pub prepares: bool,
    /// The database probe polls its own internals (waits, locks, buffers).
    pub db_probe: bool,
    /// The server runs one process per connection (PostgreSQL): per-process
    /// limits (descriptors) are not the server's limit on connections.
    pub process_per_connection: bool,
    /// TLS is in the scheme (`https://`).
    pub tls: bool,
    /// The server admits clients by their address (pg_hba.conf, MySQL's
    /// `'user'@'host'`): clients from a client network's addresses need rules.
    pub admits_by_address: bool,
}

impl TargetKind {
    /// Every kind, in the order docs list them.
    pub const ALL: [TargetKind; 8] = [
        TargetKind::Http,
        TargetKind::Https,
        TargetKind::H2c,
        TargetKind::Postgres,
        TargetKind::Mysql,
        TargetKind::Redis,
        TargetKind::Specimen,
        TargetKind::Other,
    ];

    /// What this kind is and takes.
    pub fn capabilities(self) -> Capabilities {
        const HTTP: Capabilities = Capabilities {
            noun: "an HTTP target",
            driver: Some(Driver::Http),
            options: &[OptionFamily::Http, OptionFamily::Http2],
            persistent_connections: false,
            prepares: false,
            db_probe: false,
            process_per_connection: false,
            tls: false,
            admits_by_address: false,
        };
        const SQL: Capabilities = Capabilities {
            noun: "a SQL target",
            driver: Some(Driver::Sql),
            options: &[OptionFamily::Workload, OptionFamily::Sql],
            persistent_connections: true,
            prepares: true,
            db_probe: true,
            process_per_connection: false,
            tls: false,
            admits_by_address: true,
        };
        match self {
            TargetKind::Http => HTTP,
            TargetKind::Https => Capabilities { tls: true, ..HTTP },
            // HTTP/2 keeps its connections whatever the options: streams share them.
            TargetKind::H2c => Capabilities { noun: "an HTTP/2 target over cleartext (h2c)", persistent_connections: true, ..HTTP },
            TargetKind::Postgres => Capabilities { process_per_connection: true, ..SQL },
            TargetKind::Mysql => SQL,
            // A session per client, a keyspace to fill, its own INFO.
            TargetKind::Redis => Capabilities {
                noun: "a Redis target",
                driver: Some(Driver::Redis),
                options: &[OptionFamily::Workload, OptionFamily::Redis],
                persistent_connections: true,
                prepares: true,
                db_probe: false,
                process_per_connection: false,
                tls: false,
                admits_by_address: false,
            },
            // An HTTP server of its own: HTTP's options and its own.
            TargetKind::Specimen => {
                Capabilities { noun: "the specimen (no target)", options: &[OptionFamily::Http, OptionFamily::Specimen], ..HTTP }
            }
            TargetKind::Other => Capabilities { noun: "a target that is only watched", driver: None, options: &[], ..HTTP },
        }
    }

    /// How docs and messages name the kind: its URL scheme(s).
    pub fn schemes(self) -> &'static str {
        match self {
            TargetKind::Http => "http://",
            TargetKind::Https => "https://",
            TargetKind::H2c => "h2c://",
            TargetKind::Postgres => "postgres://, postgresql://",
            TargetKind::Mysql => "mysql://, mariadb://",
            TargetKind::Redis => "redis://, rediss://",
            TargetKind::Specimen => "none: the specimen",
            TargetKind::Other => "any other scheme",
        }
    }

    /// Of `given` (options as [`OptionFamily::options`] names them), those
    /// this kind does not take.
    pub fn refused<'a>(self, given: &[&'a str]) -> Vec<&'a str> {
        let takes = self.capabilities().options;
        given.iter().copied().filter(|o| OptionFamily::of(o).is_some_and(|f| !takes.contains(&f))).collect()
    }

    /// The port a URL of this kind means when it names none.
    pub fn default_port(self) -> Option<u16> {
        match self {
            TargetKind::Http | TargetKind::H2c => Some(80),
            TargetKind::Https => Some(443),
            TargetKind::Postgres => Some(5432),
            TargetKind::Mysql => Some(3306),
            TargetKind::Redis => Some(6379),
            TargetKind::Specimen | TargetKind::Other => None,
        }
    }

    fn of_scheme(scheme: &str) -> Option<TargetKind> {
        match scheme.to_ascii_lowercase().as_str() {
            "http" => Some(TargetKind::Http),
            "https" => Some(TargetKind::Https),
            "h2c" => Some(TargetKind::H2c),
            "postgres" | "postgresql" => Some(TargetKind::Postgres),
            "mysql" | "mariadb" => Some(TargetKind::Mysql),
            "redis" | "rediss" => Some(TargetKind::Redis),
            _ => None,
        }
    }
}

/// Why a target does not parse; the message names the fix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("the target is not a URL")]
    NotUrl,
    #[error("invalid URL '{0}': scheme must be http or https (or h2c:// for HTTP/2 without TLS, postgres://, mysql:// for a database, redis:// for Redis)")]
    Scheme(String),
    #[error("invalid URL '{0}': no host")]
    NoHost(String),
    #[error("invalid URL '{0}': '[' without ']' around an IPv6 address")]
    Bracket(String),
    #[error("invalid URL '{0}': the port must be a number from 1 to 65535")]
    Port(String),
}

/// A parsed target. `Debug` and `Display` show it without a password.
#[derive(Clone, PartialEq, Eq)]
pub struct Target {
    kind: TargetKind,
    host: String,
    port: Option<u16>,
    loopback: bool,
    given: String,
    redacted: String,
}

impl Target {
    /// Parses `scheme://[user[:password]@]host[:port][/...]` (IPv6 hosts in
    /// brackets), `specimen` or `specimen:MODE`. A database URL without a host
    /// (a unix socket given as an option) means 127.0.0.1, as its driver reads it.
    pub fn parse(text: &str) -> Result<Target, TargetError> {
        Self::parse_with(text, false)
    }

    /// Like [`Target::parse`], but any scheme is accepted (as
    /// [`TargetKind::Other`], with no default port): what a target that is
    /// only observed needs, e.g. `watch tcp://127.0.0.1:6379`.
    pub fn parse_any(text: &str) -> Result<Target, TargetError> {
        Self::parse_with(text, true)
    }

    fn parse_with(text: &str, any_scheme: bool) -> Result<Target, TargetError> {
        if text == "specimen" || text.starts_with("specimen:") {
            return Ok(Target::specimen(text.strip_prefix("specimen:").unwrap_or("")));
        }
        let (scheme, rest) = text.split_once("://").ok_or(TargetError::NotUrl)?;
        let redacted = redact_url(text);
        let kind = match TargetKind::of_scheme(scheme) {
            Some(kind) => kind,
            None if any_scheme && !scheme.is_empty() => TargetKind::Other,
            None => return Err(TargetError::Scheme(redacted.clone())),
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (host, after) = v6.split_once(']').ok_or_else(|| TargetError::Bracket(redacted.clone()))?;
            match after {
                "" => (host, None),
                p => (host, Some(p.strip_prefix(':').ok_or_else(|| TargetError::Port(redacted.clone()))?)),
            }
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }
        };
        let port = match port {
            None | Some("") => kind.default_port(),
            Some(p) => Some(p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| TargetError::Port(redacted.clone()))?),
        };
        let host = match host {
            // A database URL may name a unix socket in its options instead.
            "" if kind.capabilities().driver == Some(Driver::Sql) => "127.0.0.1",
            "" => return Err(TargetError::NoHost(redacted)),
            h => h,
        };
        let loopback = host == "localhost" || host.starts_with("127.") || host == "::1";
        Ok(Target { kind, host: host.to_string(), port, loopback, given: text.to_string(), redacted })
    }

    /// The built-in specimen in `mode` (`specimen:MODE`; `specimen` without one):
    /// on this machine, its port chosen when it starts.
    pub fn specimen(mode: &str) -> Target {
        let name = if mode.is_empty() { "specimen".to_string() } else { format!("specimen:{mode}") };
        Target { kind: TargetKind::Specimen, host: "127.0.0.1".into(), port: None, loopback: true, given: name.clone(), redacted: name }
    }

    pub fn kind(&self) -> TargetKind {
        self.kind
    }

    /// The host as written, without IPv6 brackets.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port given or the kind's default; `None` for the specimen (chosen when it starts).
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    /// On this machine's loopback (or the specimen): no link between client and server.
    pub fn is_loopback(&self) -> bool {
        self.loopback
    }

    /// `scheme://host:port`, lowercased, with the kind's default port filled
    /// in and no credentials or path: two URLs of one server give the same
    /// origin (the specimen's is its name).
    pub fn origin(&self) -> String {
        let Some((scheme, _)) = self.given.split_once("://") else { return self.given.clone() };
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        let port = self.port.map(|p| format!(":{p}")).unwrap_or_default();
        format!("{}://{}{port}", scheme.to_ascii_lowercase(), host.to_ascii_lowercase())
    }

    /// The text as given, credentials included: for the driver that connects with it, never to show or record.
    pub fn as_given(&self) -> &str {
        &self.given
    }

    /// The text to show and record: a password replaced by `***`.
    pub fn redacted(&self) -> &str {
        &self.redacted
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted)
    }
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("kind", &self.kind)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("loopback", &self.loopback)
            .field("url", &self.redacted)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_scheme_is_observable_but_not_loadable() {
        assert!(matches!(Target::parse("tcp://127.0.0.1:6379"), Err(TargetError::Scheme(_))));
        let t = Target::parse_any("tcp://127.0.0.1:6379").unwrap();
        assert_eq!((t.kind(), t.host(), t.port(), t.is_loopback()), (TargetKind::Other, "127.0.0.1", Some(6379), true));
        // No default port for a scheme we do not know; Redis is known now.
        assert_eq!(Target::parse_any("memcache://10.0.0.5").unwrap().port(), None);
        let r = Target::parse("rediss://:pw@10.0.0.5").unwrap();
        assert_eq!((r.kind(), r.port(), r.redacted()), (TargetKind::Redis, Some(6379), "rediss://:***@10.0.0.5"));
        assert_eq!(Target::parse_any("http://x/").unwrap().kind(), TargetKind::Http);
        assert!(Target::parse_any("://x").is_err());
    }

    #[test]
    fn origins_compare_scheme_host_and_port() {
        let o = |u: &str| Target::parse(u).unwrap().origin();
        assert_eq!(o("http://A:80/x?y"), "http://a:80");
        assert_eq!(o("http://a/"), "http://a:80");
        assert_eq!(o("HTTPS://u:p@a/"), "https://a:443");
        assert_eq!(o("http://[::1]:8080/"), "http://[::1]:8080");
        assert_ne!(o("http://a:81/"), o("http://a/"));
        assert_eq!(Target::specimen("pool").origin(), "specimen:pool");
    }

    fn hp(text: &str) -> (TargetKind, String, Option<u16>, bool) {
        let t = Target::parse(text).unwrap();
        (t.kind(), t.host().to_string(), t.port(), t.is_loopback())
    }

    #[test]
    fn kinds_hosts_and_default_ports() {
        assert_eq!(hp("http://127.0.0.1:8080/x?y=1"), (TargetKind::Http, "127.0.0.1".into(), Some(8080), true));
        assert_eq!(hp("http://example.com/"), (TargetKind::Http, "example.com".into(), Some(80), false));
        assert_eq!(hp("HTTPS://localhost"), (TargetKind::Https, "localhost".into(), Some(443), true));
        assert_eq!(hp("postgresql://u@10.0.0.5/db"), (TargetKind::Postgres, "10.0.0.5".into(), Some(5432), false));
        assert_eq!(hp("postgres://u@127.0.0.1:5433/bench"), (TargetKind::Postgres, "127.0.0.1".into(), Some(5433), true));
        assert_eq!(hp("mariadb://root@db.lan/x"), (TargetKind::Mysql, "db.lan".into(), Some(3306), false));
        assert_eq!(hp("mysql://root@/db?socket=/tmp/my.sock"), (TargetKind::Mysql, "127.0.0.1".into(), Some(3306), true));
        assert_eq!(hp("http://h:/"), (TargetKind::Http, "h".into(), Some(80), false), "an empty port is the default");
        assert_eq!(hp("h2c://127.0.0.1:8080/x"), (TargetKind::H2c, "127.0.0.1".into(), Some(8080), true));
        assert_eq!(hp("H2C://h/"), (TargetKind::H2c, "h".into(), Some(80), false));
        let h2c = TargetKind::H2c.capabilities();
        assert!(h2c.driver == Some(crate::Driver::Http) && h2c.persistent_connections && !h2c.tls);
        assert!(
            TargetKind::Specimen.refused(&["--streams"]) == ["--streams"]
                && TargetKind::H2c.refused(&["--streams", "-H/--header"]).is_empty()
        );
        assert!(TargetKind::Mysql.capabilities().driver == Some(crate::Driver::Sql) && TargetKind::Https.capabilities().tls);
    }

    #[test]
    fn ipv6_hosts() {
        assert_eq!(hp("http://[::1]:8080/"), (TargetKind::Http, "::1".into(), Some(8080), true));
        assert_eq!(hp("http://[::1]/"), (TargetKind::Http, "::1".into(), Some(80), true));
        assert_eq!(hp("postgres://u:p@[fe80::2]:6432/db"), (TargetKind::Postgres, "fe80::2".into(), Some(6432), false));
    }

    #[test]
    fn credentials_are_never_shown() {
        let t = Target::parse("mysql://u:s3cr@t@127.0.0.1:3307/db").unwrap();
        assert_eq!(t.redacted(), "mysql://u:***@127.0.0.1:3307/db");
        assert_eq!(t.to_string(), "mysql://u:***@127.0.0.1:3307/db");
        assert!(!format!("{t:?}").contains("s3cr"), "{t:?}");
        assert_eq!((t.host(), t.port()), ("127.0.0.1", Some(3307)), "the last @ ends the credentials");
        assert_eq!(t.as_given(), "mysql://u:s3cr@t@127.0.0.1:3307/db", "the driver still gets them");
        let e = Target::parse("ftp://u:pw@h/").unwrap_err().to_string();
        assert!(!e.contains("pw") && e.contains("u:***@h"), "{e}");
    }

    #[test]
    fn the_specimen() {
        let t = Target::parse("specimen:global-lock").unwrap();
        assert_eq!((t.kind(), t.port(), t.is_loopback(), t.redacted()), (TargetKind::Specimen, None, true, "specimen:global-lock"));
        assert_eq!(Target::parse("specimen").unwrap(), Target::specimen(""));
        assert_eq!(Target::specimen("scales").to_string(), "specimen:scales");
    }

    #[test]
    fn bad_input_is_an_error_naming_the_fix() {
        assert_eq!(Target::parse("127.0.0.1:8080"), Err(TargetError::NotUrl));
        assert_eq!(Target::parse(""), Err(TargetError::NotUrl));
        assert!(Target::parse("ftp://127.0.0.1/").unwrap_err().to_string().contains("scheme must be http or https"));
        assert!(matches!(Target::parse("http://"), Err(TargetError::NoHost(_))));
        assert!(matches!(Target::parse("http://user@/x"), Err(TargetError::NoHost(_))));
        assert!(matches!(Target::parse("http://[::1/"), Err(TargetError::Bracket(_))));
        assert!(matches!(Target::parse("http://[::1]x/"), Err(TargetError::Port(_))));
        for port in ["99999", "0", "8o", "-1"] {
            assert!(matches!(Target::parse(&format!("http://h:{port}/")), Err(TargetError::Port(_))), "{port}");
        }
        for e in [Target::parse("http://").unwrap_err(), Target::parse("http://[::1/").unwrap_err()] {
            assert!(e.to_string().starts_with("invalid URL"), "{e}");
        }
    }
}
