//! The `hourglass` command:
//! * `hourglass serve [--config FILE] [--data-dir DIR] [--port N] [--bind ADDR]
//!   [--backend embedded|bigtable] [--bigtable-project P] [--bigtable-instance I]
//!   [--bigtable-table-prefix X]`
//! * `hourglass fsck [--config FILE] [--data-dir DIR] [--repair]`
//! * `hourglass compact [--config FILE] [--data-dir DIR]`
//! * `hourglass rollup rebuild [--config FILE] [--data-dir DIR] [--from TIME]`
//! * `hourglass token create|list|revoke`
//! * `hourglass backup --url URL [--token T] --to DEST`, `hourglass restore --from DEST --data-dir DIR`
//! * `hourglass export --url URL --start S [--metric M]… --format opentsdb|jsonl`, `hourglass import --url URL FILE…`

mod cli_location;
mod cli_remote;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use hourglass::config::Backend;
use hourglass::engine::Engine;
use hourglass::metrics::Metrics;
use hourglass::server::{self, Ctx};

use crate::cli_location::Location;

#[derive(Parser, Debug)]
#[command(
    name = "hourglass",
    version,
    about = "An OpenTSDB-compatible time-series database"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the server (telnet line protocol and HTTP API on one port).
    Serve {
        #[command(flatten)]
        at: Location,
        /// Port (overrides server.port; 0 picks a free port).
        #[arg(long)]
        port: Option<u16>,
        /// Bind address (overrides server.bind).
        #[arg(long)]
        bind: Option<String>,
        /// Ask every request and connection for a token (sets
        /// auth.enabled; tokens from `hourglass token create`).
        #[arg(long)]
        auth: bool,
        /// Serve on an address other hosts can reach without auth (refused
        /// otherwise: anyone reaching the port could write, delete and read
        /// everything).
        #[arg(long)]
        allow_unauthenticated: bool,
    },
    /// Verify a stopped server's data directory: every checksum, the
    /// manifest, the logs; prints each problem with its file and offset.
    /// Exits with 1 if it finds damage.
    Fsck {
        #[command(flatten)]
        at: Location,
        /// Then run the documented repairs (truncate torn log tails, move
        /// damaged bytes to lost+found/, rebuild a lost manifest) and check
        /// again.
        #[arg(long)]
        repair: bool,
    },
    /// Full offline compaction of a stopped server's data directory.
    Compact {
        #[command(flatten)]
        at: Location,
    },
    /// Rollup tiers of a stopped server's data directory.
    Rollup {
        #[command(subcommand)]
        action: RollupAction,
    },
    /// Access tokens (`[auth]`): a running server sees changes within a
    /// second.
    Token {
        #[command(subcommand)]
        action: TokenAction,
    },
    /// Copy a running server's snapshot into a backup directory
    /// (incrementally: files already there are not copied again).
    Backup(cli_remote::BackupArgs),
    /// Make a new data directory from a backup (the server stopped or
    /// elsewhere), then check it as fsck does.
    Restore(cli_remote::RestoreArgs),
    /// Stream a running server's points to stdout: OpenTSDB's import text
    /// or VictoriaMetrics' JSON lines.
    Export(cli_remote::ExportArgs),
    /// Send files of points (OpenTSDB's import text or VictoriaMetrics'
    /// JSON lines) to a running server.
    Import(cli_remote::ImportArgs),
}

#[derive(Subcommand, Debug)]
enum TokenAction {
    /// Make a token and print it (once: only its hash is kept).
    Create {
        #[command(flatten)]
        at: Location,
        /// A name for it (letters, digits, '.', '_', '-'), e.g. grafana.
        #[arg(long)]
        name: String,
        /// What it may do: read, write or admin.
        #[arg(long)]
        scope: String,
    },
    /// List the tokens (id, name, scope, creation time; never secrets).
    List {
        #[command(flatten)]
        at: Location,
    },
    /// Remove a token, named by its id or name: it stops working within a
    /// second.
    Revoke {
        #[command(flatten)]
        at: Location,
        /// The token's id or name.
        which: String,
    },
}

#[derive(Subcommand, Debug)]
enum RollupAction {
    /// Compute the tiers of every stored hour (data written before the
    /// tiers were configured) and let queries read them.
    Rebuild {
        #[command(flatten)]
        at: Location,
        /// Only hours from this time on (as a query's `start`: seconds
        /// since the epoch, `YYYY/MM/DD-HH:MM:SS` UTC, `30d-ago`); default:
        /// all.
        #[arg(long)]
        from: Option<String>,
    },
}

