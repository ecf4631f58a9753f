//! Time zones and Java `Calendar` arithmetic (spec §5.2, §5.8).
//!
//! This module owns everything that depends on a time zone:
//! * [`lookup_zone`]: a query's `timezone` name → a [`TimeZone`] from the tz
//!   database bundled into the binary (jiff's `tzdb-bundle-always`, so the
//!   answer never depends on the host's `/usr/share/zoneinfo`). Names are
//!   matched exactly (case-sensitive), like OpenTSDB's `HashMap` of
//!   `TimeZone.getAvailableIDs()`; the JDK's old three-letter aliases (`PST`,
//!   `IST`, …) map to their IANA zones as in the JDK.
//! * [`resolve_wall`]: a local ("wall") time → an instant, the way
//!   `GregorianCalendar.computeTime` does it: in a DST gap *and* in a fold the
//!   offset in force **after** the transition is used (jiff's `later()`), so
//!   `02:30` on a spring-forward day is `03:30` DST and `01:30` on a fall-back
//!   day is the second (standard-time) `01:30`.
//! * [`JavaCalendar`]: `DateTime.previousInterval` and `Calendar.add` for the
//!   units calendar downsampling uses. The quirks are Java's and copied on
//!   purpose: adding hours, minutes, seconds or ms is absolute (so `6h`
//!   buckets anchored at local midnight drift by the DST shift within a
//!   series), adding days keeps the local time of day (so `1d` buckets follow
//!   local midnights, 23 or 25 hours long across DST), months and years keep
//!   the local date and time fields.
//!
//! All instants are epoch milliseconds. Instants whose local time falls
//! outside jiff's range (years beyond ±9999) are treated as UTC.

use jiff::Timestamp;
use jiff::tz::TimeZone;

use crate::civil::{DAY_MS, civil_from_days, days_from_civil};

/// The JDK's legacy three-letter zone IDs (`ZoneInfoFile.oldMappings`, with
/// `sun.timezone.ids.oldmapping=false`): OpenTSDB accepts them because they
/// are in `TimeZone.getAvailableIDs()`. `EST`, `MST` and `HST` are IANA
/// names already.
const JDK_ALIASES: &[(&str, &str)] = &[
    ("ACT", "Australia/Darwin"),
    ("AET", "Australia/Sydney"),
    ("AGT", "America/Argentina/Buenos_Aires"),
    ("ART", "Africa/Cairo"),
    ("AST", "America/Anchorage"),
    ("BET", "America/Sao_Paulo"),
    ("BST", "Asia/Dhaka"),
    ("CAT", "Africa/Harare"),
    ("CNT", "America/St_Johns"),
    ("CST", "America/Chicago"),
    ("CTT", "Asia/Shanghai"),
    ("EAT", "Africa/Addis_Ababa"),
    ("ECT", "Europe/Paris"),
    ("IET", "America/Indiana/Indianapolis"),
    ("IST", "Asia/Kolkata"),
    ("JST", "Asia/Tokyo"),
    ("MIT", "Pacific/Apia"),
    ("NET", "Asia/Yerevan"),
    ("NST", "Pacific/Auckland"),
    ("PLT", "Asia/Karachi"),
    ("PNT", "America/Phoenix"),
    ("PRT", "America/Puerto_Rico"),
    ("PST", "America/Los_Angeles"),
    ("SST", "Pacific/Guadalcanal"),
    ("VST", "Asia/Ho_Chi_Minh"),
];

/// The zone named `name` exactly (IANA names, including backward links such
/// as `US/Eastern`, and the JDK aliases above), or `None`.
pub fn lookup_zone(name: &str) -> Option<TimeZone> {
    let iana = JDK_ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, iana)| *iana);
    let tz = jiff::tz::db().get(iana).ok()?;
    // jiff matches case-insensitively; Java's map does not.
    (tz.iana_name() == Some(iana)).then_some(tz)
}

/// The zone's offset from UTC at instant `ms`, in ms.
pub(crate) fn offset_ms(tz: &TimeZone, ms: i64) -> i64 {
    match Timestamp::from_millisecond(ms) {
        Ok(ts) => i64::from(tz.to_offset(ts).seconds()) * 1000,
        Err(_) => 0,
    }
}

/// Local wall time of instant `ms`, as ms since 1970-01-01T00:00 local.
pub(crate) fn wall_of(tz: &TimeZone, ms: i64) -> i64 {
    ms.saturating_add(offset_ms(tz, ms))
}

/// The instant of a local wall time (ms since 1970-01-01T00:00 local), with
/// `GregorianCalendar`'s gap and fold rule (see the module docs).
pub fn resolve_wall(tz: &TimeZone, wall_ms: i64) -> i64 {
    let resolved = Timestamp::from_millisecond(wall_ms)
        .map(|t| t.to_zoned(TimeZone::UTC).datetime())
        .and_then(|dt| tz.to_ambiguous_timestamp(dt).later());
    match resolved {
        Ok(ts) => ts.as_millisecond(),
        Err(_) => wall_ms,
    }
}

