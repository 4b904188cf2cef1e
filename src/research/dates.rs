//! Dates as providers write them — RFC 822 in RSS (`Tue, 10 Jun 2003 04:00:00 GMT`), RFC 3339
//! in Atom and JSON APIs (`2003-12-13T18:30:02.25+01:00`), bare `YYYY-MM-DD` or `YYYY` — to one
//! form: the UTC calendar date `YYYY-MM-DD` (or `YYYY` when that is all there is).
//!
//! Pure; anything unreadable is `None`, never a panic.

use crate::store::{civil_from_days, days_from_civil};

/// Any supported form to `YYYY-MM-DD` (UTC) or `YYYY`.
pub fn normalize_date(text: &str) -> Option<String> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    if t.as_bytes().first()?.is_ascii_digit()
        && t.len() >= 4
        && t[..4].bytes().all(|b| b.is_ascii_digit())
    {
        return parse_rfc3339(t);
    }
    parse_rfc822(t)
}

/// RFC 3339 / ISO 8601 (`2024-05-01`, `2024-05`, `2024`, with an optional time and offset).
pub fn parse_rfc3339(text: &str) -> Option<String> {
    let t = text.trim();
    let (date, time) = match t.find(['T', 't', ' ']) {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let mut parts = date.split('-');
    let year: i64 = parts.next()?.parse().ok()?;
    if !(1000..=9999).contains(&year) {
        return None;
    }
    let Some(month) = parts.next() else {
        return Some(format!("{year:04}"));
    };
    let month: u32 = month.parse().ok().filter(|m| (1..=12).contains(m))?;
    let Some(day) = parts.next() else {
        return Some(format!("{year:04}-{month:02}"));
    };
    let day: u32 = day
        .parse()
        .ok()
        .filter(|d| (1..=days_in_month(year, month)).contains(d))?;
    let mut days = days_from_civil(year, month, day);
    if let Some(time) = time {
        let (clock, offset) = split_offset(time)?;
        let mut fields = clock.split(':');
        let h: i64 = fields
            .next()?
            .parse()
            .ok()
            .filter(|h| (0..=23).contains(h))?;
        let m: i64 = fields
            .next()?
            .parse()
            .ok()
            .filter(|m| (0..=59).contains(m))?;
        let minutes = h * 60 + m - offset;
        days += minutes.div_euclid(24 * 60);
    }
    let (y, m, d) = civil_from_days(days);
    Some(format!("{y:04}-{m:02}-{d:02}"))
}

/// `14:00:00.5+01:00` → (`14:00:00.5`, 60); `Z` is 0; no offset is UTC.
fn split_offset(time: &str) -> Option<(&str, i64)> {
    if let Some(clock) = time.strip_suffix(['Z', 'z']) {
        return Some((clock, 0));
    }
    if let Some(i) = time.rfind(['+', '-']) {
        let (clock, off) = time.split_at(i);
        let sign = if off.starts_with('-') { -1 } else { 1 };
        let off = off[1..].replace(':', "");
        if off.len() != 4 || !off.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let h: i64 = off[..2].parse().ok()?;
        let m: i64 = off[2..].parse().ok()?;
        return Some((clock, sign * (h * 60 + m)));
    }
    Some((time, 0))
}

/// RFC 822 / 2822 (`Tue, 10 Jun 2003 04:00:00 GMT`, `10 Jun 03 04:00 -0700`).
pub fn parse_rfc822(text: &str) -> Option<String> {
    let t = text.trim();
    let t = match t.find(',') {
        Some(i) => &t[i + 1..],
        None => t,
    };
    let mut fields = t.split_whitespace();
    let day: u32 = fields.next()?.parse().ok()?;
    let month = month_number(fields.next()?)?;
    let year_text = fields.next()?;
    let mut year: i64 = year_text.parse().ok()?;
    if year_text.len() == 2 {
        year += if year < 50 { 2000 } else { 1900 };
    }
    if !(1000..=9999).contains(&year) || !(1..=days_in_month(year, month)).contains(&day) {
        return None;
    }
    let mut days = days_from_civil(year, month, day);
    if let Some(clock) = fields.next() {
        let mut parts = clock.split(':');
        let h: i64 = parts
            .next()?
            .parse()
            .ok()
            .filter(|h| (0..=23).contains(h))?;
        let m: i64 = parts
            .next()?
            .parse()
            .ok()
            .filter(|m| (0..=59).contains(m))?;
        let offset = fields.next().map(zone_minutes).unwrap_or(Some(0))?;
        days += (h * 60 + m - offset).div_euclid(24 * 60);
    }
    let (y, m, d) = civil_from_days(days);
    Some(format!("{y:04}-{m:02}-{d:02}"))
}

fn zone_minutes(zone: &str) -> Option<i64> {
    let z = zone.to_ascii_uppercase();
    let hours = match z.as_str() {
        "GMT" | "UT" | "UTC" | "Z" => 0,
        "EST" => -5,
        "EDT" => -4,
        "CST" => -6,
        "CDT" => -5,
        "MST" => -7,
        "MDT" => -6,
        "PST" => -8,
        "PDT" => -7,
        _ => {
            let (sign, digits) = match z.split_at_checked(1)? {
                ("+", d) => (1, d),
                ("-", d) => (-1, d),
                _ => return Some(0),
            };
            if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let h: i64 = digits[..2].parse().ok()?;
            let m: i64 = digits[2..].parse().ok()?;
            return Some(sign * (h * 60 + m));
        }
    };
    Some(hours * 60)
}

fn month_number(name: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let lower = name.to_ascii_lowercase();
    let key = lower.get(..3)?;
    MONTHS.iter().position(|m| *m == key).map(|i| i as u32 + 1)
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_feed_date_formats_and_partial_dates() {
        let cases = [
            ("Tue, 10 Jun 2003 04:00:00 GMT", Some("2003-06-10")),
            ("Tue, 10 Jun 2003 23:30:00 -0700", Some("2003-06-11")),
            ("10 Jun 03 04:00 EST", Some("2003-06-10")),
            ("Sat, 01 Jan 2000 00:30:00 +0100", Some("1999-12-31")),
            ("2003-12-13T18:30:02Z", Some("2003-12-13")),
            ("2003-12-13T23:30:02.25-01:00", Some("2003-12-14")),
            ("2024-02-29", Some("2024-02-29")),
            ("2023-02-29", None),
            ("2024-05", Some("2024-05")),
            ("2024", Some("2024")),
            ("yesterday", None),
            ("", None),
            ("Mon, 99 Foo 2003", None),
            ("2024-13-01", None),
        ];
        for (input, want) in cases {
            assert_eq!(normalize_date(input).as_deref(), want, "{input}");
        }
    }
}