/// The server's allocator: see `tikv-jemallocator` in Cargo.toml for the
/// why.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options (jemalloc(3), "TUNING"), read once when it starts;
/// `_RJEM_MALLOC_CONF` in the environment overrides them.
/// - `narenas:1`: one arena for every thread. Points are allocated on the
///   writers' threads and freed on the flusher's; with an arena per thread
///   (jemalloc's default is four per CPU) the memory freed in one arena sat
///   unused while another grew.
/// - `background_thread:true`, `dirty_decay_ms:1000`, `muzzy_decay_ms:0`:
///   a thread of jemalloc's own gives freed pages back to the OS within
///   about a second (MADV_DONTNEED, so resident memory falls), off the
///   writers' threads. jemalloc's default keeps them for ten seconds.
///
/// With these, the churn table's remote-write ingest peaked at 318-330 MiB
/// (394 MiB at the median of `bench/churn.sh`), against 414 MiB with
/// jemalloc's defaults and 452-470 MiB with mimalloc, at the same points
/// per second (BENCHMARKS.md, "Series churn, step 14").
const MALLOC_CONF: &[u8] =
    b"narenas:1,background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0\0";

/// [`MALLOC_CONF`] where jemalloc looks for it: the C global `malloc_conf`
/// (a `const char *`; `_rjem_` is the prefix of the symbols
/// `tikv-jemallocator` builds). `Option<&u8>` has the layout of a nullable
/// C pointer, and the string is NUL-terminated.
// SAFETY: exporting the symbol is unsafe only in that it must not clash
// with another definition: jemalloc declares `malloc_conf` for the program
// to define, and nothing else in the process defines it.
#[allow(unsafe_code)]
#[unsafe(export_name = "_rjem_malloc_conf")]
static JEMALLOC_CONF: Option<&u8> = Some(&MALLOC_CONF[0]);

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let result = match cli.command {
        Command::Serve {
            at,
            port,
            bind,
            auth,
            allow_unauthenticated,
        } => serve(at, port, bind, auth, allow_unauthenticated),
        Command::Token { action } => token(action),
        Command::Backup(args) => cli_remote::backup(args),
        Command::Restore(args) => cli_remote::restore(args),
        Command::Export(args) => cli_remote::export(args),
        Command::Import(args) => cli_remote::import(args),
        Command::Fsck { at, repair } => fsck(at, repair),
        Command::Compact { at } => compact(at),
        Command::Rollup {
            action: RollupAction::Rebuild { at, from },
        } => rollup_rebuild(at, from),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("hourglass: {e}");
            ExitCode::FAILURE
        }
    }
}

