//! Built-in datasets (`scalelab prepare`): sysbench's sbtest tables and
//! pgbench's tables, created with the peers' own DDL and value shapes and
//! loaded fast (COPY on PostgreSQL, 1000-row INSERTs on MySQL), so scalelab
//! and sysbench/pgbench can run on the very same tables.

use super::workload::{DatasetShape, Rng};
use super::{mysql, pg, Engine, SqlUrl};
use futures_util::SinkExt;
use mysql_async::prelude::Queryable;
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::fmt::Write as _;
use std::time::Duration;

/// A dataset `prepare` knows how to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dataset {
    /// sysbench's `sbtest1..N` (id, k, c, pad; index `k_N` on k).
    Sbtest,
    /// pgbench's accounts, branches, tellers and history.
    Pgbench,
}

impl std::str::FromStr for Dataset {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "sbtest" => Ok(Dataset::Sbtest),
            "pgbench" => Ok(Dataset::Pgbench),
            _ => Err(format!("unknown dataset '{s}': use sbtest or pgbench")),
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
    /// Rows per table (sbtest) or accounts per branch (pgbench); 100 000 by default.
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
            Engine::Mysql => Admin::My(mysql::connect(url, timeout, 16).await?),
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

fn dataset_tables(opts: &PrepareOptions) -> Vec<String> {
    match opts.dataset {
        Dataset::Sbtest => (1..=opts.scale).map(|i| format!("sbtest{i}")).collect(),
        Dataset::Pgbench => ["pgbench_history", "pgbench_tellers", "pgbench_accounts", "pgbench_branches"].map(String::from).to_vec(),
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
    super::runtime().block_on(async {
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
        let rows = opts.rows.unwrap_or(100_000).max(1);
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
