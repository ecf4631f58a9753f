//! Progress display on stderr for long runs (`indicatif`). Hidden with
//! `--no-progress`, with `--json`, and whenever stderr is not a terminal,
//! so reports on stdout and logs stay clean.

use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

fn target(enabled: bool) -> ProgressDrawTarget {
    if enabled && std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr_with_hz(4)
    } else {
        ProgressDrawTarget::hidden()
    }
}

/// A bar counting `total` `unit`s.
pub fn bar(enabled: bool, total: u64, unit: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), target(enabled));
    let template = format!(
        "{{elapsed_precise}} [{{bar:40}}] {{human_pos}}/{{human_len}} {unit} ({{per_sec}}, eta {{eta}})"
    );
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// A spinner with a message, for phases of unknown length.
pub fn spinner(enabled: bool, message: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, target(enabled));
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
        bar.set_style(style);
    }
    bar.set_message(message.to_string());
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}
