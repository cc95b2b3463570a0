//! Built-in datasets (`scalelab prepare`): sysbench's sbtest tables and
//! pgbench's tables, created with the peers' own DDL and value shapes and
//! loaded fast (COPY on PostgreSQL, 1000-row INSERTs on MySQL), so scalelab
//! and sysbench/pgbench can run on the very same tables.

use super::workload::{DatasetShape, Rng, NEWS_WORDS};
use futures_util::SinkExt;
use mysql_async::prelude::Queryable;
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use scalelab_wire::{mysql, pg, Engine, SqlUrl};
use std::fmt::Write as _;
use std::time::Duration;

/// A dataset `prepare` knows how to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dataset {
    /// sysbench's `sbtest1..N` (id, k, c, pad; index `k_N` on k).
    Sbtest,
    /// pgbench's accounts, branches, tellers and history.
    Pgbench,
    /// A read-mostly news site: categories, authors, articles with text, comments.
    News,
}

impl std::str::FromStr for Dataset {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "sbtest" => Ok(Dataset::Sbtest),
            "pgbench" => Ok(Dataset::Pgbench),
            "news" => Ok(Dataset::News),
            _ => Err(format!("unknown dataset '{s}': use sbtest, pgbench or news")),
        }
    }
}

/// What `prepare` should do.
#[derive(Clone, Debug)]
pub struct PrepareOptions {
    /// Which tables.
    pub dataset: Dataset,
    /// sbtest: number of tables; pgbench: scale factor (branches).
    pub scale: u32,
    /// Rows per table (sbtest) or accounts per branch (pgbench), 100 000 by
    /// default; news: articles per scale unit, 10 000 by default.
    pub rows: Option<u64>,
    /// MySQL storage engine (`innodb`, `myisam`); ignored by PostgreSQL.
    pub engine: Option<String>,
    /// Replace tables that exist.
    pub force: bool,
    /// Only drop the dataset's tables.
    pub drop: bool,
}

/// What `prepare` did.
#[derive(Clone, Debug, Default)]
pub struct PrepareSummary {
    /// Tables created (or dropped with `drop`).
    pub tables: Vec<String>,
    /// Rows loaded in all.
    pub rows: u64,
}

/// An administrative connection of either engine, for DDL, loading and inspection.
pub(crate) enum Admin {
    Pg(tokio_postgres::Client),
    My(mysql_async::Conn),
}

impl Admin {
    pub(crate) async fn connect(url: &SqlUrl, timeout: Duration) -> Result<Admin, Failure> {
        Ok(match url.engine {
            Engine::Postgres => Admin::Pg(pg::connect(url, timeout).await?),
            Engine::Mysql => Admin::My(mysql::connect(url, timeout).await?),
        })
    }

    async fn exec(&mut self, sql: &str) -> Result<(), Failure> {
        match self {
            Admin::Pg(c) => c.batch_execute(sql).await.map_err(|e| pg::classify(&e)),
            Admin::My(c) => c.query_drop(sql).await.map_err(|e| mysql::classify(&e)),
        }
        .map_err(|f| Failure::new(f.class, format!("{} (statement: {})", f.message, sql.chars().take(200).collect::<String>())))
    }

    /// The first column of every row, as text.
    async fn strings(&mut self, sql: &str) -> Result<Vec<Option<String>>, Failure> {
        match self {
            Admin::Pg(c) => {
                let msgs = c.simple_query(sql).await.map_err(|e| pg::classify(&e))?;
                Ok(msgs
                    .into_iter()
                    .filter_map(|m| match m {
                        tokio_postgres::SimpleQueryMessage::Row(r) => Some(r.get(0).map(str::to_string)),
                        _ => None,
                    })
                    .collect())
            }
            Admin::My(c) => c.query::<Option<String>, _>(sql).await.map_err(|e| mysql::classify(&e)),
        }
    }

    async fn int(&mut self, sql: &str) -> Result<i64, Failure> {
        Ok(self.strings(sql).await?.into_iter().next().flatten().and_then(|s| s.parse().ok()).unwrap_or(0))
    }

    pub(crate) async fn version(&mut self) -> Result<String, Failure> {
        let sql = match self {
            Admin::Pg(_) => "SELECT 'PostgreSQL ' || current_setting('server_version')",
            Admin::My(_) => "SELECT VERSION()",
        };
        Ok(self.strings(sql).await?.into_iter().next().flatten().unwrap_or_default())
    }