fn fsck(at: Location, repair: bool) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let cfg = at.load()?;
    if cfg.storage.backend != Backend::Embedded {
        return Err("fsck checks the embedded backend's data directory; a node on Bigtable keeps no data of its own (`hourglass compact` packs a shared store's rows)".into());
    }
    let report = hourglass::tools::fsck::check(&cfg);
    let clean = hourglass::tools::fsck::print(&report);
    if !repair {
        return Ok(if clean {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    println!("fsck: running the documented repairs");
    let after = hourglass::tools::fsck::repair(&cfg)?;
    Ok(if hourglass::tools::fsck::print(&after) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn compact(at: Location) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let cfg = at.load()?;
    match hourglass::tools::compact::run_any(&cfg)? {
        hourglass::tools::compact::Outcome::Merged {
            before,
            after,
            jobs,
        } => println!(
            "compact: {jobs} merge(s); data directory {before} bytes before, {after} bytes after"
        ),
        hourglass::tools::compact::Outcome::Packed { rows } => {
            println!("compact: {rows} row(s) packed")
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn rollup_rebuild(
    at: Location,
    from: Option<String>,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let cfg = at.load()?;
    let from = match from.as_deref() {
        None => 0,
        Some(t) => parse_from(t)?,
    };
    let hours = hourglass::tools::rollup::rebuild(&cfg, from)?;
    println!("rollup rebuild: {hours} stored hour(s) rolled up; tiers complete from {from}");
    Ok(ExitCode::SUCCESS)
}

/// `--from`: a time as `/api/query` reads `start` (seconds or
/// milliseconds since the epoch, `YYYY/MM/DD-HH:MM:SS`, `30d-ago`), UTC.
fn parse_from(t: &str) -> Result<u32, Box<dyn std::error::Error>> {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let ms =
        hourglass_query::time::parse_time(t, now_ms).map_err(|e| format!("--from {t:?}: {e}"))?;
    u32::try_from(ms.div_euclid(1000))
        .map_err(|_| format!("--from {t:?}: before 1970 or after 2106").into())
}

fn token(action: TokenAction) -> Result<ExitCode, Box<dyn std::error::Error>> {
    use hourglass::auth::{Scope, TokenStore};
    match action {
        TokenAction::Create { at, name, scope } => {
            let cfg = at.load()?;
            let scope = Scope::parse(&scope)
                .ok_or_else(|| format!("--scope {scope:?}: use read, write or admin"))?;
            let path = TokenStore::path_for(&cfg);
            let (record, token) = TokenStore::create(&path, &name, scope)?;
            eprintln!(
                "token {} ({}, scope {}) added to {}; it is shown once:",
                record.id,
                record.name,
                record.scope,
                path.display()
            );
            println!("{token}");
        }
        TokenAction::List { at } => {
            let cfg = at.load()?;
            for r in TokenStore::list(&TokenStore::path_for(&cfg))? {
                println!("{}\t{}\t{}\t{}", r.id, r.name, r.scope, r.created);
            }
        }
        TokenAction::Revoke { at, which } => {
            let cfg = at.load()?;
            let r = TokenStore::revoke(&TokenStore::path_for(&cfg), &which)?;
            println!("revoked token {} ({})", r.id, r.name);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// True if `bind` only takes connections from this host.
fn loopback_only(bind: &str) -> bool {
    bind.eq_ignore_ascii_case("localhost")
        || bind
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn serve(
    at: Location,
    port: Option<u16>,
    bind: Option<String>,
    auth: bool,
    allow_unauthenticated: bool,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let mut cfg = at.load()?;
    if let Some(p) = port {
        cfg.server.port = p;
    }
    if let Some(b) = bind {
        cfg.server.bind = b;
    }
    cfg.auth.enabled |= auth;
    cfg.validate()?;
    if !cfg.auth.enabled && !allow_unauthenticated && !loopback_only(&cfg.server.bind) {
        return Err(format!(
            "refusing to serve on {} without authentication: anyone who can reach the port \
             could write, delete and read everything. Enable auth (`[auth] enabled = true` or \
             --auth, with tokens from `hourglass token create`), bind to 127.0.0.1, or pass \
             --allow-unauthenticated to accept the risk",
            cfg.server.bind
        )
        .into());
    }
    let tokens = if cfg.auth.enabled {
        let path = hourglass::auth::TokenStore::path_for(&cfg);
        let store = hourglass::auth::TokenStore::open(&path)?;
        if hourglass::auth::TokenStore::list(&path)?.is_empty() {
            tracing::warn!(path = %path.display(), "auth is on and no token exists yet: every request is refused until `hourglass token create` makes one");
        }
        Some(std::sync::Arc::new(store))
    } else {
        None
    };
    let tls = server::tls::Tls::load(&cfg.server.tls)?.map(std::sync::Arc::new);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("hourglass-io")
        .build()?;
    if let Some(tls) = &tls {
        runtime.spawn(reload_tls_on_sighup(std::sync::Arc::clone(tls)));
    }
    let engine = Engine::open(&cfg, Metrics::new())?;
    let background = engine.start_background()?;
    let listener = runtime.block_on(tokio::net::TcpListener::bind((
        cfg.server.bind.as_str(),
        cfg.server.port,
    )))?;
    let addr = listener.local_addr()?;
    let data = match cfg.storage.backend {
        Backend::Embedded => std::fs::canonicalize(&cfg.storage.data_dir)
            .unwrap_or_else(|_| cfg.storage.data_dir.clone())
            .display()
            .to_string(),
        Backend::Bigtable => format!(
            "Bigtable projects/{}/instances/{} (tables {}tsdb*)",
            cfg.storage.bigtable.project,
            cfg.storage.bigtable.instance,
            cfg.storage.bigtable.table_prefix
        ),
    };
    let shutdown = {
        let _context = runtime.enter();
        shutdown_signal()
    };
    println!(
        "hourglass {} listening on {addr} (OpenTSDB telnet and HTTP API); data in {data}",
        env!("CARGO_PKG_VERSION"),
    );
    let ctx = Ctx::new(std::sync::Arc::clone(&engine), cfg, tokens, tls);
    runtime.block_on(server::run(listener, ctx, shutdown, Duration::from_secs(5)));
    eprintln!("hourglass: shutting down, writing buffered data");
    let res = engine.shutdown();
    for t in background {
        let _ = t.join();
    }
    res?;
    Ok(ExitCode::SUCCESS)
}

/// Reads the TLS certificate and key again on each SIGHUP (a renewed
/// certificate without a restart; open connections keep theirs).
async fn reload_tls_on_sighup(tls: std::sync::Arc<server::tls::Tls>) {
    #[cfg(unix)]
    {
        let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        else {
            return;
        };
        while hup.recv().await.is_some() {
            match tls.reload() {
                Ok(()) => tracing::info!("TLS certificate and key reloaded"),
                Err(e) => {
                    tracing::error!(error = %e, "TLS reload failed; the certificate in use stays")
                }
            }
        }
    }
}

/// A future that resolves on SIGTERM or SIGINT (Ctrl-C). The handlers are
/// registered when this is called (within the runtime's context), not when
/// the future is first polled: `serve` calls it before it prints the line
/// that says the server is listening, so a stop sent as soon as that line
/// appears shuts the server down cleanly instead of killing it (the
/// signals' default action).
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let term = signal(SignalKind::terminate());
        let interrupt = signal(SignalKind::interrupt());
        async move {
            match (term, interrupt) {
                (Ok(mut term), Ok(mut interrupt)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = interrupt.recv() => {}
                    }
                }
                (Ok(mut term), Err(_)) => {
                    let _ = term.recv().await;
                }
                (Err(_), _) => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}
