//! Manual pages written in roff (`fzf.1`, `fd.1`, `tmux.1`) read as the Markdown the rest of
//! research understands, line for line.
//!
//! Command-line tools ship their reference as a man page beside the README, and research read
//! it as code (an extension of one digit is no prose): no passage had a section for a heading,
//! and a sentence quoted from it carried the markup (`\fB\-\-height\fR`, `.TP`, `.BR`) into the
//! report. [`as_markdown`] rewrites a page into the Markdown those readers handle: `.TH` into
//! the page's title (`# FZF(1)`), `.SH` and `.SS` into `##` and `###` headings; a tagged
//! paragraph (`.TP` over its tag line) into its tag, in code when it names an option or a
//! file, and a colon, so the description under it reads as one sentence ("`--height=HEIGHT`:
//! Display fzf window below the cursor …"); `.IP` items into list items; no-fill and example
//! blocks (`.nf`/`.fi`, `.EX`/`.EE`) into fenced code; font requests (`.B`, `.IR`, …) into
//! their text; escapes into the characters they print (`\-` a hyphen, `\(em` a dash, `\fB`
//! nothing); comments, ignored blocks (`.ig`), macro definitions and the other requests into
//! blank lines.
//!
//! **Line for line**, as [`crate::research::rst`]: the result has the page's lines in the same
//! places (a fence takes the `.nf` or `.EX` line; a block left open at the end of the page gets
//! its closing fence after its last line), so a citation names the line as written.
//!
//! Pure: no I/O. Hostile input (a request with unbalanced quotes, an escape cut at the end of a
//! line, a block never closed) is read as text or as a block to the end of the page; nothing
//! panics and no line is lost.

use crate::research::passages::extension;

/// Whether the page at `path` is a roff manual page: a section's extension (`1` to `9`, with a
/// suffix such as `1p` or `3pm`, or `man`) and a `.TH` or `.SH` request among its lines (a
/// rotated log, `app.log.1`, has none).
pub fn is_roff(path: &str, text: &str) -> bool {
    is_manual(path)
        && text
            .lines()
            .take(400)
            .any(|l| l.starts_with(".TH ") || l.starts_with(".SH"))
}

/// Whether `path` has a manual section's extension (`1` to `9`, with a suffix such as `1p` or
/// `3pm`, or `man`): prose, whose sentences are quoted, not code.
pub fn is_manual(path: &str) -> bool {
    extension(path).is_some_and(|e| {
        e == "man"
            || (e.starts_with(|c: char| ('1'..='9').contains(&c))
                && e.len() <= 4
                && e.chars().skip(1).all(|c| c.is_ascii_alphabetic()))
    })
}