    /// Tables of the current schema (PostgreSQL) or database (MySQL).
    async fn tables(&mut self) -> Result<Vec<String>, Failure> {
        let sql = match self {
            Admin::Pg(_) => "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()",
            Admin::My(_) => "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()",
        };
        Ok(self.strings(sql).await?.into_iter().flatten().collect())
    }

    pub(crate) async fn shape(&mut self) -> Result<DatasetShape, Failure> {
        let tables = self.tables().await?;
        let mut shape = DatasetShape::default();
        while tables.iter().any(|t| *t == format!("sbtest{}", shape.sbtest_tables + 1)) {
            shape.sbtest_tables += 1;
        }
        if shape.sbtest_tables > 0 {
            shape.sbtest_rows = self.int("SELECT MAX(id) FROM sbtest1").await?;
        }
        if ["pgbench_accounts", "pgbench_branches", "pgbench_tellers", "pgbench_history"].iter().all(|t| tables.iter().any(|x| x == t)) {
            shape.pgbench_scale = self.int("SELECT COUNT(*) FROM pgbench_branches").await?;
            shape.pgbench_accounts = self.int("SELECT MAX(aid) FROM pgbench_accounts").await?;
        }
        if NEWS_TABLES.iter().all(|t| tables.iter().any(|x| x == t)) {
            shape.news_articles = self.int("SELECT MAX(id) FROM news_articles").await?;
            shape.news_authors = self.int("SELECT MAX(id) FROM news_authors").await?;
            shape.news_categories = self.int("SELECT MAX(id) FROM news_categories").await?;
        }
        Ok(shape)
    }

    pub(crate) async fn close(self) {
        if let Admin::My(c) = self {
            let _ = c.disconnect().await;
        }
    }
}

/// sysbench's value shape: `groups` groups of 11 random digits joined by '-'.
fn digits(rng: &mut Rng, groups: usize, out: &mut String) {
    for g in 0..groups {
        if g > 0 {
            out.push('-');
        }
        for _ in 0..11 {
            out.push((b'0' + rng.below(10) as u8) as char);
        }
    }
}

const NEWS_TABLES: [&str; 4] = ["news_comments", "news_articles", "news_authors", "news_categories"];

fn dataset_tables(opts: &PrepareOptions) -> Vec<String> {
    match opts.dataset {
        Dataset::Sbtest => (1..=opts.scale).map(|i| format!("sbtest{i}")).collect(),
        Dataset::Pgbench => ["pgbench_history", "pgbench_tellers", "pgbench_accounts", "pgbench_branches"].map(String::from).to_vec(),
        Dataset::News => NEWS_TABLES.map(String::from).to_vec(),
    }
}

/// Creates and loads (or drops) a dataset; `progress(done, total)` is called
/// as rows are loaded.
pub fn prepare(url: &SqlUrl, opts: &PrepareOptions, progress: &mut dyn FnMut(u64, u64)) -> Result<PrepareSummary, Failure> {
    if opts.scale == 0 {
        return Err(Failure::new(ErrorClass::Other, "--scale must be at least 1"));
    }
    let engine = match opts.engine.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("innodb") => "InnoDB",
        Some("myisam") => "MyISAM",
        Some(e) => return Err(Failure::new(ErrorClass::Other, format!("unknown --engine '{e}': use innodb or myisam"))),
    };
    scalelab_wire::runtime().block_on(async {
        let mut admin = Admin::connect(url, Duration::from_secs(10)).await?;
        let existing = admin.tables().await?;
        let mut wanted = dataset_tables(opts);
        if opts.drop && opts.dataset == Dataset::Sbtest {
            // --drop removes every sbtestN table, whatever --scale says.
            wanted = existing.iter().filter(|t| t.strip_prefix("sbtest").is_some_and(|n| n.parse::<u32>().is_ok())).cloned().collect();
        }
        let present: Vec<&String> = wanted.iter().filter(|t| existing.contains(t)).collect();
        if opts.drop || opts.force {
            for t in &present {
                admin.exec(&format!("DROP TABLE {t}")).await?;
            }
            if opts.drop {
                admin.close().await;
                return Ok(PrepareSummary { tables: present.into_iter().cloned().collect(), rows: 0 });
            }
        } else if !present.is_empty() {
            return Err(Failure::new(
                ErrorClass::Other,
                format!(
                    "table {} already exists in {}: add --force to replace the dataset, or --drop to remove it",
                    present[0],
                    url.redacted()
                ),
            ));
        }
        let default_rows = if opts.dataset == Dataset::News { 10_000 } else { 100_000 };
        let rows = opts.rows.unwrap_or(default_rows).max(1);
        let mut summary = PrepareSummary::default();
        match opts.dataset {
            Dataset::Sbtest => {
                let total = rows * u64::from(opts.scale);
                for t in 1..=opts.scale {
                    load_sbtest(&mut admin, url.engine, engine, t, rows, &mut |d| progress(summary.rows + d, total)).await?;
                    summary.rows += rows;
                    summary.tables.push(format!("sbtest{t}"));
                }
            }
            Dataset::Pgbench => {
                let scale = u64::from(opts.scale);
                let total = scale * rows + scale * 11;
                summary.rows = load_pgbench(&mut admin, url.engine, engine, scale, rows, &mut |d| progress(d, total)).await?;
                summary.tables = dataset_tables(opts);
            }
            Dataset::News => {
                let articles = u64::from(opts.scale) * rows;
                let total = articles * 6 + 20 + articles / 100 + 1;
                summary.rows = load_news(&mut admin, url.engine, engine, articles, &mut |d| progress(d, total)).await?;
                summary.tables = dataset_tables(opts);
            }
        }
        admin.close().await;
        Ok(summary)
    })
}

