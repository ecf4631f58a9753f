//! The `hourglass` subcommands that talk to a running server (`backup`,
//! `export`, `import`) and the offline `restore` from what a backup wrote. The work is the
//! library's (`hourglass::client`, `hourglass::tools::restore`); this file
//! turns arguments into calls and results into lines on the terminal.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use hourglass::client::Remote;
use hourglass::client::backup::{self, BackupOptions};

use hourglass::client::export::{self, ExportOptions};
use hourglass::client::import::{self, ImportOptions};
use hourglass_ingest::jsonl::LineFormat;

use crate::cli_location::Location;

/// How to reach the server.
#[derive(Args, Debug)]
pub struct RemoteArgs {
    /// The server: `http[s]://host:port`.
    #[arg(long, default_value = "http://127.0.0.1:4242")]
    url: String,
    /// An access token (or the environment variable HOURGLASS_TOKEN, which
    /// keeps it out of the process list).
    #[arg(long, env = "HOURGLASS_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// PEM certificates to trust for https (default: the system's).
    #[arg(long)]
    cacert: Option<PathBuf>,
}

impl RemoteArgs {
    fn connect(&self) -> Result<Remote, Box<dyn std::error::Error>> {
        Ok(Remote::new(
            &self.url,
            self.token.clone(),
            self.cacert.as_deref(),
        )?)
    }
}