/// `text` (a man page in roff) as Markdown with the same lines (module docs).
pub fn as_markdown(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = vec![String::new(); lines.len()];
    let mut literal = vec![false; lines.len()];
    // The lines that are a tag (`.TP`'s, `.IP`'s label), which open their description.
    let mut tagged = vec![false; lines.len()];
    // Inside a no-fill or example block: its fence.
    let mut fence: Option<String> = None;
    // What the next text line becomes: a heading (`.SH` alone), a tag (`.TP`), a list item.
    let mut next: Option<Next> = None;
    // Inside an ignored block or a macro's definition (`.ig`, `.de`): the request that ends it.
    let mut skipping: Option<String> = None;
    for (i, line) in lines.iter().enumerate() {
        let (request, args) = request(line);
        if let Some(end) = &skipping {
            if request == Some(end.as_str()) {
                skipping = None;
            }
            continue;
        }
        if let Some("ig" | "de" | "de1" | "am" | "ami") = request {
            let words = arguments(args);
            // `.ig` ends at `..` or at the request it names; `.de NAME END` at `.END`.
            let end = if request == Some("ig") {
                words.first()
            } else {
                words.get(1)
            };
            skipping = Some(end.map_or_else(|| ".".to_owned(), |e| e.to_owned()));
            continue;
        }
        if let Some(open) = &fence {
            match request {
                Some("fi" | "EE") => {
                    out[i] = open.clone();
                    fence = None;
                }
                Some(_) => {}
                None => out[i] = text_of(line),
            }
            continue;
        }
        let tag_next = matches!(next, Some(Next::Tag));
        let Some(request) = request else {
            // A text line that starts with a space is printed as it is, on a line of its own:
            // an example (`  seq 5 | fzf --height=~100%`), fenced below.
            literal[i] = line.starts_with([' ', '\t']) && !line.trim().is_empty();
            out[i] = if literal[i] {
                text_of(line)
            } else {
                placed(text_of(line), &mut next)
            };
            tagged[i] = tag_next && next.is_none();
            continue;
        };
        let words = arguments(args);
        let joined = words.join(" ");
        out[i] = match request {
            "TH" => {
                let title = match (words.first(), words.get(1)) {
                    (Some(name), Some(section)) => format!("{name}({section})"),
                    (Some(name), None) => (*name).to_owned(),
                    _ => String::new(),
                };
                if title.is_empty() {
                    String::new()
                } else {
                    format!("# {title}")
                }
            }
            "SH" | "SS" => {
                let level = if request == "SH" { 2 } else { 3 };
                if joined.trim().is_empty() {
                    next = Some(Next::Heading(level));
                    String::new()
                } else {
                    format!("{} {}", "#".repeat(level), heading_case(&joined))
                }
            }
            "TP" | "TQ" => {
                next = Some(Next::Tag);
                String::new()
            }
            "IP" => match words.first().map(|w| w.trim()) {
                None | Some("" | "\u{2022}" | "*" | "-" | "o" | "+") => {
                    next = Some(Next::Item);
                    String::new()
                }
                Some(label) => {
                    tagged[i] = true;
                    tag(label)
                }
            },
            "nf" | "EX" => {
                let body: Vec<&str> = lines[i + 1..]
                    .iter()
                    .take_while(|l| !matches!(self::request(l).0, Some("fi" | "EE")))
                    .copied()
                    .collect();
                let open = crate::edit::text::fence_for(body.iter().copied());
                fence = Some(open.clone());
                open
            }
            "B" | "I" | "SM" | "SB" => placed(joined, &mut next),
            "BR" | "RB" | "IR" | "RI" | "BI" | "IB" => placed(words.concat(), &mut next),
            // A tag may be set in a font too (`.B "\-\-tmux"` under `.TP`).
            // Paragraph breaks, indentation, spacing, fonts, strings, macros and comments.
            _ => String::new(),
        };
        if tag_next
            && next.is_none()
            && matches!(
                request,
                "B" | "I" | "SM" | "SB" | "BR" | "RB" | "IR" | "RI" | "BI" | "IB"
            )
        {
            tagged[i] = true;
        }
    }
    if let Some(open) = fence
        && let Some(last) = out.last_mut()
    {
        last.push('\n');
        last.push_str(&open);
    }
    fence_literals(&mut out, &literal);
    open_descriptions(&mut out, &tagged, &literal);
    crate::edit::text::joined_like(&out, text)
}

/// A tag moved onto the first line of its description (the tag's own line left blank), so the
/// two read as one sentence: "`--height=HEIGHT`: Display fzf window below the cursor …". On a
/// line of its own, the tag ending in a colon read as the lead-in of the lines under it, and
/// the description was no sentence to quote. A tag with no text right under it stays.
fn open_descriptions(out: &mut [String], tagged: &[bool], literal: &[bool]) {
    for i in 0..out.len().saturating_sub(1) {
        let under = out[i + 1].trim_start();
        let text = !under.is_empty()
            && !literal[i + 1]
            && !tagged[i + 1]
            && !under.starts_with(['#', '`', '-', '*', '|', '>']);
        if tagged[i] && text {
            let opened = format!("{} {under}", out[i].trim());
            out[i + 1] = opened;
            out[i].clear();
        }
    }
}

/// Fences each run of lines printed as they are (`literal`; blank lines between them belong to
/// the run) on the blank lines around it, so that `  # Will not take up 100% of the screen`
/// is an example's comment and not a heading. A run with no blank line before or after it
/// is set four spaces in instead, where no line reads as a heading.
fn fence_literals(out: &mut [String], literal: &[bool]) {
    let mut i = 0;
    while i < out.len() {
        if !literal[i] {
            i += 1;
            continue;
        }
        let start = i;
        let mut end = i;
        let mut j = i + 1;
        while j < out.len() && (literal[j] || out[j].trim().is_empty()) {
            if literal[j] {
                end = j;
            }
            j += 1;
        }
        let before = start
            .checked_sub(1)
            .filter(|b| out[*b].trim().is_empty() && !literal[*b]);
        let after = Some(end + 1).filter(|a| *a < out.len() && out[*a].trim().is_empty());
        if let (Some(before), Some(after)) = (before, after) {
            let fence = crate::edit::text::fence_for(out[start..=end].iter().map(String::as_str));
            out[before] = fence.clone();
            out[after] = fence;
        } else {
            // No room for a fence: four spaces in, no line of it reads as a heading.
            for k in start..=end {
                let indent = crate::research::passages::columns(&out[k]);
                if literal[k] && indent < 4 {
                    out[k].insert_str(0, &" ".repeat(4 - indent));
                }
            }
        }
        i = end + 2;
    }
}