/// Loads rows (tab-separated lines for COPY, or value tuples for INSERT) in chunks.
async fn load_rows(
    admin: &mut Admin,
    table: &str,
    columns: &str,
    n: u64,
    row: &mut dyn FnMut(u64, &mut Rng, &mut Vec<String>),
    progress: &mut dyn FnMut(u64),
) -> Result<(), Failure> {
    let mut rng = Rng::new(table.len() as u64 * 7919 + n);
    let mut fields = Vec::new();
    match admin {
        Admin::Pg(c) => {
            let sink = c.copy_in::<_, bytes::Bytes>(&format!("COPY {table} ({columns}) FROM STDIN")).await.map_err(|e| pg::classify(&e))?;
            futures_util::pin_mut!(sink);
            let mut buf = String::with_capacity(1 << 17);
            for i in 1..=n {
                fields.clear();
                row(i, &mut rng, &mut fields);
                buf.push_str(&fields.join("\t"));
                buf.push('\n');
                if buf.len() >= 1 << 16 || i == n {
                    sink.send(bytes::Bytes::from(std::mem::take(&mut buf))).await.map_err(|e| pg::classify(&e))?;
                    progress(i);
                }
            }
            sink.as_mut().finish().await.map_err(|e| pg::classify(&e))?;
        }
        Admin::My(_) => {
            admin.exec("BEGIN").await?;
            let mut sql = String::new();
            let mut in_batch = 0;
            for i in 1..=n {
                fields.clear();
                row(i, &mut rng, &mut fields);
                if in_batch == 0 {
                    sql = format!("INSERT INTO {table} ({columns}) VALUES ");
                } else {
                    sql.push(',');
                }
                sql.push('(');
                for (j, f) in fields.iter().enumerate() {
                    if j > 0 {
                        sql.push(',');
                    }
                    if f == "NULL" || f.parse::<i64>().is_ok() {
                        sql.push_str(f);
                    } else {
                        let _ = write!(sql, "'{f}'");
                    }
                }
                sql.push(')');
                in_batch += 1;
                if in_batch == 1000 || i == n {
                    admin.exec(&sql).await?;
                    in_batch = 0;
                    progress(i);
                }
            }
            admin.exec("COMMIT").await?;
        }
    }
    Ok(())
}

async fn load_sbtest(
    admin: &mut Admin,
    kind: Engine,
    engine: &str,
    t: u32,
    rows: u64,
    progress: &mut dyn FnMut(u64),
) -> Result<(), Failure> {
    let ddl = match kind {
        Engine::Postgres => format!(
            "CREATE TABLE sbtest{t} (id SERIAL NOT NULL, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id))"
        ),
        Engine::Mysql => format!(
            "CREATE TABLE sbtest{t} (id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) ENGINE = {engine}"
        ),
    };
    admin.exec(&ddl).await?;
    let mut row = |i: u64, rng: &mut Rng, f: &mut Vec<String>| {
        f.push(i.to_string());
        f.push((1 + rng.below(rows)).to_string());
        let mut c = String::with_capacity(120);
        digits(rng, 10, &mut c);
        f.push(c);
        let mut pad = String::with_capacity(60);
        digits(rng, 5, &mut pad);
        f.push(pad);
    };
    load_rows(admin, &format!("sbtest{t}"), "id, k, c, pad", rows, &mut row, progress).await?;
    if kind == Engine::Postgres {
        admin.exec(&format!("SELECT setval('sbtest{t}_id_seq', {rows})")).await?;
    }
    admin.exec(&format!("CREATE INDEX k_{t} ON sbtest{t}(k)")).await?;
    if kind == Engine::Postgres {
        admin.exec(&format!("VACUUM ANALYZE sbtest{t}")).await?;
    }
    Ok(())
}

