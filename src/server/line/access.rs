//! Access control of the line protocol (`docs/security.md`), with `[auth]
//! enabled = true`: a connection presents its token with `auth <token>`
//! (answered `ok`), then may do what the token's scope allows: `put`,
//! `rollup` and InfluxDB lines need `write`, `stats` `read`, `dropcaches`
//! `admin`; `version`, `help` and `exit` need nothing. Anything else is
//! refused with `<command>: authentication required` (no token yet) or
//! `<command>: forbidden: …` (too small a scope), and nothing is stored.

use std::sync::Arc;

use super::session::Session;
use crate::auth::Scope;
use crate::server::Ctx;

/// What [`check`] decided about a line.
pub enum Access {
    /// Handle the line as usual.
    Proceed,
    /// The line was answered here (an `auth`, or a refusal).
    Answered,
}

/// The command word of a line and the scope it needs (`None`: none).
fn needs(line: &[u8], influx: bool) -> (&str, Option<Scope>) {
    if influx {
        return ("influx", Some(Scope::Write));
    }
    let word = line
        .split(|&b| b == b' ')
        .find(|w| !w.is_empty())
        .and_then(|w| std::str::from_utf8(w).ok())
        .unwrap_or("");
    let scope = match word {
        "put" | "rollup" => Some(Scope::Write),
        "stats" => Some(Scope::Read),
        "dropcaches" => Some(Scope::Admin),
        _ => None,
    };
    (word, scope)
}

/// Checks a line against the connection's token; answers `auth` lines.
pub async fn check(ctx: &Arc<Ctx>, session: &mut Session, line: &[u8], influx: bool) -> Access {
    let Some(tokens) = &ctx.tokens else {
        return Access::Proceed;
    };
    // The hot path, without looking at the line's words: an admin token,
    // or a write token's puts and InfluxDB lines.
    if let Some(v) = &session.caller
        && (v.scope == Scope::Admin
            || (v.scope == Scope::Write && (influx || line.starts_with(b"put "))))
    {
        return Access::Proceed;
    }
    let (word, needed) = needs(line, influx);
    if word == "auth" {
        let token = line
            .split(|&b| b == b' ')
            .filter(|w| !w.is_empty())
            .nth(1)
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .unwrap_or_default();
        let tokens = Arc::clone(tokens);
        let verified = tokio::task::spawn_blocking(move || tokens.verify(&token))
            .await
            .ok()
            .flatten();
        match verified {
            Some(v) => {
                session.caller = Some(v);
                session.replies.reply("ok\n".into()).await;
            }
            None => {
                ctx.metrics
                    .auth_refused
                    .with_label_values(&["invalid"])
                    .inc();
                session.replies.error("auth: invalid token".into());
            }
        }
        return Access::Answered;
    }
    let Some(needed) = needed else {
        return Access::Proceed;
    };
    let refusal = match &session.caller {
        Some(v) if v.scope.allows(needed) => return Access::Proceed,
        Some(v) => {
            ctx.metrics.auth_refused.with_label_values(&["scope"]).inc();
            format!(
                "{word}: forbidden: this token's scope ({}) does not allow what needs {needed}",
                v.scope
            )
        }
        None => {
            ctx.metrics.auth_refused.with_label_values(&["none"]).inc();
            format!("{word}: authentication required (send `auth <token>` first)")
        }
    };
    if needed == Scope::Write {
        ctx.metrics
            .points_rejected
            .with_label_values(&["unauthorized"])
            .inc();
    }
    session.replies.error(refusal);
    Access::Answered
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_need_their_scope() {
        assert_eq!(needs(b"put m 1 1 a=b", false), ("put", Some(Scope::Write)));
        assert_eq!(
            needs(b"  rollup 1h-SUM m 1 1 a=b", false).1,
            Some(Scope::Write)
        );
        assert_eq!(needs(b"cpu,host=a v=1", true).1, Some(Scope::Write));
        assert_eq!(needs(b"stats", false).1, Some(Scope::Read));
        assert_eq!(needs(b"dropcaches", false).1, Some(Scope::Admin));
        for free in ["version", "help", "exit", "auth x", "", "hello"] {
            assert_eq!(needs(free.as_bytes(), false).1, None, "{free}");
        }
    }
}