/// Text `said` where `next` says it goes: a heading's title, a tag, a list item, or as it is.
/// Nothing said (a blank line, `.B` alone over the words it sets in bold) leaves `next` for
/// the line after it.
fn placed(said: String, next: &mut Option<Next>) -> String {
    let trimmed = said.trim();
    if trimmed.is_empty() {
        return said;
    }
    match next.take() {
        Some(Next::Heading(level)) => format!("{} {}", "#".repeat(level), heading_case(trimmed)),
        Some(Next::Tag) => tag(trimmed),
        Some(Next::Item) => format!("- {trimmed}"),
        None => said,
    }
}

/// What a text line after a request becomes.
#[derive(Clone, Copy)]
enum Next {
    /// A heading of this level (`.SH` with its title on the next line).
    Heading(usize),
    /// The tag of a tagged paragraph (`.TP`).
    Tag,
    /// A list item (`.IP` with a bullet).
    Item,
}

/// The request a line makes (`.SH`, `'br`) and the rest of the line; `None` for a text line.
/// A comment (`.\"`, `\"` alone) is a request with no name the reader knows.
fn request(line: &str) -> (Option<&str>, &str) {
    let Some(rest) = line.strip_prefix('.').or_else(|| line.strip_prefix('\'')) else {
        if line.starts_with("\\\"") {
            return (Some("\\\""), "");
        }
        return (None, line);
    };
    let rest = rest.trim_start();
    let end = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
    (Some(&rest[..end]), rest[end..].trim_start())
}

/// A request's arguments: words, or quoted strings with their spaces (`"\-\-height" "HEIGHT"`),
/// each with its escapes read ([`text_of`]). An unclosed quote runs to the end of the line.
fn arguments(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = args.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let Some(&first) = chars.peek() else { break };
        let mut word = String::new();
        if first == '"' {
            chars.next();
            while let Some(c) = chars.next() {
                if c == '"' {
                    // `""` inside a quoted argument is one quote.
                    if chars.next_if_eq(&'"').is_some() {
                        word.push('"');
                        continue;
                    }
                    break;
                }
                word.push(c);
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                word.push(c);
            }
        }
        // A comment ends the request.
        if word.starts_with("\\\"") {
            break;
        }
        out.push(text_of(&word));
    }
    out
}

/// A text line with its escapes read: fonts and sizes dropped, special characters printed,
/// a comment (`\"`) cut off.
fn text_of(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else { break };
        match e {
            '"' => break,
            '-' => out.push('-'),
            'e' | '\\' => out.push('\\'),
            '&' | '%' | '|' | '^' | 'c' | ':' | '/' | ',' | '!' => {}
            ' ' | '~' | '0' => out.push(' '),
            '.' => out.push('.'),
            '\'' => out.push('\''),
            '`' => out.push('`'),
            // A font (`\fB`, `\f(CW`, `\f[BI]`) and a string (`\*(xx`, `\*[name]`), whose
            // text is not known here.
            'f' | '*' => skip_argument(&mut chars, false),
            's' => {
                // `\s+2`, `\s0`, `\s[12]`
                chars.next_if(|c| *c == '+' || *c == '-');
                if chars.next_if_eq(&'[').is_some() {
                    while chars.next().is_some_and(|c| c != ']') {}
                } else {
                    while chars.next_if(|c| c.is_ascii_digit()).is_some() {}
                }
            }
            '(' => {
                let name: String = chars.by_ref().take(2).collect();
                out.push_str(special(&name));
            }
            '[' => {
                let mut name = String::new();
                for c in chars.by_ref() {
                    if c == ']' {
                        break;
                    }
                    name.push(c);
                }
                out.push_str(special(&name));
            }
            // Registers, colours, motions and the like: their argument goes with them.
            'n' | 'm' | 'k' | 'h' | 'v' | 'w' | 'o' | 'z' | 'X' | 'Y' | 'g' | 'V' | 'R' => {
                skip_argument(&mut chars, true)
            }
            other => out.push(other),
        }
    }
    out
}

