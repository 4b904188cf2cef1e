//! Other readings of what the model sent: OLD with copied line-number prefixes, OLD written as a
//! JSON-escaped string. Each reading is only tried after the literal text failed to match.

use std::sync::LazyLock;

use regex::Regex;

use super::text::is_blank;

/// `cat -n` (`%6d\t`), `12 | `, `12: `, `12→` (a numbered `read_file`), each optionally indented.
static PREFIX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[ \t]*(\d{1,7})(\t|→| ?\| ?|: ?)").expect("line-number regex compiles")
});

fn separator_kind(sep: &str) -> u8 {
    match sep {
        "\t" => 0,
        "→" => 1,
        s if s.contains('|') => 2,
        _ => 3,
    }
}

/// Strips line-number prefixes when every non-blank line of `old` carries one, in one style,
/// numbered consecutively (blank lines may have lost theirs). Returns the stripped text, the
/// first line number and the style for stripping NEW.
pub(crate) fn strip_line_numbers(old: &str) -> Option<(String, usize, u8)> {
    let mut out = String::with_capacity(old.len());
    let mut first: Option<usize> = None;
    let mut style = None;
    let mut any = false;
    for (i, raw) in old.split_inclusive('\n').enumerate() {
        let (body, eol) = split_eol(raw);
        match PREFIX.captures(body) {
            Some(c) => {
                let n: usize = c[1].parse().ok()?;
                let kind = separator_kind(&c[2]);
                if *style.get_or_insert(kind) != kind {
                    return None;
                }
                let start = *first.get_or_insert(n.checked_sub(i)?);
                if n != start + i {
                    return None;
                }
                let whole = c.get(0)?;
                out.push_str(&body[whole.end()..]);
                any = true;
            }
            None if is_blank(body) => out.push_str(body),
            None => return None,
        }
        out.push_str(eol);
    }
    let first = first?;
    if !any {
        return None;
    }
    Some((out, first.max(1), style?))
}

/// Strips prefixes of `style` from the lines of NEW that carry one; lines the model added
/// without a number stay as written.
pub(crate) fn strip_new_line_numbers(new: &str, style: u8) -> String {
    let mut out = String::with_capacity(new.len());
    for raw in new.split_inclusive('\n') {
        let (body, eol) = split_eol(raw);
        match PREFIX.captures(body) {
            Some(c) if separator_kind(&c[2]) == style => {
                let end = c.get(0).map_or(0, |m| m.end());
                out.push_str(&body[end..]);
            }
            _ => out.push_str(body),
        }
        out.push_str(eol);
    }
    out
}

fn split_eol(raw: &str) -> (&str, &str) {
    if let Some(b) = raw.strip_suffix("\r\n") {
        (b, "\r\n")
    } else if let Some(b) = raw.strip_suffix('\n') {
        (b, "\n")
    } else {
        (raw, "")
    }
}

/// Unescapes a JSON string body (`\n`, `\t`, `\"`, `\\`, `\uXXXX`) when `s` looks like one: it has
/// no real newline but does have escapes. Surrounding quotes are dropped.
pub(crate) fn json_unescape(s: &str) -> Option<String> {
    if s.contains('\n') || !(s.contains("\\n") || s.contains("\\\"") || s.contains("\\t")) {
        return None;
    }
    let body = s
        .strip_prefix('"')
        .and_then(|b| b.strip_suffix('"'))
        .unwrap_or(s);
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('"') => out.push('"'),
            Some('\\') => out.push('\\'),
            Some('/') => out.push('/'),
            Some('u') => {
                let hex: String = (0..4).filter_map(|_| chars.next()).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(ch) => out.push(ch),
                    None => {
                        out.push_str("\\u");
                        out.push_str(&hex);
                    }
                }
            }
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    if out == s { None } else { Some(out) }
}

/// Unescapes the HTML entities models write when their tool calls travel as XML (`&lt;`,
/// `&gt;`, `&amp;`, `&quot;`, `&#39;`, `&apos;`); `None` when `s` has none.
pub(crate) fn html_unescape(s: &str) -> Option<String> {
    const ENTITIES: [(&str, &str); 6] = [
        ("&lt;", "<"),
        ("&gt;", ">"),
        ("&quot;", "\""),
        ("&#39;", "'"),
        ("&apos;", "'"),
        ("&amp;", "&"),
    ];
    if !ENTITIES.iter().any(|(e, _)| s.contains(e)) {
        return None;
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    'outer: while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        for (e, c) in ENTITIES {
            if let Some(r) = rest.strip_prefix(e) {
                out.push_str(c);
                rest = r;
                continue 'outer;
            }
        }
        out.push('&');
        rest = &rest[1..];
    }
    out.push_str(rest);
    Some(out)
}

/// Removes a Markdown code fence around a snippet (```` ```lang ```` … ```` ``` ````, or `~~~`);
/// `None` when the snippet is not fenced.
pub(crate) fn strip_fence(s: &str) -> Option<String> {
    let t = s.trim_matches(['\n', '\r']);
    let lines: Vec<&str> = t.split_inclusive('\n').collect();
    let block = super::text::fence_at(&lines, 0)?;
    if !block.closed || block.end != lines.len() {
        return None;
    }
    let body = block.body.strip_suffix('\n').unwrap_or(&block.body);
    Some(body.strip_suffix('\r').unwrap_or(body).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_consecutive_prefixes() {
        let (s, first, _) = strip_line_numbers("    12\tfn a() {\n    13\t    b();\n").unwrap();
        assert_eq!(s, "fn a() {\n    b();\n");
        assert_eq!(first, 12);
        let (s, _, _) = strip_line_numbers("7 | x = 1\n8 | y = 2").unwrap();
        assert_eq!(s, "x = 1\ny = 2");
        let (s, _, _) = strip_line_numbers("     3→a\n\n     5→b").unwrap();
        assert_eq!(s, "a\n\nb");
        assert!(strip_line_numbers("12: a\n14: b").is_none());
        assert!(strip_line_numbers("12: a\nb").is_none());
        assert!(strip_line_numbers("no numbers").is_none());
    }

    #[test]
    fn unescapes_html_and_strips_fences() {
        assert_eq!(
            html_unescape("if a &lt; b &amp;&amp; c &gt; d").unwrap(),
            "if a < b && c > d"
        );
        assert_eq!(html_unescape("&amp;lt;").unwrap(), "&lt;");
        assert!(html_unescape("a < b").is_none());
        assert_eq!(
            strip_fence("```python\nx = 1\ny = 2\n```").unwrap(),
            "x = 1\ny = 2"
        );
        assert_eq!(strip_fence("~~~\nx\n~~~\n").unwrap(), "x");
        assert!(strip_fence("x = 1\n```").is_none());
    }

    #[test]
    fn unescapes_json_strings() {
        assert_eq!(
            json_unescape(r#"fn a() {\n    println!(\"hi\");\n}"#).unwrap(),
            "fn a() {\n    println!(\"hi\");\n}"
        );
        assert!(json_unescape("plain").is_none());
        assert!(json_unescape("real\nnewline \\n").is_none());
    }
}
