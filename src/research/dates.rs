//! Dates as providers write them — RFC 822 in RSS (`Tue, 10 Jun 2003 04:00:00 GMT`), RFC 3339
//! in Atom and JSON APIs (`2003-12-13T18:30:02.25+01:00`), bare `YYYY-MM-DD` or `YYYY` — to one
//! form: the UTC calendar date `YYYY-MM-DD` (or `YYYY` when that is all there is).
//!
//! Parsing and calendar arithmetic are chrono's (the crate feed-rs already brings); this module
//! only adds the lenient forms feeds use. Pure; anything unreadable is `None`, never a panic.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};

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
    if let Ok(moment) = DateTime::parse_from_rfc3339(t) {
        return Some(day(moment.with_timezone(&Utc)));
    }
    // Without seconds (`2024-05-01T14:00+02:00`) or without an offset (UTC).
    for format in ["%Y-%m-%dT%H:%M%#z", "%Y-%m-%d %H:%M%#z"] {
        if let Ok(moment) = DateTime::parse_from_str(t, format) {
            return Some(day(moment.with_timezone(&Utc)));
        }
    }
    for format in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S%.f",
    ] {
        if let Ok(naive) = NaiveDateTime::parse_from_str(t, format) {
            return Some(day(naive.and_utc()));
        }
    }
    let mut parts = t.split('-');
    let year: i32 = parts.next()?.parse().ok()?;
    if !(1000..=9999).contains(&year) {
        return None;
    }
    let Some(month) = parts.next() else {
        return Some(format!("{year:04}"));
    };
    let month: u32 = month.parse().ok().filter(|m| (1..=12).contains(m))?;
    let Some(rest) = parts.next() else {
        return Some(format!("{year:04}-{month:02}"));
    };
    let date = NaiveDate::from_ymd_opt(year, month, rest.parse().ok()?)?;
    Some(date.format("%Y-%m-%d").to_string())
}

/// RFC 822 / 2822 (`Tue, 10 Jun 2003 04:00:00 GMT`, `10 Jun 03 04:00 -0700`). The weekday is
/// ignored (feeds often get it wrong); a date without a time is that day.
pub fn parse_rfc822(text: &str) -> Option<String> {
    let t = text.trim();
    let t = match t.find(',') {
        Some(i) => t[i + 1..].trim(),
        None => t,
    };
    if let Ok(moment) = DateTime::parse_from_rfc2822(t) {
        return Some(day(moment.with_timezone(&Utc)));
    }
    // A zone chrono does not know, or none: read it as UTC.
    let fields: Vec<&str> = t.split_whitespace().collect();
    if fields.len() >= 4 {
        let with_utc = format!(
            "{} {} {} {} +0000",
            fields[0], fields[1], fields[2], fields[3]
        );
        if let Ok(moment) = DateTime::parse_from_rfc2822(&with_utc) {
            return Some(day(moment.with_timezone(&Utc)));
        }
    }
    let date_only = fields.get(..3)?.join(" ");
    for format in ["%d %b %Y", "%d %B %Y", "%d %b %y"] {
        if let Ok(date) = NaiveDate::parse_from_str(&date_only, format) {
            return Some(date.format("%Y-%m-%d").to_string());
        }
    }
    None
}

fn day(moment: DateTime<Utc>) -> String {
    moment.format("%Y-%m-%d").to_string()
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
            // A wrong weekday, a zone chrono does not name, a time without seconds.
            ("Wed, 10 Jun 2003 04:00:00 GMT", Some("2003-06-10")),
            ("10 Jun 2003 04:00 CEST", Some("2003-06-10")),
            ("10 June 2003", Some("2003-06-10")),
            ("2003-12-13T23:30+02:00", Some("2003-12-13")),
            ("2003-12-13 23:30:02", Some("2003-12-13")),
            ("99999-01-01", None),
            ("2024-05-01T25:00:00Z", None),
        ];
        for (input, want) in cases {
            assert_eq!(normalize_date(input).as_deref(), want, "{input}");
        }
    }
}
