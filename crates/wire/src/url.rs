//! The URL of a SQL target: `postgres://` or `mysql://`, with its TLS mode.

/// Which server protocol a URL speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// PostgreSQL.
    Postgres,
    /// MySQL or MariaDB.
    Mysql,
}

/// A parsed `postgres://` or `mysql://` URL.
#[derive(Clone, Debug)]
pub struct SqlUrl {
    /// The protocol.
    pub engine: Engine,
    /// User name (postgres / root when absent).
    pub user: String,
    /// Password, if any (never recorded).
    pub password: Option<String>,
    /// Host name or address.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Database name.
    pub database: String,
    /// Unix socket (MySQL `?socket=/path`) or socket directory (PostgreSQL `?host=/dir`).
    pub socket: Option<String>,
    /// TLS as the URL asks for it (`sslmode=` / `ssl-mode=`); off by default.
    pub tls: SqlTls,
}

/// Whether and how a SQL connection is encrypted, from the URL.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SqlTls {
    /// Plain TCP or a unix socket (no option, `sslmode=disable`, `ssl-mode=DISABLED`).
    #[default]
    Off,
    /// Encrypted, the certificate not checked (`sslmode=require`, `ssl-mode=REQUIRED`),
    /// as libpq and the mysql client do for these modes.
    Require,
    /// Encrypted, the certificate checked against `root_cert` (a PEM file:
    /// `sslrootcert=` / `ssl-ca=`) or the Mozilla roots, and the host name
    /// checked (`sslmode=verify-full`, `ssl-mode=VERIFY_IDENTITY`).
    VerifyFull {
        /// PEM file of the trusted root(s); None: the compiled-in Mozilla roots.
        root_cert: Option<String>,
    },
}

impl SqlUrl {
    /// Parses `postgres://user:pass@host:port/db` or `mysql://user:pass@host:port/db[?socket=/path]`.
    /// A password the URL does not hold (a password on the command line is
    /// visible in `ps` for the whole run) is looked up where the engine's own
    /// clients look: `PGPASSWORD` then `~/.pgpass` (`PGPASSFILE`), or
    /// `MYSQL_PWD` then `~/.my.cnf`'s `[client]` section.
    pub fn parse(text: &str) -> Result<SqlUrl, String> {
        let mut url = Self::parse_only(text)?;
        if url.password.is_none() {
            url.password = match PASSWORD_FILE.get() {
                Some(p) => Some(p.clone()),
                None => lookup_password(&url, &|k| std::env::var(k).ok())?,
            };
        }
        Ok(url)
    }

    /// [`SqlUrl::parse`] without the password lookup.
    pub fn parse_only(text: &str) -> Result<SqlUrl, String> {
        let url = url::Url::parse(text).map_err(|e| format!("invalid URL '{}': {e}", scalelab_core::redact_url(text)))?;
        let engine = match url.scheme() {
            "postgres" | "postgresql" => Engine::Postgres,
            "mysql" | "mariadb" => Engine::Mysql,
            s => return Err(format!("unsupported scheme '{s}': use postgres:// or mysql://")),
        };
        let decode =
            |s: &str| url::form_urlencoded::parse(format!("x={s}").as_bytes()).next().map(|(_, v)| v.into_owned()).unwrap_or_default();
        let user = match url.username() {
            "" if engine == Engine::Postgres => "postgres".to_string(),
            "" => "root".to_string(),
            u => decode(u),
        };
        let database = url.path().trim_start_matches('/').to_string();
        if database.is_empty() {
            return Err(format!("no database in '{}': add /DBNAME", scalelab_core::redact_url(text)));
        }
        let mut socket = None;
        let (mut mode, mut root_cert) = (None::<String>, None::<String>);
        for (k, v) in url.query_pairs() {
            match (engine, k.as_ref()) {
                (Engine::Mysql, "socket") | (Engine::Postgres, "host") => socket = Some(v.into_owned()),
                (Engine::Postgres, "sslmode") | (Engine::Mysql, "ssl-mode") => mode = Some(v.into_owned()),
                (Engine::Postgres, "sslrootcert") | (Engine::Mysql, "ssl-ca") => root_cert = Some(v.into_owned()),
                _ => {
                    return Err(format!(
                        "unsupported URL option '{k}' (supported: postgres ?host=/socketdir, sslmode=, sslrootcert=; \
                         mysql ?socket=/path, ssl-mode=, ssl-ca=)"
                    ))
                }
            }
        }
        let tls = parse_tls(engine, mode.as_deref(), root_cert)?;
        if tls != SqlTls::Off && socket.is_some() {
            return Err("TLS (sslmode / ssl-mode) is for TCP connections, not with a unix socket: drop one of the two".into());
        }
        Ok(SqlUrl {
            engine,
            user,
            password: url.password().map(decode),
            host: url.host_str().unwrap_or("127.0.0.1").trim_start_matches('[').trim_end_matches(']').to_string(),
            port: url.port().unwrap_or(if engine == Engine::Postgres { 5432 } else { 3306 }),
            database,
            socket,
            tls,
        })
    }

