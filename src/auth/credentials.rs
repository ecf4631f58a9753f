//! The token a request presents, in each form its clients send it.

use base64::Engine as _;

/// The token of an HTTP request, if it presents one:
/// * `Authorization: Bearer <token>` (Grafana, Prometheus `authorization`);
/// * `Authorization: Token <token>` (InfluxDB 2 clients, Telegraf `token`);
/// * `Authorization: Basic base64(<user>:<token>)`, any user name (Grafana's
///   and Prometheus' basic auth, Telegraf `username`/`password`, Python
///   clients);
/// * the `p` query parameter (InfluxDB 1's `u`/`p`), when no header is sent.
pub fn presented(authorization: Option<&[u8]>, query: Option<&str>) -> Option<String> {
    if let Some(h) = authorization {
        let text = std::str::from_utf8(h).ok()?.trim();
        let (scheme, rest) = text.split_once(' ')?;
        let rest = rest.trim();
        return if scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("token") {
            (!rest.is_empty()).then(|| rest.to_string())
        } else if scheme.eq_ignore_ascii_case("basic") {
            let raw = base64::engine::general_purpose::STANDARD
                .decode(rest)
                .ok()?;
            let pair = String::from_utf8(raw).ok()?;
            let (_, password) = pair.split_once(':')?;
            (!password.is_empty()).then(|| password.to_string())
        } else {
            None
        };
    }
    form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == "p")
        .map(|(_, v)| v.into_owned())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_form() {
        let t = Some("hgt_x".to_string());
        assert_eq!(presented(Some(b"Bearer hgt_x"), None), t);
        assert_eq!(presented(Some(b"bearer  hgt_x "), None), t);
        assert_eq!(presented(Some(b"Token hgt_x"), None), t);
        // "grafana:hgt_x"
        assert_eq!(presented(Some(b"Basic Z3JhZmFuYTpoZ3RfeA=="), None), t);
        // ":hgt_x" (no user name)
        assert_eq!(presented(Some(b"Basic OmhndF94"), None), t);
        assert_eq!(presented(None, Some("db=x&u=me&p=hgt_x")), t);
        assert_eq!(presented(None, Some("db=x&p=hgt%5Fx")), t);
        // Nothing usable.
        assert_eq!(presented(Some(b"Basic !!!"), None), None);
        assert_eq!(presented(Some(b"Digest abc"), None), None);
        assert_eq!(presented(Some(b"Bearer"), None), None);
        // "user:" (an empty password)
        assert_eq!(presented(Some(b"Basic dXNlcjo="), None), None);
        assert_eq!(presented(None, Some("db=x")), None);
        assert_eq!(presented(None, None), None);
        // A header wins over the parameter.
        assert_eq!(presented(Some(b"Bearer a"), Some("p=b")), Some("a".into()));
    }
}
