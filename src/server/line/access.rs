//! Access control of the line protocol (`docs/security.md`), with `[auth]
//! enabled = true`: a connection presents its token with `auth <token>`
//! (answered `ok`), then may do what the token's scope allows: `put`,
//! `rollup` and InfluxDB lines need `write`, `stats` `read`, `dropcaches`
//! `admin`; `version`, `help` and `exit` need nothing. Anything else is
//! refused with `<command>: authentication required` (no token yet) or
//! `<command>: forbidden: …` (too small a scope), and nothing is stored.
//! The token is checked again on each read once the token file changed
//! ([`recheck`]): revoking it ends its connections' rights too.

use std::sync::Arc;
use std::time::Duration;

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

/// How long a connection may go without presenting a token, with access
/// control on (it holds a connection slot meanwhile).
pub const AUTH_WITHIN: Duration = Duration::from_secs(10);

/// True if the connection must still present a token.
pub fn unauthenticated(ctx: &Ctx, session: &Session) -> bool {
    ctx.tokens.is_some() && session.caller.is_none()
}

/// Checks the connection's token again if the token file changed since
/// (once per read: a revoked token stops working on open connections too,
/// within a second and a read).
pub fn recheck(ctx: &Ctx, session: &mut Session) {
    let (Some(tokens), Some(caller)) = (&ctx.tokens, &session.caller) else {
        return;
    };
    let generation = tokens.generation();
    if generation == session.caller_checked {
        return;
    }
    session.caller = tokens.recheck(caller);
    session.caller_checked = generation;
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

/// True if a line goes through without [`check`]: access control off, or
/// a put or InfluxDB line of a token that may write (the hot path: no
/// async call, no look at the line's words).
#[inline]
pub fn passes(ctx: &Ctx, session: &Session, line: &[u8], influx: bool) -> bool {
    ctx.tokens.is_none()
        || ((influx || line.starts_with(b"put "))
            && session
                .caller
                .as_ref()
                .is_some_and(|v| v.scope.allows(Scope::Write)))
}

/// Checks a line against the connection's token; answers `auth` lines.
pub async fn check(ctx: &Arc<Ctx>, session: &mut Session, line: &[u8], influx: bool) -> Access {
    let Some(tokens) = &ctx.tokens else {
        return Access::Proceed;
    };
    if passes(ctx, session, line, influx) {
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
        // A failed `auth` leaves the connection with no token at all.
        session.caller = None;
        match tokens.verify_async(&token).await {
            Ok(Some(v)) => {
                session.caller = Some(v);
                session.caller_checked = tokens.generation();
                session.replies.reply("ok\n".into()).await;
            }
            Ok(None) => {
                ctx.metrics
                    .auth_refused
                    .with_label_values(&["invalid"])
                    .inc();
                session.replies.error("auth: invalid token".into());
            }
            Err(crate::auth::Busy) => {
                session
                    .replies
                    .error("auth: too many token checks at once; try again".into());
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