/// Skips an escape's argument: one character, two after `(`, a name in `[…]`, and with
/// `quoted` a string in `'…'` (`\h'2m'`). An argument cut at the end of the line ends there.
fn skip_argument(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, quoted: bool) {
    match chars.next() {
        Some('(') => {
            chars.next();
            chars.next();
        }
        Some('[') => while chars.next().is_some_and(|c| c != ']') {},
        Some('\'') if quoted => while chars.next().is_some_and(|c| c != '\'') {},
        _ => {}
    }
}

/// The character a named special character prints (`\(em`, `\[lq]`); nothing for one this
/// reader does not know.
fn special(name: &str) -> &'static str {
    match name {
        "em" => "\u{2014}",
        "en" => "\u{2013}",
        "hy" | "mi" | "-" => "-",
        "bu" => "\u{2022}",
        "lq" | "rq" | "dq" => "\"",
        "oq" | "cq" | "aq" => "'",
        "ga" => "`",
        "ti" | "ap" => "~",
        "ha" | "a^" => "^",
        "rs" => "\\",
        "co" => "\u{a9}",
        "rg" => "\u{ae}",
        "tm" => "\u{2122}",
        "de" => "\u{b0}",
        "->" | "ra" => "\u{2192}",
        "<-" | "la" => "\u{2190}",
        "<=" => "\u{2264}",
        ">=" => "\u{2265}",
        "mu" => "\u{d7}",
        "sl" => "/",
        "ba" | "or" => "|",
        "lB" => "[",
        "rB" => "]",
        "lC" => "{",
        "rC" => "}",
        _ => "",
    }
}