/// Calendar units (the `<unit>` of `<n><unit>c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CalendarUnit {
    /// `ms`
    Millis,
    /// `s`
    Seconds,
    /// `m`
    Minutes,
    /// `h`
    Hours,
    /// `d`
    Days,
    /// `w`
    Weeks,
    /// `n`
    Months,
    /// `y`
    Years,
}

impl CalendarUnit {
    /// Length of one unit in ms when `Calendar.add` treats it as absolute.
    fn absolute_ms(self) -> Option<i64> {
        match self {
            CalendarUnit::Millis => Some(1),
            CalendarUnit::Seconds => Some(1000),
            CalendarUnit::Minutes => Some(60_000),
            CalendarUnit::Hours => Some(3_600_000),
            _ => None,
        }
    }
}

/// `n` units in a time zone: the state of OpenTSDB's calendar downsampler.
#[derive(Debug, Clone)]
pub(crate) struct JavaCalendar {
    /// Units per bucket.
    pub count: i64,
    /// The unit.
    pub unit: CalendarUnit,
    /// The query's zone (UTC by default).
    pub tz: TimeZone,
}

/// Day of the week with Sunday = 0 (the en-US first day of the week, which
/// is the JVM locale OpenTSDB runs with in practice).
fn weekday_from_sunday(day: i64) -> i64 {
    (day + 4).rem_euclid(7)
}

impl JavaCalendar {
    /// A UTC calendar.
    #[cfg(test)]
    pub(crate) fn utc(count: i64, unit: CalendarUnit) -> Self {
        JavaCalendar {
            count,
            unit,
            tz: TimeZone::UTC,
        }
    }

    /// `Calendar.add(field, amount)` for `amount` of `unit` (weeks as 7-day
    /// steps, like the downsampler's `add(DAY_UNIT, n * 7)`).
    fn add_units(&self, ms: i64, unit: CalendarUnit, amount: i64) -> i64 {
        if let Some(unit_ms) = unit.absolute_ms() {
            return ms.saturating_add(amount.saturating_mul(unit_ms));
        }
        match unit {
            CalendarUnit::Days => self.add_days(ms, amount),
            CalendarUnit::Weeks => self.add_days(ms, amount.saturating_mul(7)),
            CalendarUnit::Months => self.add_months(ms, amount),
            _ => self.add_months(ms, amount.saturating_mul(12)),
        }
    }

    /// `GregorianCalendar.add(DAY_OF_MONTH, n)`: same local time of day on
    /// the date `n` days later, computed with the *current* offset, then
    /// corrected by the offset change unless the correction changes the date.
    fn add_days(&self, ms: i64, n: i64) -> i64 {
        let offset = offset_ms(&self.tz, ms);
        let wall = ms.saturating_add(offset);
        let day = wall.div_euclid(DAY_MS).saturating_add(n);
        let time_of_day = wall.rem_euclid(DAY_MS);
        let t = day
            .saturating_mul(DAY_MS)
            .saturating_add(time_of_day)
            .saturating_sub(offset);
        let delta = offset - offset_ms(&self.tz, t);
        if delta == 0 {
            return t;
        }
        let adjusted = t.saturating_add(delta);
        if wall_of(&self.tz, adjusted).div_euclid(DAY_MS) == day {
            adjusted
        } else {
            t
        }
    }

    /// `GregorianCalendar.add(MONTH, n)`: local date fields moved by `n`
    /// months, day pinned to the month's length, same local time.
    fn add_months(&self, ms: i64, n: i64) -> i64 {
        let wall = wall_of(&self.tz, ms);
        let (y, m, d) = civil_from_days(wall.div_euclid(DAY_MS));
        let total = (y * 12 + (m - 1)).saturating_add(n);
        let (ny, nm) = (total.div_euclid(12), total.rem_euclid(12) + 1);
        let month_len =
            days_from_civil(ny + (nm / 12), nm % 12 + 1, 1) - days_from_civil(ny, nm, 1);
        let day = days_from_civil(ny, nm, d.min(month_len));
        resolve_wall(
            &self.tz,
            day.saturating_mul(DAY_MS)
                .saturating_add(wall.rem_euclid(DAY_MS)),
        )
    }

    /// `boundary` advanced by `k` buckets (`Calendar.add(unit, k * n)`).
    pub(crate) fn add(&self, boundary: i64, k: i64) -> i64 {
        self.add_units(boundary, self.unit, self.count.saturating_mul(k))
    }

