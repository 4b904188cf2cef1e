//! Repairs the JSON a model writes for a tool call, where one reading is the only one possible,
//! and explains the rest to the model.
//!
//! Measured on Qwen2.5-Coder-1.5B's answers in develop runs (`docs/develop.md`, "Tool calls
//! written as text"): a third of its text tool calls were not JSON, and every one was lost.
//! They put code into string values as it is in the file — line breaks and tabs raw, double
//! quotes unescaped (`"content": "if arg.starts_with("--") {` …) — wrote a value as a
//! JavaScript template literal, or sent two calls as two objects one after the other. This
//! module repairs exactly those: a raw control character inside a string is escaped; a double
//! quote inside a string is taken as the string's end only when what follows can continue the
//! JSON (`,` and the next key, `}` or `]` and then the end of a container, `:` after a key),
//! and is escaped otherwise; a backslash that starts no JSON escape is a backslash. What stays
//! ambiguous (a quote followed by `, ` and a key-like `"x":` inside code) is not guessed: the
//! parse error is described with the argument it is in ([`explain`]). Pure; never panics.

/// Where a string stands in the JSON around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Key,
    ObjectValue,
    ArrayValue,
    Top,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    Object,
    Array,
}

/// `text` with single-quoted strings, trailing commas, comments, Python literals, raw control
/// characters and unescaped quotes inside strings, invalid escapes and template-literal values
/// turned into JSON. Text that is JSON already comes back unchanged.
pub(super) fn repair_json(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 16);
    let mut stack: Vec<Container> = Vec::new();
    // The next string in the current object is a key.
    let mut expect_key = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let role = if expect_key {
            Role::Key
        } else {
            match stack.last() {
                Some(Container::Object) => Role::ObjectValue,
                Some(Container::Array) => Role::ArrayValue,
                None => Role::Top,
            }
        };
        match c {
            '{' | '[' => {
                stack.push(if c == '{' {
                    Container::Object
                } else {
                    Container::Array
                });
                expect_key = c == '{';
                out.push(c);
                i += 1;
            }
            '}' | ']' => {
                stack.pop();
                expect_key = false;
                out.push(c);
                i += 1;
            }
            ':' => {
                expect_key = false;
                out.push(c);
                i += 1;
            }
            '"' => {
                i = copy_string(&chars, i, role, &mut out);
                // A value left open before the next key: that key is still read as one, so the
                // parse error stands at it (`explain`).
                let k = skip_blank(&chars, i);
                expect_key =
                    role == Role::ObjectValue && chars[i..k].contains(&'\n') && key_at(&chars, k);
            }
            // Only as a value inside a container: a fence after the JSON is not a value.
            '`' if matches!(role, Role::ObjectValue | Role::ArrayValue) => {
                i = template_literal(&chars, i, role, &mut out);
            }
            '\'' => {
                // A single-quoted string becomes a double-quoted one.
                out.push('"');
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    match chars[i] {
                        '\\' if i + 1 < chars.len() => {
                            if chars[i + 1] == '\'' {
                                out.push('\'');
                            } else {
                                out.push('\\');
                                out.push(chars[i + 1]);
                            }
                            i += 2;
                        }
                        other => {
                            push_escaped(&mut out, other);
                            i += 1;
                        }
                    }
                }
                if i < chars.len() {
                    out.push('"');
                    i += 1;
                }
                expect_key = false;
            }
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                    i += 1;
                }
                i = (i + 2).min(chars.len());
            }
            ',' => {
                let k = skip_ws(&chars, i + 1);
                if !matches!(chars.get(k), Some('}') | Some(']')) {
                    out.push(',');
                }
                expect_key = stack.last() == Some(&Container::Object);
                i += 1;
            }
            c if c.is_ascii_alphabetic() => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                out.push_str(match word.as_str() {
                    "True" => "true",
                    "False" => "false",
                    "None" => "null",
                    other => other,
                });
            }
            other => {
                out.push(other);
                i += 1;
            }
        }
    }
    out
}

