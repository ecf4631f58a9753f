//! The `hourglass` command: `hourglass serve [--config FILE] [--data-dir DIR]
//! [--port N] [--bind ADDR]`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use hourglass::config::Config;
use hourglass::engine::Engine;
use hourglass::metrics::Metrics;
use hourglass::server::{self, Ctx};

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
        /// TOML config file (see config/hourglass.toml for every option).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Data directory (overrides storage.data_dir).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Port (overrides server.port; 0 picks a free port).
        #[arg(long)]
        port: Option<u16>,
        /// Bind address (overrides server.bind).
        #[arg(long)]
        bind: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match cli.command {
        Command::Serve {
            config,
            data_dir,
            port,
            bind,
        } => match serve(config, data_dir, port, bind) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("hourglass: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

fn serve(
    config: Option<PathBuf>,
    data_dir: Option<PathBuf>,
    port: Option<u16>,
    bind: Option<String>,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut cfg = Config::load(config.as_deref())?;
    if let Some(d) = data_dir {
        cfg.storage.data_dir = d;
    }
    if let Some(p) = port {
        cfg.server.port = p;
    }
    if let Some(b) = bind {
        cfg.server.bind = b;
    }
    cfg.validate()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("hourglass-io")
        .build()?;
    let engine = Engine::open(&cfg, Metrics::new())?;
    let flusher = engine.start_background()?;
    let listener = runtime.block_on(tokio::net::TcpListener::bind((
        cfg.server.bind.as_str(),
        cfg.server.port,
    )))?;
    let addr = listener.local_addr()?;
    let data = std::fs::canonicalize(&cfg.storage.data_dir)
        .unwrap_or_else(|_| cfg.storage.data_dir.clone());
    println!(
        "hourglass {} listening on {addr} (OpenTSDB telnet and HTTP API); data in {}",
        env!("CARGO_PKG_VERSION"),
        data.display()
    );
    let ctx = Ctx::new(std::sync::Arc::clone(&engine), cfg);
    runtime.block_on(server::run(
        listener,
        ctx,
        shutdown_signal(),
        Duration::from_secs(5),
    ));
    eprintln!("hourglass: shutting down, writing buffered data");
    let res = engine.shutdown();
    let _ = flusher.join();
    res?;
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