    /// `DateTime.previousInterval(ts, n, unit, tz)`: snap `ts` to an anchor
    /// (start of the enclosing second/minute/hour/day/month/year, depending
    /// on whether `n` divides the next larger unit), then step `n` units
    /// until past `ts` and one step back.
    pub(crate) fn previous_interval(&self, ts: i64) -> i64 {
        let n = self.count;
        let wall = wall_of(&self.tz, ts);
        let day = wall.div_euclid(DAY_MS);
        let (y, m, dom) = civil_from_days(day);
        let floor = |unit: i64| resolve_wall(&self.tz, wall - wall.rem_euclid(unit));
        let at_day = |d: i64| resolve_wall(&self.tz, d.saturating_mul(DAY_MS));
        let first_of_month = days_from_civil(y, m, 1);
        let jan1 = days_from_civil(y, 1, 1);
        let (start, unit, step) = match self.unit {
            CalendarUnit::Millis if 1000 % n == 0 => (floor(1000), CalendarUnit::Millis, n),
            CalendarUnit::Millis => (floor(60_000), CalendarUnit::Millis, n),
            CalendarUnit::Seconds if 60 % n == 0 => (floor(60_000), CalendarUnit::Seconds, n),
            CalendarUnit::Seconds => (floor(3_600_000), CalendarUnit::Seconds, n),
            CalendarUnit::Minutes if 60 % n == 0 => (floor(3_600_000), CalendarUnit::Minutes, n),
            CalendarUnit::Minutes => (floor(DAY_MS), CalendarUnit::Minutes, n),
            CalendarUnit::Hours if 24 % n == 0 => (floor(DAY_MS), CalendarUnit::Hours, n),
            CalendarUnit::Hours => (at_day(first_of_month), CalendarUnit::Hours, n),
            // Java sets DAY_OF_MONTH to 1 even for single days, then steps
            // day by day from the first of the month.
            CalendarUnit::Days if n == 1 => (at_day(first_of_month), CalendarUnit::Days, 1),
            CalendarUnit::Days => (at_day(jan1), CalendarUnit::Days, n),
            CalendarUnit::Weeks => {
                // set(DAY_OF_WEEK, SUNDAY) resolves through WEEK_OF_MONTH:
                // the Sunday of the same week of the month, in the same
                // month (n = 1, 2) or in January (other n). Either way the
                // search then steps single weeks.
                let week_of_month = (dom - 1 + weekday_from_sunday(first_of_month)) / 7;
                let base = if 2 % n == 0 { first_of_month } else { jan1 };
                let sunday = base - weekday_from_sunday(base) + 7 * week_of_month;
                (at_day(sunday), CalendarUnit::Days, 7)
            }
            CalendarUnit::Months | CalendarUnit::Years => (at_day(jan1), self.unit, n),
        };
        if start == ts {
            return start;
        }
        if let Some(unit_ms) = unit.absolute_ms() {
            // Absolute steps: the loop below in closed form.
            let step_ms = step.saturating_mul(unit_ms);
            return if start > ts {
                start - step_ms
            } else {
                start + (ts - start) / step_ms * step_ms
            };
        }
        // At most a year of day steps, 53 weeks or 12 months.
        let mut cal = start;
        while cal <= ts {
            let next = self.add_units(cal, unit, step);
            if next <= cal {
                break; // saturated at the end of time; cannot happen in range
            }
            cal = next;
        }
        self.add_units(cal, unit, -step)
    }

    /// The start of the bucket holding `ts` when buckets are stepped from
    /// `anchor` (a bucket start at or before the first point), like the
    /// downsampler's incremental `add`s. `ts <= anchor` gives `anchor`.
    pub(crate) fn bucket_start(&self, anchor: i64, ts: i64) -> i64 {
        if ts <= anchor {
            return anchor;
        }
        if let Some(unit_ms) = self.unit.absolute_ms() {
            let step = self.count.saturating_mul(unit_ms);
            return anchor + (ts - anchor) / step * step;
        }
        let mut start = anchor;
        loop {
            let next = self.add(start, 1);
            if next > ts || next <= start {
                return start;
            }
            start = next;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use super::*;

    #[test]
    fn zone_names_are_exact() {
        assert!(lookup_zone("Europe/Paris").is_some());
        assert!(lookup_zone("US/Eastern").is_some());
        assert!(lookup_zone("Etc/GMT+5").is_some());
        assert!(lookup_zone("UTC").is_some());
        assert!(lookup_zone("PST").is_some());
        assert!(lookup_zone("europe/paris").is_none());
        assert!(lookup_zone("Nowhere/Land").is_none());
        assert!(lookup_zone("").is_none());
        assert!(lookup_zone("GMT+05:30").is_none());
    }

    #[test]
    fn wall_resolution_prefers_the_later_offset() {
        let ny = lookup_zone("America/New_York").unwrap();
        // 2024-03-10 02:30 does not exist: 07:30Z (03:30 EDT)
        let gap = days_from_civil(2024, 3, 10) * DAY_MS + 9_000_000;
        assert_eq!(resolve_wall(&ny, gap), 1_710_055_800_000);
        // 2024-11-03 01:30 happens twice: the EST one, 06:30Z
        let fold = days_from_civil(2024, 11, 3) * DAY_MS + 5_400_000;
        assert_eq!(resolve_wall(&ny, fold), 1_730_615_400_000);
    }
}