async fn load_pgbench(
    admin: &mut Admin,
    kind: Engine,
    engine: &str,
    scale: u64,
    per_branch: u64,
    progress: &mut dyn FnMut(u64),
) -> Result<u64, Failure> {
    let (ts, suffix) = match kind {
        Engine::Postgres => ("timestamp", " WITH (fillfactor = 100)".to_string()),
        Engine::Mysql => ("datetime", format!(" ENGINE = {engine}")),
    };
    for ddl in [
        format!(
            "CREATE TABLE pgbench_history (tid int, bid int, aid int, delta int, mtime {ts}, filler char(22)){}",
            if kind == Engine::Mysql { &suffix } else { "" }
        ),
        format!("CREATE TABLE pgbench_tellers (tid int not null, bid int, tbalance int, filler char(84)){suffix}"),
        format!("CREATE TABLE pgbench_accounts (aid int not null, bid int, abalance int, filler char(84)){suffix}"),
        format!("CREATE TABLE pgbench_branches (bid int not null, bbalance int, filler char(88)){suffix}"),
    ] {
        admin.exec(&ddl).await?;
    }
    let null = if kind == Engine::Postgres { "\\N" } else { "NULL" };
    let mut done = 0u64;
    let mut branches = |i: u64, _: &mut Rng, f: &mut Vec<String>| {
        f.extend([i.to_string(), "0".into(), null.into()]);
    };
    load_rows(admin, "pgbench_branches", "bid, bbalance, filler", scale, &mut branches, &mut |d| progress(d)).await?;
    done += scale;
    let mut tellers = |i: u64, _: &mut Rng, f: &mut Vec<String>| {
        f.extend([i.to_string(), ((i - 1) / 10 + 1).to_string(), "0".into(), null.into()]);
    };
    load_rows(admin, "pgbench_tellers", "tid, bid, tbalance, filler", scale * 10, &mut tellers, &mut |d| progress(done + d)).await?;
    done += scale * 10;
    let mut accounts = |i: u64, _: &mut Rng, f: &mut Vec<String>| {
        f.extend([i.to_string(), ((i - 1) / per_branch + 1).to_string(), "0".into(), String::new()]);
    };
    // MySQL: an empty string is written as '' by load_rows (it does not parse as a number).
    load_rows(admin, "pgbench_accounts", "aid, bid, abalance, filler", scale * per_branch, &mut accounts, &mut |d| progress(done + d))
        .await?;
    done += scale * per_branch;
    for (t, k) in [("pgbench_branches", "bid"), ("pgbench_tellers", "tid"), ("pgbench_accounts", "aid")] {
        admin.exec(&format!("ALTER TABLE {t} ADD PRIMARY KEY ({k})")).await?;
    }
    if kind == Engine::Postgres {
        admin.exec("VACUUM ANALYZE pgbench_branches, pgbench_tellers, pgbench_accounts, pgbench_history").await?;
    }
    Ok(done)
}