/// The model-facing account of why `repaired` (the output of [`repair_json`]) does not parse:
/// which argument, what is wrong there, and how to write it.
pub(super) fn explain(repaired: &str, err: &serde_json::Error) -> String {
    let offset = offset_of(repaired, err.line(), err.column());
    let key = key_before(&repaired[..offset]);
    let found: String = repaired[offset..]
        .chars()
        .take(40)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let found = found.trim_end();
    let at = format!("line {}, column {}", err.line(), err.column());
    let what = err.to_string();
    let next_key = leading_key(&repaired[offset..]).filter(|_| what.starts_with("expected `,` or"));
    let problem = if let Some(next) = next_key {
        format!(
            "the string is not closed before the next argument \"{next}\" ({at}): end it with \
             a double quote, then a comma"
        )
    } else if err.is_eof() {
        format!("the JSON ends before this value is closed ({at})")
    } else if what.starts_with("expected `,` or") && key.is_some() {
        format!(
            "a double quote inside it is not escaped, so the string ends early and `{found}` \
             follows it ({at})"
        )
    } else if what.starts_with("expected value") {
        format!("its value is not JSON: it starts with `{found}` ({at})")
    } else {
        let what = what.split(" at line").next().unwrap_or(&what);
        format!("{what} at `{found}` ({at})")
    };
    let place = match key {
        Some(k) => format!("the argument \"{k}\": {problem}"),
        None => problem,
    };
    format!(
        "the arguments are not valid JSON, in {place}. Write each argument as one JSON \
         string: inside it, a double quote as \\\", a line break as \\n, a tab as \\t and a \
         backslash as \\\\"
    )
}

/// Copies the string that opens at `chars[start]` (a `"`) as JSON; returns the index after it.
fn copy_string(chars: &[char], start: usize, role: Role, out: &mut String) -> usize {
    out.push('"');
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => match chars.get(i + 1) {
                Some('u')
                    if (i + 2..i + 6)
                        .all(|k| chars.get(k).is_some_and(char::is_ascii_hexdigit)) =>
                {
                    out.extend(&chars[i..i + 6]);
                    i += 6;
                }
                Some(&n @ ('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't')) => {
                    out.push('\\');
                    out.push(n);
                    i += 2;
                }
                // The text ends after the backslash: left for the parser to call cut off.
                None => {
                    out.push('\\');
                    i += 1;
                }
                // `\d` in a regex, `\s` in a path: a backslash that escapes nothing.
                Some(_) => {
                    out.push_str("\\\\");
                    i += 1;
                }
            },
            '"' if ends_string(chars, i + 1, role) => {
                out.push('"');
                return i + 1;
            }
            // A line break followed by the next key (`"path":`): the string was not closed.
            // Which of its quotes was meant to close it is not known, so it ends here and the
            // parse error says so (`explain`).
            '\n' if role == Role::ObjectValue && key_at(chars, skip_blank(chars, i + 1)) => {
                out.push('"');
                return i;
            }
            c => {
                push_escaped(out, c);
                i += 1;
            }
        }
    }
    i
}

/// A value written as a JavaScript template literal (`` `…` ``, seen for TypeScript code):
/// its text up to the backtick that ends it (followed by what can continue the JSON), with
/// `` \` `` as a backtick. Without such an end the backtick is copied and the parse fails.
fn template_literal(chars: &[char], start: usize, role: Role, out: &mut String) -> usize {
    let mut k = start + 1;
    while k < chars.len() {
        match chars[k] {
            '\\' if chars.get(k + 1) == Some(&'`') => k += 2,
            '`' if ends_string(chars, k + 1, role) => {
                out.push('"');
                let mut j = start + 1;
                while j < k {
                    if chars[j] == '\\' && chars.get(j + 1) == Some(&'`') {
                        out.push('`');
                        j += 2;
                    } else {
                        push_escaped(out, chars[j]);
                        j += 1;
                    }
                }
                out.push('"');
                return k + 1;
            }
            _ => k += 1,
        }
    }
    out.push('`');
    start + 1
}

/// Whether a quote just before `chars[j]` can end a string in `role`: what follows continues
/// the JSON around it.
fn ends_string(chars: &[char], j: usize, role: Role) -> bool {
    let k = skip_blank(chars, j);
    match chars.get(k) {
        None => true,
        Some(':') => role == Role::Key,
        Some('}' | ']') => role != Role::Key && ends_container(chars, k + 1),
        Some(',') => match role {
            Role::Key => false,
            Role::ObjectValue => starts_key(chars, k + 1),
            Role::ArrayValue | Role::Top => true,
        },
        // The next key on a new line, without the comma: the parse error names it.
        Some('"') => role == Role::ObjectValue && chars[j..k].contains(&'\n') && key_at(chars, k),
        _ => false,
    }
}

/// After a closing `}` or `]`: the end, another closer, a comma or a next value.
fn ends_container(chars: &[char], j: usize) -> bool {
    let k = skip_ws(chars, j);
    matches!(chars.get(k), None | Some(',' | '}' | ']' | '{' | '[' | '`'))
}

