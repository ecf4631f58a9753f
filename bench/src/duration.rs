//! Durations as flags spell them (`10s`, `1h30m`, `250ms`) and as reports
//! print them, and their conversion to the milliseconds a workload counts in.

use std::time::Duration;

use crate::error::BenchError;

/// Parses `10s`, `1h30m`, `250ms`, `2d`, `1w`; a bare number means seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty duration".to_string());
    }
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total_ms: u64 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(format!("invalid duration `{text}`: expected a number"));
        }
        let n: u64 = rest[..digits]
            .parse()
            .map_err(|_| format!("invalid duration `{text}`: number too large"))?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit_ms: u64 = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "w" => 604_800_000,
            other => {
                return Err(format!(
                    "invalid duration `{text}`: unknown unit `{other}` (use ms, s, m, h, d, w)"
                ));
            }
        };
        rest = &rest[unit_len..];
        total_ms = n
            .checked_mul(unit_ms)
            .and_then(|ms| total_ms.checked_add(ms))
            .ok_or_else(|| format!("invalid duration `{text}`: too large"))?;
    }
    Ok(Duration::from_millis(total_ms))
}

/// Formats milliseconds compactly (`1h30m`, `10s`, `250ms`).
pub fn format_ms(mut ms: u64) -> String {
    if ms == 0 {
        return "0s".to_string();
    }
    let mut out = String::new();
    for (unit, size) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
    ] {
        if ms >= size {
            out.push_str(&format!("{}{unit}", ms / size));
            ms %= size;
        }
    }
    if ms > 0 {
        out.push_str(&format!("{ms}ms"));
    }
    out
}

/// `d` in whole milliseconds, as the workload counts time.
pub fn millis(d: Duration) -> Result<i64, BenchError> {
    i64::try_from(d.as_millis()).map_err(|_| BenchError::Config(format!("{d:?} is too long")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let ms = |s: &str| parse_duration(s).map(|d| d.as_millis());
        assert_eq!(ms("10s"), Ok(10_000));
        assert_eq!(ms("10"), Ok(10_000));
        assert_eq!(ms("1h30m"), Ok(5_400_000));
        assert_eq!(ms("250ms"), Ok(250));
        assert_eq!(ms("2d"), Ok(172_800_000));
        assert!(ms("").is_err());
        assert!(ms("5x").is_err());
        assert!(ms("s").is_err());
        assert_eq!(format_ms(5_400_000), "1h30m");
        assert_eq!(format_ms(250), "250ms");
        assert_eq!(format_ms(10_000), "10s");
    }
}
