#!/usr/bin/env python3
"""Independent expected values for tests/calendar_zones.rs.

Computes OpenTSDB's calendar-downsampling buckets with Python's zoneinfo
(no Java-Calendar emulation): bucket boundaries are generated directly as
local calendar instants and each point goes to the last boundary <= it.
 * wall -> instant: the later of the two candidates (fold=0/1), which is
   what java.util.GregorianCalendar does in gaps and folds;
 * d: local midnights; n>1 days: every n-th local midnight from Jan 1;
 * w: local Sunday midnights; n: first of month; y: Jan 1;
 * h (24 % n == 0): local midnight of the FIRST point's day plus k*n hours
   of absolute time (Calendar.add(HOUR_OF_DAY) is absolute).
Run: python3 query/tests/tzgen/calendar_expected.py > /tmp/cases.rs
"""
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

UTC = timezone.utc
H = 3_600_000


def ms(dt):
    return int(dt.timestamp() * 1000)


def resolve(naive, z):
    return max(ms(naive.replace(tzinfo=z, fold=0)), ms(naive.replace(tzinfo=z, fold=1)))


def local(t, z):
    return datetime.fromtimestamp(t / 1000, z).replace(tzinfo=None)


def boundaries(z, count, unit, first, lo, hi):
    out = set()
    d0 = local(lo, z).date() - timedelta(days=400)
    d1 = local(hi, z).date() + timedelta(days=400)
    if unit == 'h':
        fd = local(first, z).date()
        anchor = resolve(datetime(fd.year, fd.month, fd.day), z)
        k = (lo - anchor) // (count * H) - 2
        t = anchor + k * count * H
        while t <= hi:
            out.add(t)
            t += count * H
        return sorted(out)
    d = d0
    while d <= d1:
        if unit == 'd' and (count == 1 or (d - d.replace(month=1, day=1)).days % count == 0):
            out.add(resolve(datetime(d.year, d.month, d.day), z))
        if unit == 'w' and d.isoweekday() == 7:
            out.add(resolve(datetime(d.year, d.month, d.day), z))
        if unit == 'n' and d.day == 1 and (d.month - 1) % count == 0:
            out.add(resolve(datetime(d.year, d.month, d.day), z))
        if unit == 'y' and d.day == 1 and d.month == 1:
            out.add(resolve(datetime(d.year, d.month, d.day), z))
        d += timedelta(days=1)
    return sorted(out)


def case(name, zone, spec, start, end, step_min):
    z = ZoneInfo(zone)
    count, unit = int(spec[:-1]), spec[-1]
    lo = ms(datetime.fromisoformat(start).replace(tzinfo=UTC))
    hi = ms(datetime.fromisoformat(end).replace(tzinfo=UTC))
    pts = list(range(lo, hi, step_min * 60_000))
    bs = boundaries(z, count, unit, pts[0], lo, hi)
    buckets = {}
    for p in pts:
        b = max(x for x in bs if x <= p)
        buckets[b] = buckets.get(b, 0) + 1
    body = ", ".join(f"({b}, {c})" for b, c in sorted(buckets.items()))
    print(f"    // {zone} {spec}c, a point every {step_min} min in [{start}Z, {end}Z)")
    print(f"    Case {{ name: \"{name}\", zone: \"{zone}\", spec: \"{spec}c-count\", start: {lo}, end: {hi}, step_ms: {step_min * 60_000},")
    print(f"        want: &[{body}] }},")


print("const CASES: &[Case] = &[")
case("paris_spring_23h_day", "Europe/Paris", "1d", "2021-03-26T00:00", "2021-03-31T00:00", 60)
case("paris_autumn_25h_day", "Europe/Paris", "1d", "2021-10-29T00:00", "2021-11-02T00:00", 60)
case("paris_autumn_hours_in_fold", "Europe/Paris", "1h", "2021-10-30T20:00", "2021-10-31T04:00", 30)
case("new_york_6h_drifts_after_dst", "America/New_York", "6h", "2021-03-13T00:00", "2021-03-16T00:00", 60)
case("new_york_weeks_over_fall_back", "America/New_York", "1w", "2021-10-20T00:00", "2021-11-20T00:00", 360)
case("lord_howe_hours_30min_dst_end", "Australia/Lord_Howe", "1h", "2021-04-03T12:00", "2021-04-03T20:00", 15)
case("lord_howe_days_30min_dst_end", "Australia/Lord_Howe", "1d", "2021-04-02T00:00", "2021-04-06T00:00", 30)
case("kolkata_hours", "Asia/Kolkata", "1h", "2021-05-01T00:00", "2021-05-01T06:00", 20)
case("kolkata_days", "Asia/Kolkata", "1d", "2021-05-01T00:00", "2021-05-04T00:00", 60)
case("kolkata_months", "Asia/Kolkata", "1n", "2021-01-15T00:00", "2021-04-15T00:00", 360)
case("kathmandu_hours", "Asia/Kathmandu", "1h", "2021-05-01T00:00", "2021-05-01T05:00", 15)
case("kathmandu_6h", "Asia/Kathmandu", "6h", "2021-05-01T00:00", "2021-05-03T00:00", 60)
case("kathmandu_days", "Asia/Kathmandu", "1d", "2021-05-01T00:00", "2021-05-04T00:00", 60)
case("adelaide_2d_over_dst_start", "Australia/Adelaide", "2d", "2021-09-28T00:00", "2021-10-08T00:00", 120)
case("adelaide_months_over_dst_start", "Australia/Adelaide", "1n", "2021-08-10T00:00", "2021-12-10T00:00", 720)
case("tongatapu_days", "Pacific/Tongatapu", "1d", "2021-06-01T00:00", "2021-06-04T00:00", 60)
case("tongatapu_weeks", "Pacific/Tongatapu", "1w", "2021-06-01T00:00", "2021-06-22T00:00", 360)
case("kiritimati_days", "Pacific/Kiritimati", "1d", "2021-06-01T00:00", "2021-06-04T00:00", 60)
case("kiritimati_years", "Pacific/Kiritimati", "1y", "2020-11-01T00:00", "2022-02-01T00:00", 1440)
case("apia_skips_2011_12_30", "Pacific/Apia", "1d", "2011-12-27T00:00", "2012-01-02T00:00", 60)
print("];")