/// After a comma in an object: the next key (`"name":`), or the object's end.
fn starts_key(chars: &[char], j: usize) -> bool {
    let k = skip_ws(chars, j);
    chars.get(k) == Some(&'}') || key_at(chars, k)
}

/// Whether a key starts at `k`: a short quoted name and a colon.
fn key_at(chars: &[char], k: usize) -> bool {
    match chars.get(k) {
        Some(&q @ ('"' | '\'')) => {
            let mut m = k + 1;
            while m < chars.len() && m - k <= 64 {
                match chars[m] {
                    c if c == q => return chars.get(skip_blank(chars, m + 1)) == Some(&':'),
                    '\\' | '\n' => return false,
                    _ => m += 1,
                }
            }
            false
        }
        _ => false,
    }
}

/// The index of the next character that is not white space. Inside a string only this: a
/// line of code may start with `//`.
fn skip_blank(chars: &[char], mut k: usize) -> usize {
    while k < chars.len() && chars[k].is_whitespace() {
        k += 1;
    }
    k
}

/// The index of the next character that is neither white space nor in a comment (after a
/// comma, where JSON with comments has them).
fn skip_ws(chars: &[char], mut k: usize) -> usize {
    loop {
        while k < chars.len() && chars[k].is_whitespace() {
            k += 1;
        }
        match (chars.get(k), chars.get(k + 1)) {
            (Some('/'), Some('/')) => {
                while k < chars.len() && chars[k] != '\n' {
                    k += 1;
                }
            }
            (Some('/'), Some('*')) => {
                k += 2;
                while k < chars.len() && !(chars[k] == '*' && chars.get(k + 1) == Some(&'/')) {
                    k += 1;
                }
                k = (k + 2).min(chars.len());
            }
            _ => return k,
        }
    }
}

/// `c` as it is written inside a JSON string.
fn push_escaped(out: &mut String, c: char) {
    match c {
        '"' => out.push_str("\\\""),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
        c => out.push(c),
    }
}

/// The byte offset of serde's 1-based `line` and `column` in `text`, clamped to the text.
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let mut offset = (start + column.saturating_sub(1)).min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// The key `text` starts with (`"path": …`).
fn leading_key(text: &str) -> Option<String> {
    let rest = text.trim_start().strip_prefix('"')?;
    let (key, after) = rest.split_once('"')?;
    let word = !key.is_empty()
        && key.len() <= 64
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-');
    (word && after.trim_start().starts_with(':')).then(|| key.to_owned())
}