/// `YYYY-MM-DD HH:MM:SS` of a Unix time (UTC), for COPY and INSERT alike.
fn datetime(unix: i64) -> String {
    let (days, secs) = (unix.div_euclid(86_400), unix.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// Filler text: `min` to `min + extra - 1` words from a small vocabulary (no quotes, no tabs).
fn words(rng: &mut Rng, min: usize, extra: u64, out: &mut String) {
    let n = min + rng.below(extra) as usize;
    const FILL: [&str; 16] =
        ["the", "a", "of", "and", "in", "to", "for", "on", "with", "new", "said", "year", "people", "local", "report", "today"];
    for i in 0..n {
        if i > 0 {
            out.push(' ');
        }
        let r = rng.below(4);
        out.push_str(if r == 0 {
            NEWS_WORDS[rng.below(NEWS_WORDS.len() as u64) as usize]
        } else {
            FILL[rng.below(FILL.len() as u64) as usize]
        });
    }
}

/// The news site: 20 categories, one author per 100 articles, articles of
/// about 300 words over two years, five comments per article on average.
async fn load_news(admin: &mut Admin, kind: Engine, engine: &str, articles: u64, progress: &mut dyn FnMut(u64)) -> Result<u64, Failure> {
    let (ts, text, suffix) = match kind {
        Engine::Postgres => ("timestamp", "text", String::new()),
        Engine::Mysql => ("datetime", "text", format!(" ENGINE = {engine}")),
    };
    for ddl in [
        format!("CREATE TABLE news_categories (id int NOT NULL PRIMARY KEY, name varchar(40) NOT NULL){suffix}"),
        format!("CREATE TABLE news_authors (id int NOT NULL PRIMARY KEY, name varchar(60) NOT NULL, email varchar(80) NOT NULL){suffix}"),
        format!(
            "CREATE TABLE news_articles (id int NOT NULL PRIMARY KEY, category_id int NOT NULL, author_id int NOT NULL, \
             published {ts} NOT NULL, title varchar(200) NOT NULL, body {text} NOT NULL, views int NOT NULL){suffix}"
        ),
        format!(
            "CREATE TABLE news_comments (id int NOT NULL PRIMARY KEY, article_id int NOT NULL, author varchar(60) NOT NULL, \
             posted {ts} NOT NULL, body {text} NOT NULL){suffix}"
        ),
    ] {
        admin.exec(&ddl).await?;
    }
    let start = 1_700_000_000i64; // 2023-11-14
    let span = 2 * 365 * 86_400i64;
    let authors = (articles / 100).max(1);
    let mut done = 0u64;
    let mut categories = |i: u64, _: &mut Rng, f: &mut Vec<String>| {
        f.extend([i.to_string(), NEWS_WORDS[(i as usize - 1) % NEWS_WORDS.len()].to_string()]);
    };
    load_rows(admin, "news_categories", "id, name", 20, &mut categories, &mut |d| progress(d)).await?;
    done += 20;
    let mut author = |i: u64, _: &mut Rng, f: &mut Vec<String>| {
        f.extend([i.to_string(), format!("Author {i}"), format!("author{i}@news.example")]);
    };
    load_rows(admin, "news_authors", "id, name, email", authors, &mut author, &mut |d| progress(done + d)).await?;
    done += authors;
    let mut article = |i: u64, rng: &mut Rng, f: &mut Vec<String>| {
        let mut title = String::new();
        words(rng, 6, 6, &mut title);
        let mut body = String::with_capacity(2048);
        words(rng, 250, 100, &mut body);
        let when = start + (i as i64 * span / articles as i64);
        f.extend([
            i.to_string(),
            (1 + rng.below(20)).to_string(),
            (1 + rng.below(authors)).to_string(),
            datetime(when),
            title,
            body,
            rng.below(100_000).to_string(),
        ]);
    };
    load_rows(admin, "news_articles", "id, category_id, author_id, published, title, body, views", articles, &mut article, &mut |d| {
        progress(done + d)
    })
    .await?;
    done += articles;
    let comments = articles * 5;
    let mut comment = |i: u64, rng: &mut Rng, f: &mut Vec<String>| {
        let a = 1 + rng.below(articles);
        let mut body = String::new();
        words(rng, 10, 60, &mut body);
        f.extend([
            i.to_string(),
            a.to_string(),
            format!("reader{}", rng.below(10_000)),
            datetime(start + (a as i64 * span / articles as i64) + rng.below(86_400 * 3) as i64),
            body,
        ]);
    };
    load_rows(admin, "news_comments", "id, article_id, author, posted, body", comments, &mut comment, &mut |d| progress(done + d)).await?;
    done += comments;
    for ddl in [
        "CREATE INDEX news_articles_category ON news_articles (category_id, published)",
        "CREATE INDEX news_articles_author ON news_articles (author_id)",
        "CREATE INDEX news_articles_published ON news_articles (published)",
        "CREATE INDEX news_comments_article ON news_comments (article_id, posted)",
    ] {
        admin.exec(ddl).await?;
    }
    if kind == Engine::Postgres {
        admin.exec("VACUUM ANALYZE news_categories, news_authors, news_articles, news_comments").await?;
    }
    Ok(done)
}