    /// The URL as recorded: never with the password.
    pub fn redacted(&self) -> String {
        let scheme = if self.engine == Engine::Postgres { "postgres" } else { "mysql" };
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        let mut s = format!("{scheme}://{}@{host}:{}/{}", self.user, self.port, self.database);
        if let Some(sock) = &self.socket {
            s.push_str(if self.engine == Engine::Postgres { "?host=" } else { "?socket=" });
            s.push_str(sock);
        }
        let pg = self.engine == Engine::Postgres;
        match &self.tls {
            SqlTls::Off => {}
            SqlTls::Require => s.push_str(if pg { "?sslmode=require" } else { "?ssl-mode=REQUIRED" }),
            SqlTls::VerifyFull { root_cert } => {
                s.push_str(if pg { "?sslmode=verify-full" } else { "?ssl-mode=VERIFY_IDENTITY" });
                if let Some(path) = root_cert {
                    s.push_str(if pg { "&sslrootcert=" } else { "&ssl-ca=" });
                    s.push_str(path);
                }
            }
        }
        s
    }
}

/// The password of `--password-file`, read once at the start.
static PASSWORD_FILE: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Sets the password [`SqlUrl::parse`] gives a URL that holds none
/// (`--password-file`), before the environment and the engine's files.
pub fn set_password_file(password: String) {
    let _ = PASSWORD_FILE.set(password);
}

/// The largest password file read (`~/.pgpass`, `~/.my.cnf`): a secret
/// file is small; `/dev/zero` would be read until memory runs out.
const SECRET_FILE_MAX: u64 = 64 * 1024;

/// Reads a file that holds secrets: a regular file (not a fifo or a
/// device), not readable by group or others (as libpq and ssh require),
/// at most [`SECRET_FILE_MAX`] bytes. None when it does not exist.
pub fn read_secret_file(path: &std::path::Path, what: &str) -> Result<Option<String>, String> {
    read_config_file(path, what, true)
}

/// Reads a regular file of at most [`SECRET_FILE_MAX`] bytes; `private`:
/// one that holds secrets, refused when group or others may read it. None
/// when it does not exist.
fn read_config_file(path: &std::path::Path, what: &str, private: bool) -> Result<Option<String>, String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{what} {}: {e}", path.display())),
    };
    if !meta.is_file() {
        return Err(format!("{what} {} is not a regular file: give a file", path.display()));
    }
    if private && meta.permissions().mode() & 0o077 != 0 {
        return Err(format!("{what} {} is readable by group or others: chmod 600 it", path.display()));
    }
    if meta.len() > SECRET_FILE_MAX {
        return Err(format!("{what} {} is larger than {} KiB: not a password file", path.display(), SECRET_FILE_MAX / 1024));
    }
    let mut text = String::new();
    use std::io::Read as _;
    std::fs::File::open(path)
        .and_then(|f| f.take(SECRET_FILE_MAX).read_to_string(&mut text))
        .map_err(|e| format!("{what} {}: {e}", path.display()))?;
    Ok(Some(text))
}