/// The last key (`"name":`, not one escaped inside a string) in `text`.
fn key_before(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut end = text.len();
    while let Some(colon) = text[..end].rfind(':') {
        end = colon;
        let before = text[..colon].trim_end();
        let Some(body) = before.strip_suffix('"') else {
            continue;
        };
        let Some(open) = body.rfind('"') else {
            continue;
        };
        let key = &body[open + 1..];
        let escaped = open > 0 && bytes[open - 1] == b'\\';
        if !escaped
            && !key.is_empty()
            && key.len() <= 64
            && key
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        {
            return Some(key.to_owned());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn repaired(text: &str) -> Value {
        let r = repair_json(text);
        serde_json::from_str(&r).unwrap_or_else(|e| panic!("{e}\n{r}"))
    }

    #[test]
    fn raw_line_breaks_and_tabs_inside_strings_are_escaped() {
        // Qwen2.5-Coder-1.5B, rust-flag fix round: the code as it is in the file.
        let text = "{\n  \"name\": \"edit_file\",\n  \"arguments\": {\n    \"new_string\": \"let words = 1;\n\twords\",\n    \"path\": \"src/lib.rs\"\n  }\n}";
        assert_eq!(
            repaired(text)["arguments"],
            json!({"new_string": "let words = 1;\n\twords", "path": "src/lib.rs"})
        );
    }

    #[test]
    fn quotes_that_cannot_end_the_string_are_escaped() {
        // Qwen2.5-Coder-1.5B, rust-flag step 1: `"--"` and `"true"` unescaped in the code.
        let text = r#"{"content": "if arg.starts_with("--") {\n    map.insert(arg, String::from("true"));\n}\n", "path": "tests/cli.rs"}"#;
        assert_eq!(
            repaired(text),
            json!({"content": "if arg.starts_with(\"--\") {\n    map.insert(arg, String::from(\"true\"));\n}\n", "path": "tests/cli.rs"})
        );
        // A quote followed by `,` and code (not a key) is inside the string too.
        let text = r#"{"content": "println!("{}", x);", "path": "a.rs"}"#;
        assert_eq!(repaired(text)["content"], "println!(\"{}\", x);");
        // `"}"` inside code: the `}` is not followed by what ends an object.
        let text = r#"{"content": "let s = "}";", "path": "a.rs"}"#;
        assert_eq!(repaired(text)["content"], "let s = \"}\";");
        // The last value before the object's end.
        let text = "{\"path\": \"a.rs\", \"content\": \"say \"hi\"\"\n}";
        assert_eq!(repaired(text)["content"], "say \"hi\"");
    }

    #[test]
    fn json_stays_as_it_is() {
        for text in [
            r#"{"a": "x \"y\", z", "b": ["1", "2"], "c": {"d": "e"}}"#,
            r#"["a", "b,", "c"]"#,
            r#"{"re": "\\d+\u00e9"}"#,
        ] {
            assert_eq!(repair_json(text), text);
        }
    }

    #[test]
    fn invalid_escapes_and_template_literals() {
        assert_eq!(repaired(r#"{"re": "\d+\s"}"#), json!({"re": "\\d+\\s"}));
        // Qwen2.5-Coder-1.5B, ts-add-fn: a TypeScript file as a template literal.
        let text = "{\"content\": `\nimport { a } from \"./a\";\nconst s = `x\\``;\n`,\n\"path\": \"src/a.ts\"}";
        assert_eq!(
            repaired(text)["content"],
            "\nimport { a } from \"./a\";\nconst s = `x``;\n"
        );
    }

    #[test]
    fn what_stays_ambiguous_is_explained_with_its_argument() {
        // Qwen2.5-Coder-1.5B, rust-rename: a quote followed by `, ` and code is inside.
        let text = r#"{"content": "println!(\"words: {}", wordstat::count(&text));", "path": "src/main.rs"}"#;
        assert_eq!(
            repaired(text)["content"],
            "println!(\"words: {}\", wordstat::count(&text));"
        );
        // Followed by `, "b":` the quote could end the string: not guessed, explained.
        let text = r#"{"content": "const o = {a: "x", "b": 1};", "path": "src/o.ts"}"#;
        let r = repair_json(text);
        let err = serde_json::from_str::<Value>(&r).unwrap_err();
        let message = explain(&r, &err);
        assert!(message.contains("a double quote as \\\""), "{message}");
        assert!(message.contains("the argument \"b\""), "{message}");
        // Not a JSON value at all.
        let text = "{\"content\": <<EOF\nx\nEOF\n}";
        let r = repair_json(text);
        let err = serde_json::from_str::<Value>(&r).unwrap_err();
        let message = explain(&r, &err);
        assert!(
            message.contains("\"content\": its value is not JSON"),
            "{message}"
        );
    }

    #[test]
    fn a_string_left_open_before_the_next_key_is_explained() {
        // Qwen2.5-Coder-1.5B, rust-add-fn step 2: the content's closing quote and comma are
        // missing; which quote was meant to close it is not known.
        let text = "{\n  \"name\": \"write_file\",\n  \"arguments\": {\n    \"content\": \"/// Counts.\\n/// ```\n    \"path\": \"tests/lib.rs\"\n  }\n}";
        let r = repair_json(text);
        let err = serde_json::from_str::<Value>(&r).unwrap_err();
        let message = explain(&r, &err);
        assert!(
            message.contains(
                "in the argument \"content\": the string is not closed before the next \
                 argument \"path\""
            ),
            "{message}"
        );
        // The closing quote is there and the comma is missing: the same account.
        let text = "{\"content\": \"say \"hi\"\"\n \"path\": \"a.txt\"}";
        let r = repair_json(text);
        let err = serde_json::from_str::<Value>(&r).unwrap_err();
        assert!(
            explain(&r, &err).contains("not closed before the next argument \"path\""),
            "{r}"
        );
        // A line break before `}` inside code is not the end of the string.
        assert_eq!(
            repaired("{\"content\": \"fn main() {\n}\n\", \"path\": \"a.rs\"}")["content"],
            "fn main() {\n}\n"
        );
    }

    #[test]
    fn keys_are_found_and_offsets_clamped() {
        assert_eq!(key_before(r#"{"a": "x\": y", "b": "z"#), Some("b".into()));
        assert_eq!(key_before(r#"{"a\": 1"#), None);
        assert_eq!(offset_of("é\nb", 1, 2), 0);
        assert_eq!(offset_of("a\nb", 9, 9), 3);
    }
}