/// A tag (`--height=HEIGHT[%]`, `~/.config/fzf`, `FZF_DEFAULT_OPTS`) as the lead-in of its
/// description: in code when it names something (an option, a path, a variable, a key), then
/// a colon.
fn tag(said: &str) -> String {
    let said = said.trim();
    // A tag that is a sentence of its own ("Most long options have … prefix.") leads in as
    // it is.
    if said.ends_with(['.', '!', '?', ':']) {
        return said.to_owned();
    }
    let names = said.starts_with(['-', '+'])
        || said.contains(['/', '=', '_', '$', '<'])
        || (said.len() > 1
            && said
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-'));
    if names && !said.contains('`') {
        format!("`{said}`:")
    } else {
        format!("{said}:")
    }
}

/// A section title as a heading: man pages write them in capitals (`OPTIONS`, `SEE ALSO`),
/// which read as shouting in a report; a title in capitals is given a capital and small
/// letters ("Options", "See also").
fn heading_case(title: &str) -> String {
    let title = title.trim();
    if title.chars().any(|c| c.is_lowercase()) || !title.chars().any(|c| c.is_alphabetic()) {
        return title.to_owned();
    }
    let lower = title.to_lowercase();
    let mut chars = lower.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#".\" Copyright notice, a comment
.TH FZF 1 "Oct 2024" "fzf 0.56" "fzf - a command-line fuzzy finder"
.SH NAME
fzf - a command-line fuzzy finder
.SH OPTIONS
.SS Layout
.TP
.BI "\-\-height=" "HEIGHT[%]"
Display fzf window below the cursor with the given height instead of using
the full screen.
.TP
.B "\-\-tmux"
Start fzf in a tmux popup (requires tmux 3.3 or later).
.SH ENVIRONMENT VARIABLES
.TP
.B FZF_DEFAULT_COMMAND
Default command to use when input is tty. On *nix systems, fzf runs the command
with \fB$SHELL \-c\fR if \fBSHELL\fR is set.
.SH EXAMPLES
.nf
    find * \-type f | fzf > selected
.fi
.IP \(bu 2
A bullet \(em with a dash.
"#;

    #[test]
    fn a_man_page_reads_as_markdown_line_for_line() {
        let md = as_markdown(PAGE);
        assert_eq!(md.lines().count(), PAGE.lines().count(), "{md}");
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines[0], "");
        assert_eq!(lines[1], "# FZF(1)");
        assert_eq!(lines[2], "## Name");
        assert_eq!(lines[3], "fzf - a command-line fuzzy finder");
        assert_eq!(lines[4], "## Options");
        assert_eq!(lines[5], "### Layout");
        assert_eq!(lines[6], "");
        // A tag opens the first line of its description; its own line is left blank.
        assert_eq!(lines[7], "");
        assert_eq!(
            lines[8],
            "`--height=HEIGHT[%]`: Display fzf window below the cursor with the given height instead of using"
        );
        assert_eq!(
            lines[12],
            "`--tmux`: Start fzf in a tmux popup (requires tmux 3.3 or later)."
        );
        assert_eq!(lines[13], "## Environment variables");
        assert_eq!(
            lines[16],
            "`FZF_DEFAULT_COMMAND`: Default command to use when input is tty. On *nix systems, fzf runs the command"
        );
        assert_eq!(
            lines[17], "with $SHELL -c if SHELL is set.",
            "fonts are dropped, `\\-` is a hyphen"
        );
        assert_eq!(lines[18], "## Examples");
        assert_eq!(lines[19], "```");
        assert_eq!(lines[20], "    find * -type f | fzf > selected");
        assert_eq!(lines[21], "```");
        assert_eq!(lines[22], "");
        assert_eq!(lines[23], "- A bullet \u{2014} with a dash.");
    }

    #[test]
    fn a_tagged_paragraph_is_one_sentence_with_its_tag() {
        let passages = crate::research::passages::split("man/man1/fzf.1", PAGE);
        let height = passages
            .iter()
            .find(|p| p.text.contains("--height"))
            .unwrap_or_else(|| panic!("{passages:?}"));
        assert!(
            height.heading.ends_with("Options \u{203a} Layout"),
            "{}",
            height.heading
        );
        assert!(
            height
                .text
                .contains("`--height=HEIGHT[%]`: Display fzf window below"),
            "{}",
            height.text
        );
        assert!(!passages.iter().any(|p| p.text.contains("\\f")));
    }

    #[test]
    fn only_a_page_with_man_requests_and_a_sections_extension_is_roff() {
        assert!(is_roff("man/man1/fzf.1", PAGE));
        assert!(is_roff("doc/fd.1", ".TH FD 1\n.SH NAME\nfd\n"));
        assert!(is_roff("perl/Foo.3pm", ".SH NAME\nFoo\n"));
        assert!(is_roff("tool.man", ".TH TOOL 8\n"));
        assert!(!is_roff("logs/app.log.1", "2024-01-01 started\nstopped\n"));
        assert!(!is_roff("README.md", PAGE));
        assert!(!is_roff("v1.10", ".TH X 1\n"));
    }

    #[test]
    fn hostile_pages_lose_no_line_and_do_not_panic() {
        for page in [
            ".nf\nnever closed\n",
            ".TP\n",
            ".SH\n",
            ".BI \"unclosed\n",
            "text ending in an escape \\",
            "\\f",
            "\\(e",
            "\\[never closed",
            "\\s+",
            ".IP \"\" 4\nitem\n",
            "'br\n.\n..\n",
            "\u{1F600} \\(em \u{301}\n",
        ] {
            let md = as_markdown(page);
            // Every line is there (an empty one included: "\\f" alone prints nothing).
            assert!(
                md.split('\n').count() >= page.lines().count(),
                "{page:?} → {md:?}"
            );
        }
        // An ignored block (fzf's licence) and a macro's definition print nothing; a tag
        // that is a sentence leads in as it is.
        assert_eq!(
            as_markdown(
                ".ig\nThe MIT License\n..\n.de XX\n.B x\n..\nfzf\n.TP\nMost options have a --no- form.\ntext\n.TP\n+i, --no-ignore-case\nCase-sensitive\n"
            ),
            "\n\n\n\n\n\nfzf\n\n\nMost options have a --no- form. text\n\n\n`+i, --no-ignore-case`: Case-sensitive\n"
        );
        // A block that holds a fence of four backticks closes with the fence it opened with.
        let md = as_markdown(".nf\n`````\n.fi\n");
        assert_eq!(md, "``````\n`````\n``````\n");
        // A block never closed is fenced to the end of the page.
        let md = as_markdown(".nf\nnever closed\n");
        assert_eq!(md.matches("```").count(), 2, "{md}");
    }
}