/// The arguments of `hourglass backup`.
#[derive(Args, Debug)]
pub struct BackupArgs {
    #[command(flatten)]
    remote: RemoteArgs,
    /// The backup directory (created if missing).
    #[arg(long)]
    to: PathBuf,
    /// Copy this existing snapshot instead of taking a new one.
    #[arg(long)]
    snapshot: Option<String>,
    /// Complete backups to keep in the directory (unchanged files are
    /// shared between them by hard links).
    #[arg(long, default_value_t = 2)]
    keep: usize,
    /// Leave the snapshot on the server afterwards (default: deleted, as it
    /// holds disk space there).
    #[arg(long)]
    keep_snapshot: bool,
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

pub fn backup(args: BackupArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let mut remote = args.remote.connect()?;
    let opts = BackupOptions {
        dest: args.to,
        snapshot: args.snapshot,
        keep: args.keep,
        keep_snapshot: args.keep_snapshot,
    };
    let report = runtime()?.block_on(backup::run(&mut remote, &opts))?;
    println!(
        "backup: {} complete in {} ({} files, {} bytes; copied {} files, {} bytes; the rest were already there)",
        report.name,
        report.path.display(),
        report.files,
        report.bytes,
        report.copied_files,
        report.copied_bytes
    );
    for old in &report.removed_backups {
        println!("backup: removed the older backup {old}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The arguments of `hourglass restore`.
#[derive(Args, Debug)]
pub struct RestoreArgs {
    /// A backup directory (restores the backup its CURRENT names) or one
    /// snapshot or backup.
    #[arg(long)]
    from: PathBuf,
    /// Where the restored data directory goes (with --config, the
    /// configuration the server will run with).
    #[command(flatten)]
    at: Location,
}

pub fn restore(args: RestoreArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let cfg = args.at.load()?;
    if cfg.storage.backend != hourglass::config::Backend::Embedded {
        return Err("restore writes an embedded data directory; a Bigtable store is restored with Bigtable's own backups".into());
    }
    let source = hourglass::tools::restore::source_of(&args.from)?;
    let (bytes, report) = hourglass::tools::restore::run(&args.from, &cfg)?;
    println!(
        "restore: copied {bytes} bytes from {} into {}",
        source.display(),
        cfg.storage.data_dir.display()
    );
    Ok(if hourglass::tools::fsck::print(&report) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The arguments of `hourglass export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    remote: RemoteArgs,
    /// From (as a query's start: seconds, milliseconds, a date, `30d-ago`).
    #[arg(long)]
    start: String,
    /// Until (default: now).
    #[arg(long)]
    end: Option<String>,
    /// A metric to export (repeat for several); default: every metric.
    #[arg(long)]
    metric: Vec<String>,
    /// A series selector, e.g. `sys.cpu{host=~"web-.*"}` (repeat for
    /// several).
    #[arg(long = "match")]
    selectors: Vec<String>,
    /// `opentsdb` (the `tsdb import` text) or `jsonl` (VictoriaMetrics'
    /// JSON lines).
    #[arg(long, default_value = "jsonl")]
    format: String,
    /// Write gzip (compressed by the server).
    #[arg(long)]
    gzip: bool,
    /// Write here instead of stdout.
    #[arg(long)]
    output: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

fn bar(quiet: bool) -> indicatif::ProgressBar {
    use std::io::IsTerminal as _;
    let target = if !quiet && std::io::stderr().is_terminal() {
        indicatif::ProgressDrawTarget::stderr_with_hz(4)
    } else {
        indicatif::ProgressDrawTarget::hidden()
    };
    let bar = indicatif::ProgressBar::with_draw_target(None, target);
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
    {
        bar.set_style(style);
    }
    bar
}

pub fn export(args: ExportArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    if !matches!(args.format.as_str(), "jsonl" | "opentsdb") {
        return Err(format!("--format {}: jsonl or opentsdb", args.format).into());
    }
    let mut remote = args.remote.connect()?;
    let mut selectors = args.selectors;
    selectors.extend(args.metric.iter().map(|m| {
        let quoted = m.replace('\\', "\\\\").replace('"', "\\\"");
        format!("{{__name__=\"{quoted}\"}}")
    }));
    let opts = ExportOptions {
        selectors,
        start: args.start,
        end: args.end,
        format: args.format,
        gzip: args.gzip,
    };
    let mut out: Box<dyn std::io::Write> = match &args.output {
        Some(p) => Box::new(std::io::BufWriter::with_capacity(
            1 << 20,
            std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?,
        )),
        None => Box::new(std::io::BufWriter::with_capacity(
            1 << 20,
            std::io::stdout().lock(),
        )),
    };
    let bar = bar(args.quiet);
    let started = std::time::Instant::now();
    let report = runtime()?.block_on(export::run(&mut remote, &opts, &mut out, &mut |r| {
        bar.set_message(format!("{} lines, {} bytes", r.lines, r.bytes));
        bar.tick();
    }))?;
    bar.finish_and_clear();
    eprintln!(
        "export: {} bytes{} in {:.1} s",
        report.bytes,
        if opts.gzip {
            String::new()
        } else {
            format!(", {} lines", report.lines)
        },
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

/// The arguments of `hourglass import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    #[command(flatten)]
    remote: RemoteArgs,
    /// Files to import (`-` for stdin); gzip files are read as such.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// `opentsdb` or `jsonl` (default: detected from each file's first
    /// line).
    #[arg(long)]
    format: Option<String>,
    /// `stop` at the first bad line (nothing from it on is written), or
    /// `skip` bad lines and write the rest.
    #[arg(long, default_value = "stop")]
    on_error: String,
    /// Bytes of whole lines per request.
    #[arg(long, default_value_t = 4 << 20)]
    batch_bytes: usize,
    /// Requests in flight (1 makes `--on-error stop` exact: no body after
    /// the bad one is in flight).
    #[arg(long, default_value_t = 2)]
    connections: usize,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

pub fn import(args: ImportArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let format = match args.format.as_deref() {
        None => None,
        named => Some(LineFormat::from_param(named).map_err(|e| format!("--format: {e}"))?),
    };
    let skip = match args.on_error.as_str() {
        "stop" => false,
        "skip" => true,
        other => return Err(format!("--on-error {other}: stop or skip").into()),
    };
    let opts = ImportOptions {
        format,
        skip,
        batch_bytes: args.batch_bytes,
        connections: args.connections.max(1),
    };
    let bar = bar(args.quiet);
    let started = std::time::Instant::now();
    let connect = || {
        args.remote
            .connect()
            .map_err(|e| hourglass::client::ClientError::Usage(e.to_string()))
    };
    let report = runtime()?.block_on(import::run(&connect, &args.files, &opts, &|r| {
        let secs = started.elapsed().as_secs_f64().max(1e-3);
        bar.set_message(format!(
            "{} lines, {} points ({:.0} points/s)",
            r.lines,
            r.points,
            r.points as f64 / secs
        ));
        bar.tick();
    }))?;
    bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    for (file, line, why) in &report.errors {
        eprintln!("import: {file}:{line}: {why}");
    }
    if report.more_errors > 0 {
        eprintln!("import: and {} more bad lines", report.more_errors);
    }
    println!(
        "import: {} points from {} lines ({} bytes) in {:.1} s, {:.0} points/s; {} bad line(s){}",
        report.points,
        report.lines,
        report.bytes,
        secs,
        report.points as f64 / secs.max(1e-3),
        report.errors.len() as u64 + report.more_errors,
        if report.stopped {
            ", stopped at the first"
        } else {
            ""
        }
    );
    Ok(if report.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
