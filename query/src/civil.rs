//! Proleptic-Gregorian day arithmetic in UTC ([`days_from_civil`], [`civil_from_days`],
//! [`DAY_MS`]), shared by absolute dates ([`crate::time`]) and calendar downsampling
//! ([`crate::calendar`]), and by the engine's calendar row spans of OpenTSDB's
//! rollup tables.

/// Days since 1970-01-01 of a proleptic Gregorian date (month 1..=12).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    // Howard Hinnant's `days_from_civil`: years start on March 1, so the leap day comes last.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Inverse of [`days_from_civil`]: `(year, month 1..=12, day 1..=31)`.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    // Howard Hinnant's `civil_from_days`; `z` counts from 0000-03-01.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Milliseconds per day.
pub(crate) const DAY_MS: i64 = 86_400_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trip() {
        for days in [-800_000, -1, 0, 1, 15_694, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(civil_from_days(15_694), (2012, 12, 20));
    }
}