/// The password for `url` from the environment (`env` reads a variable) and
/// the engine's password file, as its own clients find it; None when
/// neither has one. The secret is never printed: errors name the file only.
pub fn lookup_password(url: &SqlUrl, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<String>, String> {
    let home = || env("HOME").map(std::path::PathBuf::from);
    match url.engine {
        Engine::Postgres => {
            // As libpq: a service's own parameters come before the environment.
            if let Some(service) = env("PGSERVICE").filter(|s| !s.is_empty()) {
                if let Some(p) = service_password(&service, env)? {
                    return Ok(Some(p));
                }
            }
            if let Some(p) = env("PGPASSWORD").filter(|p| !p.is_empty()) {
                return Ok(Some(p));
            }
            let Some(path) = env("PGPASSFILE").map(std::path::PathBuf::from).or_else(|| home().map(|h| h.join(".pgpass"))) else {
                return Ok(None);
            };
            let Some(text) = read_secret_file(&path, "password file")? else { return Ok(None) };
            let host = if url.socket.is_some() { "localhost".to_string() } else { url.host.clone() };
            let want = [host, url.port.to_string(), url.database.clone(), url.user.clone()];
            Ok(text.lines().filter(|l| !l.trim_start().starts_with('#')).find_map(|line| {
                let fields = pgpass_fields(line);
                let matches = fields.len() == 5 && fields[..4].iter().zip(&want).all(|(f, w)| f == "*" || f == w);
                matches.then(|| fields[4].clone())
            }))
        }
        Engine::Mysql => {
            if let Some(p) = env("MYSQL_PWD").filter(|p| !p.is_empty()) {
                return Ok(Some(p));
            }
            let Some(path) = home().map(|h| h.join(".my.cnf")) else { return Ok(None) };
            let Some(text) = read_secret_file(&path, "option file")? else { return Ok(None) };
            let mut in_client = false;
            for line in text.lines().map(str::trim) {
                if line.starts_with('[') {
                    in_client = line.eq_ignore_ascii_case("[client]");
                } else if in_client {
                    if let Some((k, v)) = line.split_once('=') {
                        if k.trim() == "password" {
                            let v = v.trim();
                            let unquoted = v
                                .strip_prefix('"')
                                .and_then(|v| v.strip_suffix('"'))
                                .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')));
                            return Ok(Some(unquoted.unwrap_or(v).to_string()));
                        }
                    }
                }
            }
            Ok(None)
        }
    }
}

/// The `password` of the service `name` (`PGSERVICE`), looked up as libpq
/// does: the user's file (`PGSERVICEFILE`, else `~/.pg_service.conf`), then
/// the system's (`PGSYSCONFDIR/pg_service.conf`, else Debian's
/// `/etc/postgresql-common/pg_service.conf`). None when the service sets no
/// password; an error when no file defines the service (libpq refuses too).
fn service_password(name: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<String>, String> {
    let user = env("PGSERVICEFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| env("HOME").map(|h| std::path::Path::new(&h).join(".pg_service.conf")));
    let system = std::path::Path::new(&env("PGSYSCONFDIR").unwrap_or_else(|| "/etc/postgresql-common".into())).join("pg_service.conf");
    let mut looked = Vec::new();
    for (path, own) in user.into_iter().map(|p| (p, true)).chain([(system, false)]) {
        // The user's file may hold passwords: it is read as one (private,
        // regular, small). The system's is world-readable by design: bounded.
        let text = read_config_file(&path, "service file", own)?;
        looked.push(path.display().to_string());
        let Some(text) = text else { continue };
        if let Some(section) = service_section(&text, name) {
            return Ok(section.into_iter().find_map(|(k, v)| (k == "password").then_some(v)));
        }
    }
    Err(format!("PGSERVICE '{}': no such service in {}", scalelab_core::escape_control(name), looked.join(" or ")))
}

/// The `key=value` lines of section `[name]` of a service file; None when
/// the file has no such section.
fn service_section(text: &str, name: &str) -> Option<Vec<(String, String)>> {
    let mut found = None;
    let mut inside = false;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = section == name;
            if inside {
                found.get_or_insert_with(Vec::new);
            }
        } else if inside {
            if let Some((k, v)) = line.split_once('=') {
                found.get_or_insert_with(Vec::new).push((k.trim().to_string(), v.trim().to_string()));
            }
        }
    }
    found
}

/// The fields of a `.pgpass` line, `\:` and `\\` unescaped.
fn pgpass_fields(line: &str) -> Vec<String> {
    let (mut fields, mut cur, mut chars) = (Vec::new(), String::new(), line.chars());
    while let Some(c) = chars.next() {
        match c {
            '\\' => cur.extend(chars.next()),
            ':' => fields.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    fields.push(cur);
    fields
}

/// Reads `sslmode` (PostgreSQL: disable, require, verify-full) or `ssl-mode`
/// (MySQL: DISABLED, REQUIRED, VERIFY_IDENTITY) and the root certificate
/// option; modes that would silently fall back to plain text (prefer, allow,
/// PREFERRED) or check less than they say (verify-ca, VERIFY_CA) are refused.
fn parse_tls(engine: Engine, mode: Option<&str>, root_cert: Option<String>) -> Result<SqlTls, String> {
    let (opt, ca) = if engine == Engine::Postgres { ("sslmode", "sslrootcert") } else { ("ssl-mode", "ssl-ca") };
    let tls = match (engine, mode.map(str::to_ascii_lowercase).as_deref()) {
        (_, None) | (Engine::Postgres, Some("disable")) | (Engine::Mysql, Some("disabled")) => SqlTls::Off,
        (Engine::Postgres, Some("require")) | (Engine::Mysql, Some("required")) => SqlTls::Require,
        (Engine::Postgres, Some("verify-full")) | (Engine::Mysql, Some("verify_identity")) => SqlTls::VerifyFull { root_cert: None },
        (_, Some(_)) => {
            let supported =
                if engine == Engine::Postgres { "disable, require, verify-full" } else { "DISABLED, REQUIRED, VERIFY_IDENTITY" };
            return Err(format!("unsupported {opt}={} (supported: {supported})", mode.unwrap_or_default()));
        }
    };
    match (tls, root_cert) {
        (SqlTls::VerifyFull { .. }, root_cert) => Ok(SqlTls::VerifyFull { root_cert }),
        (tls, None) => Ok(tls),
        (_, Some(_)) => Err(format!("{ca}= needs {opt}={}", if engine == Engine::Postgres { "verify-full" } else { "VERIFY_IDENTITY" })),
    }
}

#[cfg(test)]
mod tests {
    /// Issue 39 item 10: a password not in the URL comes from PGPASSWORD,
    /// ~/.pgpass, MYSQL_PWD or ~/.my.cnf; a secret file readable by others,
    /// or not a regular file, is refused.
    #[test]
    fn passwords_come_from_the_environment_and_the_engines_files() {
        use std::os::unix::fs::PermissionsExt;
        let home = std::env::temp_dir().join(format!("scalelab-pw-{}", std::process::id()));
        std::fs::create_dir_all(&home).unwrap();
        let h = home.display().to_string();
        let pg = SqlUrl::parse_only("postgres://bob@db.test:5433/app").unwrap();
        let my = SqlUrl::parse_only("mysql://root@127.0.0.1/app").unwrap();
        let env = |vars: Vec<(&'static str, String)>| move |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone());
        assert_eq!(lookup_password(&pg, &env(vec![("PGPASSWORD", "s3".into()), ("HOME", h.clone())])).unwrap().as_deref(), Some("s3"));
        assert_eq!(lookup_password(&my, &env(vec![("MYSQL_PWD", "m1".into())])).unwrap().as_deref(), Some("m1"));
        assert_eq!(lookup_password(&pg, &env(vec![("HOME", h.clone())])).unwrap(), None);

        let pgpass = home.join(".pgpass");
        std::fs::write(&pgpass, "# comment\nother:5433:app:bob:no\ndb.test:*:app:bob:pa\\:ss\n").unwrap();
        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(lookup_password(&pg, &env(vec![("HOME", h.clone())])).unwrap().as_deref(), Some("pa:ss"));
        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = lookup_password(&pg, &env(vec![("HOME", h.clone())])).unwrap_err();
        assert!(err.contains("chmod 600") && !err.contains("pa:ss"), "{err}");
        let err = lookup_password(&pg, &env(vec![("PGPASSFILE", "/dev/zero".into())])).unwrap_err();
        assert!(err.contains("not a regular file"), "{err}");

        let cnf = home.join(".my.cnf");
        std::fs::write(&cnf, "[mysql]\npassword=wrong\n[client]\nuser=root\npassword = \"c n f\"\n").unwrap();
        std::fs::set_permissions(&cnf, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(lookup_password(&my, &env(vec![("HOME", h.clone())])).unwrap().as_deref(), Some("c n f"));
        std::fs::remove_dir_all(&home).unwrap();
    }

    #[test]
    fn a_pgservice_password_comes_before_the_environment() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("scalelab-svc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("services.conf");
        std::fs::write(&file, "# services\n[other]\npassword=no\n[bench]\nhost=db.test\npassword = s3rv\n[nopw]\nuser=bob\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let pg = SqlUrl::parse_only("postgres://bob@db.test:5433/app").unwrap();
        let (f, d) = (file.display().to_string(), dir.display().to_string());
        let env = |service: &'static str| {
            let (f, d) = (f.clone(), d.clone());
            move |k: &str| match k {
                "PGSERVICE" => Some(service.to_string()),
                "PGSERVICEFILE" => Some(f.clone()),
                "PGSYSCONFDIR" => Some(d.clone()),
                "PGPASSWORD" => Some("from-env".to_string()),
                _ => None,
            }
        };
        assert_eq!(lookup_password(&pg, &env("bench")).unwrap().as_deref(), Some("s3rv"));
        // A service without a password leaves it to PGPASSWORD, as libpq.
        assert_eq!(lookup_password(&pg, &env("nopw")).unwrap().as_deref(), Some("from-env"));
        let err = lookup_password(&pg, &env("missing")).unwrap_err();
        assert!(err.contains("PGSERVICE 'missing': no such service") && !err.contains("s3rv"), "{err}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(lookup_password(&pg, &env("bench")).unwrap_err().contains("chmod 600"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    use super::*;

    #[test]
    fn urls_parse_and_redact() {
        let u = SqlUrl::parse("postgres://bob:s%40cret@127.0.0.1:5433/bench").unwrap();
        assert_eq!((u.engine, u.user.as_str(), u.password.as_deref(), u.port), (Engine::Postgres, "bob", Some("s@cret"), 5433));
        assert_eq!(u.redacted(), "postgres://bob@127.0.0.1:5433/bench");
        let m = SqlUrl::parse("mysql://root@localhost/db?socket=/tmp/my.sock").unwrap();
        assert_eq!((m.port, m.socket.as_deref()), (3306, Some("/tmp/my.sock")));
        assert!(!m.redacted().contains("***"));
        assert!(SqlUrl::parse("mysql://root@localhost/").is_err());
        assert!(SqlUrl::parse("mysql://u:pw@h/db?bogus=1").unwrap_err().contains("bogus"));
        assert_eq!(scalelab_core::redact_url("mysql://u:pw@h/db"), "mysql://u:***@h/db");
    }

    #[test]
    fn tls_options_parse_and_bad_combinations_are_refused() {
        let u = SqlUrl::parse("postgres://u@h/db?sslmode=require").unwrap();
        assert_eq!(u.tls, SqlTls::Require);
        assert_eq!(u.redacted(), "postgres://u@h:5432/db?sslmode=require");
        let u = SqlUrl::parse("postgres://u@h/db?sslmode=verify-full&sslrootcert=/ca.pem").unwrap();
        assert_eq!(u.tls, SqlTls::VerifyFull { root_cert: Some("/ca.pem".into()) });
        assert_eq!(SqlUrl::parse("postgres://u@h/db?sslmode=disable").unwrap().tls, SqlTls::Off);
        assert_eq!(SqlUrl::parse("mysql://u@h/db?ssl-mode=REQUIRED").unwrap().tls, SqlTls::Require);
        assert!(SqlUrl::parse("postgres://u@h/db?sslmode=prefer").unwrap_err().contains("unsupported sslmode=prefer"));
        assert!(SqlUrl::parse("mysql://u@h/db?ssl-mode=VERIFY_CA").unwrap_err().contains("VERIFY_IDENTITY"));
        assert!(SqlUrl::parse("postgres://u@h/db?sslmode=require&sslrootcert=/x").unwrap_err().contains("needs sslmode=verify-full"));
        assert!(SqlUrl::parse("postgres://u@h/db?sslmode=require&host=/tmp").unwrap_err().contains("unix socket"));
        assert!(SqlUrl::parse("mysql://u@h/db?sslmode=require").unwrap_err().contains("unsupported URL option 'sslmode'"));
    }
}
