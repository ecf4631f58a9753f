//! The server process's allocator: jemalloc, with the options
//! `src/main.rs` gives it (`MALLOC_CONF`). The churn benchmark's peak
//! memory depends on them (BENCHMARKS.md, "Series churn, step 14"), and a
//! symbol jemalloc does not find is silently ignored, so the running
//! binary is asked.

use crate::common::Server;

/// jemalloc prints its options at exit with `stats_print` (added through
/// the environment, which adds to the built-in options rather than
/// replacing them); the server's stderr is its log.
#[test]
fn the_server_runs_jemalloc_with_its_options() {
    let mut server = Server::start_with_env("", &[("_RJEM_MALLOC_CONF", "stats_print:true")]);
    server.stop();
    let log = server.log();
    for option in [
        "opt.narenas: 1\n",
        "opt.background_thread: true",
        "opt.dirty_decay_ms: 1000",
        "opt.muzzy_decay_ms: 0",
    ] {
        assert!(
            log.contains(option),
            "jemalloc's statistics at exit do not show {option:?}; server log:\n{log}"
        );
    }
}
