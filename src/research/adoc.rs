//! AsciiDoc read as the Markdown the rest of research understands, line for line.
//!
//! Git, Tig, Asciidoctor and many Java and Ruby projects write their documentation in AsciiDoc,
//! and research read it as Markdown: a listing block between two lines of dashes was prose, so
//! a comment in it (`# Wrap branch names with () and tags with <>` in Tig's `tigrc(5)`) was a
//! heading that every passage after it was filed under, and its configuration lines were
//! quoted as sentences; the comment line over a block (`// TEST: tigrc`) was a section title,
//! read over the block's opening dashes; `== Section` headed nothing; a definition list's term
//! (`'core.editor'::`) was a sentence of its own, apart from what it means. [`as_markdown`]
//! rewrites a page into the Markdown those readers already handle: titles (`== Title` and the
//! two-line form) into `#` headings, listing, literal and verse blocks and source paragraphs
//! into fenced code (with the language of `[source,lang]`), tables into rows of cells, a
//! definition list's terms at the start of their description (``` `core.editor`: The editor
//! command. ```, as the reStructuredText reader writes an option), block titles (`.Example`)
//! into lead-ins, `include::` into an include marker ([`crate::research::includes`]), inline
//! macros and cross references into the text the built page shows, attribute references into
//! their values, and what a reader never sees as text (comments, attribute entries, block
//! attribute lines, conditionals, passthrough blocks, the author line) into blank lines.
//!
//! **Line for line**, as [`crate::research::rst`]: the result has the page's lines in the
//! same places (a fence takes the delimiter's line, or the blank line a paragraph already has;
//! only a block that runs to the end of the page gets its closing fence after its last line),
//! so a passage's line range and a citation's `file:12-18` point at the page as written.
//!
//! Pure: no I/O. Hostile input (an unclosed block, delimiters alone, a term with no
//! description) is read as text or as a block to the end of the page; nothing panics and no
//! line is lost.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex::{Captures, Regex};

use crate::edit::text::{closes_fence, fence_for, fence_line, is_blank as blank, joined_like};
use crate::research::citations::regex;

/// Whether the page at `path` is AsciiDoc, by its extension.
pub fn is_adoc(path: &str) -> bool {
    matches!(
        crate::research::passages::extension(path).as_deref(),
        Some("adoc" | "asciidoc")
    )
}

/// `text` (an AsciiDoc page) as Markdown with the same lines (module docs).
pub fn as_markdown(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    joined_like(&Reader::new(&lines).read(), text)
}

/// A delimited block's kind, by its delimiter line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Delimited {
    /// `----`: code.
    Listing,
    /// `....`: preformatted text.
    Literal,
    /// `++++`: raw output (HTML), never shown as text.
    Passthrough,
    /// `////`: a comment.
    Comment,
    /// `|===` (and `,===`, `:===`, `!===`): a table, cells split at this character.
    Table(char),
    /// `====`, `****`, `____`, `--`: an example, sidebar, quote or open block, whose content is
    /// prose (or code, with a `[source]`, `[listing]`, `[literal]` or `[verse]` style).
    Compound,
}

/// The block a delimiter line opens (it must start in the first column).
fn delimited(line: &str) -> Option<Delimited> {
    let t = line.trim_end();
    if t == "--" {
        return Some(Delimited::Compound);
    }
    if let Some(c @ ('|' | ',' | ':' | '!')) = t.chars().next()
        && t.get(1..)
            .is_some_and(|r| r.len() >= 3 && r.chars().all(|x| x == '='))
    {
        return Some(Delimited::Table(c));
    }
    let c = t.chars().next()?;
    if t.chars().count() < 4 || !t.chars().all(|x| x == c) {
        return None;
    }
    match c {
        '-' => Some(Delimited::Listing),
        '.' => Some(Delimited::Literal),
        '+' => Some(Delimited::Passthrough),
        '/' => Some(Delimited::Comment),
        '=' | '*' | '_' => Some(Delimited::Compound),
        _ => None,
    }
}

/// The style a block attribute line gives the block under it: its first positional attribute
/// (`source` of `[source,toml]`, `NOTE` of `[NOTE]`), lower-cased, and the language of a
/// source block.
#[derive(Debug, Clone, Default)]
struct Style {
    name: String,
    lang: String,
    /// The line it was given on (blank in the output: a fence may take it).
    line: usize,
}

impl Style {
    /// Whether the block is code (or preformatted) rather than prose.
    fn is_code(&self) -> bool {
        matches!(
            self.name.as_str(),
            "source" | "listing" | "literal" | "verse"
        )
    }
}

/// A block attribute line (`[source,toml]`, `[NOTE]`, `[[anchor]]`, `[#id.role]`, `[cols="1,2"]`),
/// read as the style it gives.
fn block_attributes(t: &str, line: usize) -> Option<Style> {
    let inner = t.strip_prefix('[')?.strip_suffix(']')?;
    if inner.contains('\n') {
        return None;
    }
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    let first = parts[0];
    // An anchor (`[[id]]`) or named attributes only (`[cols="1,2"]`): no style.
    if inner.starts_with('[') || first.contains('=') {
        return Some(Style {
            line,
            ..Style::default()
        });
    }
    let name: String = first
        .split(['#', '.', '%'])
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let lang = match parts.get(1) {
        Some(lang) if (name == "source" || name.is_empty()) && !lang.contains('=') => {
            (*lang).to_owned()
        }
        _ => String::new(),
    };
    let name = if name.is_empty() && !lang.is_empty() {
        "source".to_owned()
    } else {
        name
    };
    let word = |s: &str| {
        s.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '+' | '#'))
    };
    (word(&name) && word(&lang)).then_some(Style { name, lang, line })
}

/// `== Title` (or `#`): its level (`=` is 1) and title.
fn one_line_title(t: &str) -> Option<(usize, String)> {
    let c = t.chars().next().filter(|c| *c == '=' || *c == '#')?;
    let level = t.chars().take_while(|x| *x == c).count();
    let rest = &t[level..];
    if level > 6 || !rest.starts_with([' ', '\t']) {
        return None;
    }
    let title = rest.trim().trim_end_matches(c).trim();
    (!title.is_empty()).then(|| (level, title.to_owned()))
}

/// The level a two-line title's underline gives it: `=` 1, `-` 2, `~` 3, `^` 4, `+` 5.
fn underline_level(c: char) -> Option<usize> {
    "=-~^+".find(c).map(|i| i + 1)
}

/// A two-line title at `i`: a line of text over a line of one of `=-~^+`, as long as the text
/// give or take two characters (a longer or shorter line of dashes under text is a listing
/// block's delimiter, as Asciidoctor reads it).
fn two_line_title(lines: &[&str], i: usize) -> Option<(usize, String)> {
    let title = lines[i].trim_end();
    let under = lines.get(i + 1)?.trim_end();
    let c = under.chars().next()?;
    let level = underline_level(c)?;
    let (t_len, u_len) = (title.chars().count(), under.chars().count());
    let starts_as_text = title
        .chars()
        .next()
        .is_some_and(|x| x.is_alphanumeric() || "`'\"*_(<".contains(x));
    (u_len >= 2
        && under.chars().all(|x| x == c)
        && t_len.abs_diff(u_len) <= 2
        && starts_as_text
        && !title.starts_with("//")
        && list_item(title).is_none()
        && dlist_term(title).is_none()
        && delimited(title).is_none())
    .then(|| (level, title.trim().to_owned()))
}

fn heading(level: usize, title: &str, attributes: &HashMap<String, String>) -> String {
    format!(
        "{} {}",
        "#".repeat(level.clamp(1, 6)),
        inline(title, attributes)
    )
}

/// A list item (`* a`, `** a`, `- a`, `. a`, `.. a`) as Markdown writes it (`- a`, `  - a`,
/// `1. a`), or `None`.
fn list_item(line: &str) -> Option<String> {
    static ITEM: OnceLock<Regex> = OnceLock::new();
    let item = regex(&ITEM, r"^[ \t]*(\*{1,5}|-|\.{1,5})[ \t]+(\S.*)$");
    let c = item.captures(line)?;
    let marker = &c[1];
    let depth = marker.chars().count().max(1) - 1;
    let bullet = if marker.starts_with('.') { "1." } else { "-" };
    Some(format!("{}{bullet} {}", "  ".repeat(depth), &c[2]))
}

/// A definition list's term line (`term::`, `term:::`, `term;;`, with its description after
/// it on the same line or not): the term and the description, if any. Block macros
/// (`include::file[]`) are not terms: their `::` is followed by a target.
fn dlist_term(t: &str) -> Option<(String, Option<String>)> {
    static TERM: OnceLock<Regex> = OnceLock::new();
    let term = regex(&TERM, r"^[ \t]*(\S.*?)(?::{2,4}|;;)(?:[ \t]+(\S.*))?$");
    let c = term.captures(t)?;
    let name = c[1].trim();
    if name.ends_with(':') || name.starts_with("//") {
        return None;
    }
    Some((name.to_owned(), c.get(2).map(|m| m.as_str().to_owned())))
}

/// A term as the page shows it (its macros and references read first, [`inline`]), in code
/// when it names something: one word, or a list of them (`*-v, --verbose*`), written in
/// emphasis or as an option, or holding `.`, `_`, `/`, `=` or `$` (`'core.editor'` →
/// `` `core.editor` ``, `*--fop-opts*='FOP_OPTS'` → `` `--fop-opts=FOP_OPTS` ``); else a name in
/// emphasis before the rest (`'diff-options' (string)`, Tig's variables).
fn term_text(term: &str, attributes: &HashMap<String, String>) -> String {
    let t = inline(term.trim(), attributes);
    if t.contains('`') {
        return t;
    }
    let wrapped = ['\'', '_', '*', '+']
        .into_iter()
        .find(|&q| t.len() > 2 && t.starts_with(q) && t.ends_with(q))
        .map(|q| t.trim_matches(q));
    // Emphasis inside the names (`*--fop-opts*='FOP_OPTS'`, `*-o, --out-file*=_OUT_FILE_`); a
    // `*` of a glob stays (`'color.*'`).
    static PAIR: OnceLock<Regex> = OnceLock::new();
    let plain = regex(&PAIR, r"\*([^*]+)\*|'([^'\s]+)'|=_(\S+)_$").replace_all(
        wrapped.unwrap_or(&t),
        |c: &Captures| match c.get(3) {
            Some(v) => format!("={}", v.as_str()),
            None => c.get(1).or(c.get(2)).map_or("", |m| m.as_str()).to_owned(),
        },
    );
    let names: Vec<String> = plain.split(", ").map(str::to_owned).collect();
    let is_name = |n: &String| {
        !n.is_empty()
            && !n.chars().any(char::is_whitespace)
            && (wrapped.is_some()
                || n.starts_with('-')
                || n.contains(['.', '_', '/', '=', '$'])
                // A lower-case word alone is a name in a definition list: an attribute
                // (`toclevels`, `pygments-style`), a subcommand (`blame`), a value (`true`).
                || (n.starts_with(|c: char| c.is_ascii_lowercase())
                    && n.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')))
    };
    if names.iter().all(is_name) {
        return names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ");
    }
    static NAMED: OnceLock<Regex> = OnceLock::new();
    let named = regex(&NAMED, r"^(['_*+])([^\s'_*+`]+)(['_*+])(\s.*)$");
    match named.captures(&t) {
        Some(c) if c[1] == c[3] => format!("`{}`{}", &c[2], &c[4]),
        _ => t,
    }
}

/// An attribute entry (`:name: value`, `:name!:`): its name and value.
fn attribute_entry(t: &str) -> Option<(String, String)> {
    static ENTRY: OnceLock<Regex> = OnceLock::new();
    let entry = regex(&ENTRY, r"^:(!?[\w][\w-]*!?):(?:[ \t]+(.*))?$");
    let c = entry.captures(t)?;
    Some((
        c[1].to_owned(),
        c.get(2).map_or("", |m| m.as_str()).trim().to_owned(),
    ))
}

/// A block title (`.Example configuration`): its text.
fn block_title(t: &str) -> Option<&str> {
    let rest = t.strip_prefix('.')?;
    rest.chars()
        .next()
        .filter(|c| !c.is_whitespace() && *c != '.')
        .map(|_| rest.trim())
}

/// A line a reader never sees as text: a conditional, a table of contents, a block image or
/// media macro, a page break, a thematic break.
fn hidden_line(t: &str) -> bool {
    static MACRO: OnceLock<Regex> = OnceLock::new();
    let hidden = regex(
        &MACRO,
        r"^(?:ifdef|ifndef|ifeval|endif|toc|image|video|audio)::[^\[]*\[.*\]$",
    );
    hidden.is_match(t) || t == "<<<" || t == "'''" || t == "---" || t == "***"
}

/// `include::path[lines=5..10]` as the include marker mdBook writes (the page's folder first,
/// as Asciidoctor resolves it); a range of `lines` is kept, tags are not (the whole file).
fn include_marker(t: &str, attributes: &HashMap<String, String>) -> Option<String> {
    let rest = t.strip_prefix("include::")?;
    let (path, attrs) = rest.strip_suffix(']')?.split_once('[')?;
    let path = substitute(path.trim(), attributes);
    if path.is_empty() || path.contains('{') || path.contains(char::is_whitespace) {
        return Some(String::new());
    }
    let range = attrs
        .split(',')
        .find_map(|a| a.trim().strip_prefix("lines="))
        .and_then(|v| {
            let v = v.trim_matches('"');
            let (from, to) = v.split_once("..").unwrap_or((v, v));
            let to = if to.trim() == "-1" { "" } else { to.trim() };
            let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
            (digits(from.trim()) && digits(to) && !from.trim().is_empty())
                .then(|| format!(":{}:{}", from.trim(), to))
        })
        .unwrap_or_default();
    Some(format!("{{{{#include {path}{range}}}}}"))
}

/// The attribute entries of a page, by name (the last value of each; an unset one removed).
fn attributes_of(lines: &[&str]) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for line in lines {
        if let Some((name, value)) = attribute_entry(line.trim_end()) {
            if name.starts_with('!') || name.ends_with('!') {
                out.remove(name.trim_matches('!'));
            } else {
                out.insert(name, value);
            }
        }
    }
    out
}

/// Attribute references (`{name}`) replaced by their values: the page's own and the built-in
/// character replacements; an unknown one is left as written.
fn substitute(text: &str, attributes: &HashMap<String, String>) -> String {
    static REF: OnceLock<Regex> = OnceLock::new();
    let reference = regex(&REF, r"\{([\w][\w-]*)\}");
    reference
        .replace_all(text, |c: &Captures| {
            let name = &c[1];
            if let Some(value) = attributes.get(name) {
                return value.clone();
            }
            match name {
                "nbsp" | "sp" | "zwsp" => " ",
                "empty" | "blank" => "",
                "plus" => "+",
                "startsb" => "[",
                "endsb" => "]",
                "vbar" => "|",
                "amp" => "&",
                "lt" => "<",
                "gt" => ">",
                "caret" => "^",
                "tilde" => "~",
                "apos" => "'",
                "quot" => "\"",
                "backslash" => "\\",
                "backtick" => "`",
                "two-colons" => "::",
                "two-semicolons" => ";;",
                "cpp" => "C++",
                _ => return c[0].to_owned(),
            }
            .to_owned()
        })
        .into_owned()
}

/// Inline markup of a line of prose as the page shows it: attribute references, macros
/// (`link:url[text]`, `xref:`, `kbd:`, `menu:`, `footnote:`, a man page's `name:page[1]`),
/// URLs with text, cross references (`<<id,text>>`), anchors and index terms, literal
/// monospace (`` `+x+` ``) and a hard line break's ` +`.
fn inline(line: &str, attributes: &HashMap<String, String>) -> String {
    static LITERAL: OnceLock<Regex> = OnceLock::new();
    static MACRO: OnceLock<Regex> = OnceLock::new();
    static URL: OnceLock<Regex> = OnceLock::new();
    static XREF: OnceLock<Regex> = OnceLock::new();
    static ANCHOR: OnceLock<Regex> = OnceLock::new();
    static INDEX: OnceLock<Regex> = OnceLock::new();
    static ROLE: OnceLock<Regex> = OnceLock::new();
    let text = substitute(line, attributes);
    let text = regex(&LITERAL, r"`\+([^`]*?)\+`").replace_all(&text, "`$1`");
    let text = regex(&MACRO, r"\b([a-z][\w-]*):([^\s\[\]]*)\[([^\]]*)\]").replace_all(
        &text,
        |c: &Captures| {
            let (name, target, body) = (&c[1], &c[2], c[3].trim());
            // The text before any `key=value` attribute (`link:url[text,window=_blank]`).
            let label = match body.split_once(',') {
                Some((first, rest)) if rest.contains('=') => first.trim(),
                _ => body,
            }
            .trim_matches('"');
            let label = label.strip_suffix('^').unwrap_or(label);
            match name {
                "link" | "xref" | "mailto" | "irc" => {
                    if label.is_empty() { target } else { label }.to_owned()
                }
                "image" => label.split(',').next().unwrap_or("").trim().to_owned(),
                "footnote" | "footnoteref" => format!(" ({label})"),
                "kbd" => format!("`{label}`"),
                "btn" | "pass" | "indexterm2" => label.to_owned(),
                "menu" => std::iter::once(target)
                    .chain(label.split('>').map(str::trim))
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join(" › "),
                "anchor" | "indexterm" | "icon" => String::new(),
                "http" | "https" | "ftp" | "file" => c[0].to_owned(),
                _ if !target.is_empty() && body.chars().all(|x| x.is_ascii_alphanumeric()) => {
                    // A man page reference: `linkgit:git-config[1]`, `gitlink:tig[1]`.
                    format!("{target}({body})")
                }
                _ => c[0].to_owned(),
            }
        },
    );
    // A URL with its text, or an attribute the page does not define standing for one
    // (`{url-repo}[the repository^]`, the `^` asking for a new window).
    let text = regex(
        &URL,
        r"(\b(?:https?|ftp|irc)://[^\s\[\]]+|\{[\w][\w-]*\})\[([^\]]*)\]",
    )
    .replace_all(&text, |c: &Captures| {
        let label = c[2]
            .split(',')
            .next()
            .unwrap_or("")
            .trim()
            .trim_matches('"');
        let label = label.strip_suffix('^').unwrap_or(label);
        if label.is_empty() { &c[1] } else { label }.to_owned()
    });
    let text =
        regex(&XREF, r"<<([^<>,\n]+?)(?:,\s*([^<>\n]+?))?>>").replace_all(&text, |c: &Captures| {
            match c.get(2) {
                Some(label) => label.as_str().trim().to_owned(),
                None => c[1]
                    .trim()
                    .trim_start_matches('_')
                    .rsplit('#')
                    .next()
                    .unwrap_or("")
                    .replace(['_', '-'], " "),
            }
        });
    let text = regex(&ANCHOR, r"\[\[[^\[\]\n]*\]\]").replace_all(&text, "");
    // A role or id on a span (`[.path]_fonts_`, `[.term]*front matter*`, `[.line-through]#x#`):
    // the span as marked, `#` marks dropped.
    let text = regex(&ROLE, r"\[[.#][\w.#-]*\](?:#([^#\n]+)#|([_*`]))")
        .replace_all(&text, |c: &Captures| {
            c.get(1).or(c.get(2)).map_or("", |m| m.as_str()).to_owned()
        });
    let text = regex(
        &INDEX,
        r"\(\(\((?:[^()]|\([^()]*\))*\)\)\)|\(\(([^()]+)\)\)",
    )
    .replace_all(&text, |c: &Captures| {
        c.get(1).map_or(String::new(), |m| m.as_str().to_owned())
    });
    let text = text.trim_end();
    text.strip_suffix(" +").unwrap_or(text).to_owned()
}

/// The reader's state over one page.
struct Reader<'a> {
    lines: &'a [&'a str],
    out: Vec<String>,
    attributes: HashMap<String, String>,
    /// The compound blocks open (their delimiter lines), innermost last.
    open: Vec<String>,
    /// The style the last block attribute line gave, for the block under it.
    style: Option<Style>,
    /// A definition list's terms waiting for their description, and the line of the last.
    terms: Vec<String>,
    terms_line: usize,
    /// Whether the line before was blank or held nothing to show (a block starts here).
    at_start: bool,
    /// Whether the paragraph being read is a term's description (its lines lose their indent),
    /// and whether that description was written indented.
    describing: bool,
    describing_indented: bool,
}

impl<'a> Reader<'a> {
    fn new(lines: &'a [&'a str]) -> Self {
        Reader {
            lines,
            out: vec![String::new(); lines.len()],
            attributes: attributes_of(lines),
            open: Vec::new(),
            style: None,
            terms: Vec::new(),
            terms_line: 0,
            at_start: true,
            describing: false,
            describing_indented: false,
        }
    }

    fn read(mut self) -> Vec<String> {
        let n = self.lines.len();
        let mut i = self.header();
        while i < n {
            i = self.step(i);
        }
        self.flush_terms();
        self.out
    }

    /// The document title (`= Title`) and the author and revision lines right under it, which
    /// the page shows as its header: the title a heading, the others blank. Returns where the
    /// body starts.
    fn header(&mut self) -> usize {
        let lines = self.lines;
        let Some(first) = lines.iter().position(|l| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with("//") && attribute_entry(t).is_none()
        }) else {
            return 0;
        };
        match one_line_title(lines[first].trim_end()) {
            Some((1, title)) if lines[first].starts_with('=') => {
                self.out[first] = heading(1, &title, &self.attributes);
                let mut j = first + 1;
                while j < lines.len() && !blank(lines[j]) {
                    j += 1;
                }
                self.at_start = true;
                j
            }
            _ => 0,
        }
    }

    /// A definition list's terms waiting with no description after them (a block or a list
    /// follows): written on the last term's line as a lead-in.
    fn flush_terms(&mut self) {
        if !self.terms.is_empty() {
            let terms = std::mem::take(&mut self.terms);
            self.out[self.terms_line] = format!("{}:", terms.join(", "));
        }
    }

    /// Reads the line at `i` (and the block it opens); returns the next line to read.
    fn step(&mut self, i: usize) -> usize {
        let lines = self.lines;
        let n = lines.len();
        let line = lines[i];
        let t = line.trim_end();
        let tt = t.trim();
        if tt.is_empty() {
            self.at_start = true;
            // A description written indented (Tig's, Git's) goes on over blank lines while
            // its paragraphs stay indented.
            self.describing &= self.describing_indented;
            return i + 1;
        }
        // A comment line: nothing shown, and the block under it starts as if after a blank.
        if t.starts_with("//") && !t.starts_with("///") {
            return i + 1;
        }
        // A Markdown fence (Asciidoctor reads it as a source block): copied as written.
        if let Some((ch, len, _)) =
            fence_line(t).filter(|(ch, _, _)| *ch == '`' && !line.starts_with([' ', '\t']))
        {
            self.flush_terms();
            let close = (i + 1..n).find(|&k| closes_fence(lines[k], ch, len));
            let end = close.unwrap_or(n - 1);
            for (out, line) in self.out[i..=end].iter_mut().zip(&lines[i..=end]) {
                *out = (*line).to_owned();
            }
            if close.is_none() {
                self.out[end].push_str(&format!("\n{}", ch.to_string().repeat(len)));
            }
            self.after_block();
            return end + 1;
        }
        if self.open.last().is_some_and(|d| d == t) {
            self.flush_terms();
            self.open.pop();
            self.after_block();
            return i + 1;
        }
        if self.at_start
            && self
                .open
                .last()
                .is_none_or(|d| lines.get(i + 1).map(|l| l.trim_end()) != Some(d))
            && let Some((level, title)) = two_line_title(lines, i)
        {
            self.flush_terms();
            self.out[i] = heading(level, &title, &self.attributes);
            self.after_block();
            return i + 2;
        }
        if let Some(kind) = delimited(t) {
            self.flush_terms();
            let style = self.style.take();
            let close = (i + 1..n).find(|&k| lines[k].trim_end() == t);
            let next = close.map_or(n, |k| k + 1);
            match kind {
                Delimited::Listing | Delimited::Literal => {
                    let lang = style.map(|s| s.lang).unwrap_or_default();
                    self.fence_lines(i, close, &lang);
                }
                Delimited::Compound if style.as_ref().is_some_and(Style::is_code) => {
                    let lang = style.map(|s| s.lang).unwrap_or_default();
                    self.fence_lines(i, close, &lang);
                }
                Delimited::Passthrough | Delimited::Comment => {}
                Delimited::Table(sep) => self.table(i, close, sep),
                Delimited::Compound => {
                    self.open.push(t.to_owned());
                    self.after_block();
                    return i + 1;
                }
            }
            self.after_block();
            return next;
        }
        if attribute_entry(t).is_some() || hidden_line(tt) {
            return i + 1;
        }
        if !line.starts_with([' ', '\t'])
            && let Some(style) = block_attributes(tt, i)
        {
            self.flush_terms();
            self.style = Some(style);
            self.at_start = true;
            return i + 1;
        }
        if let Some(marker) = include_marker(tt, &self.attributes) {
            self.flush_terms();
            self.out[i] = marker;
            self.after_block();
            return i + 1;
        }
        if self.at_start
            && let Some(title) = block_title(t)
        {
            self.flush_terms();
            let title = inline(title, &self.attributes);
            self.out[i] = if title.ends_with([':', '.', '?', '!']) {
                title
            } else {
                format!("{title}:")
            };
            return i + 1;
        }
        if let Some((level, title)) = one_line_title(t).filter(|_| !line.starts_with([' ', '\t'])) {
            self.flush_terms();
            self.out[i] = heading(level, &title, &self.attributes);
            self.after_block();
            return i + 1;
        }
        // A paragraph styled as code (`[source,sh]` over lines with no delimiters).
        if self.at_start && self.style.as_ref().is_some_and(Style::is_code) {
            let style = self.style.take().unwrap_or_default();
            let end = self.paragraph_end(i);
            if style.line + 1 == i {
                self.flush_terms();
                self.fence_paragraph(style.line, i, end, &style.lang);
                self.after_block();
                return end + 1;
            }
        }
        self.style = None;
        // A list continuation: the block under it belongs to the item or term above, which
        // leads to it.
        if tt == "+" {
            self.flush_terms();
            self.at_start = true;
            return i + 1;
        }
        if let Some((term, description)) = dlist_term(t) {
            let term = term_text(&term, &self.attributes);
            self.terms.push(term);
            self.terms_line = i;
            if let Some(description) = description {
                let terms = std::mem::take(&mut self.terms);
                self.out[i] = format!(
                    "{}: {}",
                    terms.join(", "),
                    inline(&description, &self.attributes)
                );
                self.describing = true;
                self.describing_indented = false;
                self.at_start = false;
            } else {
                self.at_start = true;
            }
            return i + 1;
        }
        if !self.terms.is_empty() && list_item(line).is_none() {
            let terms = std::mem::take(&mut self.terms);
            self.out[i] = format!("{}: {}", terms.join(", "), inline(tt, &self.attributes));
            self.describing = true;
            self.describing_indented = line.starts_with([' ', '\t']);
            self.at_start = false;
            return i + 1;
        }
        self.flush_terms();
        // An indented paragraph is literal text, unless it goes on describing a term.
        if self.at_start
            && !self.describing
            && line.starts_with([' ', '\t'])
            && list_item(line).is_none()
        {
            let end = self.paragraph_end(i);
            if i > 0 && self.out[i - 1].is_empty() {
                self.fence_paragraph(i - 1, i, end, "");
                self.after_block();
                return end + 1;
            }
        }
        if self.describing && self.at_start && !line.starts_with([' ', '\t']) {
            self.describing = false;
        }
        self.out[i] = match list_item(line) {
            Some(item) => {
                self.describing = false;
                inline(&item, &self.attributes)
            }
            None if self.describing => inline(tt, &self.attributes),
            None => inline(t, &self.attributes),
        };
        self.at_start = false;
        i + 1
    }

    fn after_block(&mut self) {
        self.at_start = true;
        self.describing = false;
        self.describing_indented = false;
        self.style = None;
    }

    /// The last line of the paragraph that starts at `i`.
    fn paragraph_end(&self, i: usize) -> usize {
        let mut end = i;
        while end + 1 < self.lines.len() && !blank(self.lines[end + 1]) {
            end += 1;
        }
        end
    }

    /// A delimited block at `open` closed at `close` (or running to the end of the page),
    /// fenced on its delimiter lines, its lines as written.
    fn fence_lines(&mut self, open: usize, close: Option<usize>, lang: &str) {
        let n = self.lines.len();
        let last = close.map_or(n - 1, |c| c - 1);
        let body = if last > open {
            &self.lines[open + 1..=last]
        } else {
            &[][..]
        };
        let fence = fence_for(body.iter().copied());
        self.out[open] = format!("{fence}{lang}");
        for k in open + 1..=last {
            self.out[k] = self.lines[k].to_owned();
        }
        match close {
            Some(c) => self.out[c] = fence,
            None => {
                let at = last.max(open);
                self.out[at].push('\n');
                self.out[at].push_str(&fence);
            }
        }
    }

    /// The paragraph `first..=last` fenced, the opening fence on line `opener` (blank in the
    /// output), the closing one on the blank line after it, or after it at the end of the page;
    /// its lines less their common indentation.
    fn fence_paragraph(&mut self, opener: usize, first: usize, last: usize, lang: &str) {
        let body = &self.lines[first..=last];
        let fence = fence_for(body.iter().copied());
        let common = body
            .iter()
            .filter(|l| !blank(l))
            .map(|l| l.len() - l.trim_start().len())
            .min()
            .unwrap_or(0);
        self.out[opener] = format!("{fence}{lang}");
        for (k, line) in (first..=last).zip(body) {
            let cut = line
                .char_indices()
                .nth(common)
                .map_or(line.len(), |(at, _)| at);
            let cut = if line[..cut].trim().is_empty() {
                cut
            } else {
                0
            };
            self.out[k] = line[cut..].trim_end().to_owned();
        }
        if last + 1 < self.lines.len() {
            self.out[last + 1] = fence;
        } else {
            self.out[last].push('\n');
            self.out[last].push_str(&fence);
        }
    }

    /// A table between `open` and `close` (or the end of the page): each line of cells as a
    /// row of Markdown cells, the first row a header when a blank line is under it (as
    /// Asciidoctor reads it); a cell's text that goes on from the line before as text; the
    /// delimiters blank.
    fn table(&mut self, open: usize, close: Option<usize>, sep: char) {
        let end = close.unwrap_or(self.lines.len());
        for k in open + 1..end {
            let t = self.lines[k].trim();
            if t.is_empty() {
                continue;
            }
            self.out[k] = match cells(t, sep) {
                Some(cells) => {
                    let cells: Vec<String> = cells
                        .iter()
                        .map(|c| inline(c, &self.attributes).replace('|', "\\|"))
                        .collect();
                    format!("| {} |", cells.join(" | "))
                }
                None => inline(t, &self.attributes),
            };
        }
        let first = (open + 1..end).find(|&k| !blank(self.lines[k]));
        if let Some(f) = first
            && f + 2 < end
            && blank(self.lines[f + 1])
            && let Some(cols) = cells(self.lines[f].trim(), sep).map(|c| c.len())
        {
            self.out[f + 1] = format!("|{}", "---|".repeat(cols));
        }
    }
}

/// The cells of a table's line (`|a |b`, `2+|a`, or CSV's `a,b`), or `None` for a line that
/// goes on with the cell before. A cell's spec (`2+`, `.3+^`, `a`) before its separator is
/// dropped from the cell it follows.
fn cells(t: &str, sep: char) -> Option<Vec<String>> {
    static LEADING: OnceLock<Regex> = OnceLock::new();
    static TRAILING: OnceLock<Regex> = OnceLock::new();
    if sep == ',' {
        return Some(
            t.split(',')
                .map(|c| c.trim().trim_matches('"').to_owned())
                .collect(),
        );
    }
    let leading = regex(
        &LEADING,
        r"^\d*[+*.<>^][\d.<>^+*]*[adehlmsv]?$|^[adehlmsv]$",
    );
    let (head, rest) = t.split_once(sep)?;
    if !head.is_empty() && !leading.is_match(head) {
        return None;
    }
    let trailing = regex(&TRAILING, r"[ \t]+\d*[+*.<>^][\d.<>^+*]*[adehlmsv]?$");
    Some(
        rest.split(sep)
            .map(|c| trailing.replace(c.trim(), "").trim().to_owned())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(text: &str) -> Vec<String> {
        let out = as_markdown(text);
        let lines: Vec<String> = out.lines().map(str::to_owned).collect();
        assert_eq!(lines.len(), text.lines().count(), "{out}");
        lines
    }

    #[test]
    fn titles_of_both_forms_become_headings() {
        let page = "= Tig Manual\nJonas Fonseca\nv2.5, 2024\n:toc:\n\nIntro.\n\n== Options\n\nText.\n\nEnvironment variables\n---------------------\n\nMore.\n\n=== Deep ===\n\nHooks\n~~~~~\n";
        let out = lines_of(page);
        assert_eq!(out[0], "# Tig Manual");
        assert_eq!(out[1], "");
        assert_eq!(out[2], "");
        assert_eq!(out[3], "");
        assert_eq!(out[5], "Intro.");
        assert_eq!(out[7], "## Options");
        assert_eq!(out[11], "## Environment variables");
        assert_eq!(out[12], "");
        assert_eq!(out[16], "### Deep");
        assert_eq!(out[18], "### Hooks");
    }

    #[test]
    fn a_listing_block_is_fenced_and_its_comments_are_no_headings() {
        // Tig's tigrc(5): a comment line over the block, a `#` comment inside it.
        let page = "Examples:\n\n// TEST: tigrc\n--------------------------------------------------------------------------\nset commit-order = topo\n\n# Wrap branch names with () and tags with <>\nset reference-format = (branch) <tag>\n--------------------------------------------------------------------------\n\nOr in the Git configuration files:\n";
        let out = lines_of(page);
        assert_eq!(out[2], "");
        assert_eq!(out[3], "```");
        assert_eq!(out[6], "# Wrap branch names with () and tags with <>");
        assert_eq!(out[8], "```");
        let passages = crate::research::passages::split("doc/tigrc.5.adoc", page);
        assert!(
            passages.iter().all(|p| p.heading.is_empty()),
            "{passages:#?}"
        );
    }

    #[test]
    fn a_source_block_gets_its_language_and_a_block_title_leads_to_it() {
        let page = ".Example configuration\n[source,toml]\n----\n[tool.x]\nkey = 1\n----\n\n[source,sh]\ntig --all\n\nText.\n";
        let out = lines_of(page);
        assert_eq!(out[0], "Example configuration:");
        assert_eq!(out[1], "");
        assert_eq!(out[2], "```toml");
        assert_eq!(out[5], "```");
        assert_eq!(out[7], "```sh");
        assert_eq!(out[8], "tig --all");
        assert_eq!(out[9], "```");
        assert_eq!(out[10], "Text.");
    }

    #[test]
    fn a_term_heads_its_description_even_an_indented_one() {
        let page = "'core.editor'::\n\n\tThe editor command. Can be overridden by setting\n\tTIG_EDITOR.\n\n-n::\n--dry-run::\n\tDon't actually add the files.\n\nCPU:: The brain of the computer.\n";
        let out = lines_of(page);
        assert_eq!(out[0], "");
        assert_eq!(
            out[2],
            "`core.editor`: The editor command. Can be overridden by setting"
        );
        assert_eq!(out[3], "TIG_EDITOR.");
        assert_eq!(out[5], "");
        assert_eq!(out[7], "`-n`, `--dry-run`: Don't actually add the files.");
        assert_eq!(out[9], "CPU: The brain of the computer.");
        // Terms on inputs nobody here wrote (AsciiDoc.py's and Asciidoctor's manuals).
        let a = HashMap::new();
        assert_eq!(
            term_text("*--fop-opts*='FOP_OPTS'", &a),
            "`--fop-opts=FOP_OPTS`"
        );
        assert_eq!(term_text("*-v, --verbose*", &a), "`-v`, `--verbose`");
        assert_eq!(term_text("'color.*'", &a), "`color.*`");
        assert_eq!(
            term_text("*-o, --out-file*=_OUT_FILE_", &a),
            "`-o`, `--out-file=OUT_FILE`"
        );
        assert_eq!(term_text("xref:html-backend:index.adoc[HTML]", &a), "HTML");
        assert_eq!(
            term_text("'diff-options' (string)", &a),
            "`diff-options` (string)"
        );
        assert_eq!(
            term_text("`-S`, `--safe-mode=SAFE_MODE`", &a),
            "`-S`, `--safe-mode=SAFE_MODE`"
        );
        assert_eq!(term_text("The main view", &a), "The main view");
        assert_eq!(term_text("pygments-style", &a), "`pygments-style`");
        assert_eq!(term_text("Purpose", &a), "Purpose");
        // A continuation: the term leads to the block attached under it.
        let out = lines_of("Install using `pacman`::\n+\n $ sudo pacman -S ruby-rouge\n\nNext.\n");
        assert_eq!(out[0], "Install using `pacman`:");
        assert_eq!(out[1], "```");
        assert_eq!(out[2], "$ sudo pacman -S ruby-rouge");
        assert_eq!(out[3], "```");
    }

    #[test]
    fn comments_attributes_and_conditionals_leave_blank_lines_and_attributes_are_replaced() {
        let page = ":version: 2.5\n// a comment\n////\nhidden\n////\nifdef::env-github[]\nRun tig {version} or later.{nbsp}See <<install,Installation>> and link:https://x.org/a[the site].\nendif::[]\n++++\n<div></div>\n++++\n";
        let out = lines_of(page);
        for k in [0, 1, 2, 3, 4, 5, 7, 8, 9, 10] {
            assert_eq!(out[k], "", "line {k}: {out:?}");
        }
        assert_eq!(
            out[6],
            "Run tig 2.5 or later. See Installation and the site."
        );
    }

    #[test]
    fn inline_macros_read_as_the_page_shows_them() {
        let a = HashMap::new();
        assert_eq!(
            inline("See linkgit:git-config[1].", &a),
            "See git-config(1)."
        );
        assert_eq!(inline("Press kbd:[Ctrl+T] now +", &a), "Press `Ctrl+T` now");
        assert_eq!(
            inline("Open menu:View[Zoom > Reset].", &a),
            "Open View › Zoom › Reset."
        );
        assert_eq!(inline("Use `+{name}+` here", &a), "Use `{name}` here");
        assert_eq!(
            inline("[[id]]Anchored ((term)) text(((a,b)))", &a),
            "Anchored term text"
        );
        assert_eq!(inline("See <<_the_options>>.", &a), "See the options.");
        assert_eq!(
            inline("Go to https://tig.dev[Tig's site].", &a),
            "Go to Tig's site."
        );
        assert_eq!(
            inline("Plain https://tig.dev here.", &a),
            "Plain https://tig.dev here."
        );
        assert_eq!(
            inline(
                "Put it in [.path]_fonts_, see [.line-through]#old-name#.",
                &a
            ),
            "Put it in _fonts_, see old-name."
        );
        assert_eq!(
            inline("In the {url-repo}[Rouge repository^].", &a),
            "In the Rouge repository."
        );
    }

    #[test]
    fn lists_and_tables_read_as_markdown_ones() {
        let page = "* one\n** nested\n. first\n.. sub\n+\n----\ncode\n----\n\n[cols=\"1,2\"]\n|===\n|Key |Action\n\n|q |Quit\n|h |Help\n|===\n";
        let out = lines_of(page);
        assert_eq!(out[0], "- one");
        assert_eq!(out[1], "  - nested");
        assert_eq!(out[2], "1. first");
        assert_eq!(out[3], "  1. sub");
        assert_eq!(out[4], "");
        assert_eq!(out[5], "```");
        assert_eq!(out[9], "");
        assert_eq!(out[10], "");
        assert_eq!(out[11], "| Key | Action |");
        assert_eq!(out[12], "|---|---|");
        assert_eq!(out[13], "| q | Quit |");
        assert_eq!(out[15], "");
    }

    #[test]
    fn a_compound_block_s_content_is_prose_unless_styled_as_code() {
        let page = "[NOTE]\n====\nTig reads `~/.tigrc`.\n====\n\n[verse]\n____\n*set* 'variable' *=* 'value'\n____\n\n    indented literal\n\n";
        let out = lines_of(page);
        assert_eq!(out[0], "");
        assert_eq!(out[1], "");
        assert_eq!(out[2], "Tig reads `~/.tigrc`.");
        assert_eq!(out[3], "");
        assert_eq!(out[6], "```");
        assert_eq!(out[8], "```");
        assert_eq!(out[9], "```");
        assert_eq!(out[10], "indented literal");
        assert_eq!(out[11], "```");
    }

    #[test]
    fn an_include_is_an_include_marker_with_its_lines() {
        let page = ":src: ../examples\ninclude::{src}/tigrc[lines=3..9]\ninclude::partial.adoc[tag=intro]\ninclude::{unknown}/x[]\n";
        let out = lines_of(page);
        assert_eq!(out[1], "{{#include ../examples/tigrc:3:9}}");
        assert_eq!(out[2], "{{#include partial.adoc}}");
        assert_eq!(out[3], "");
    }

    #[test]
    fn hostile_pages_keep_their_lines_and_never_panic() {
        let pages = [
            "",
            "----",
            "----\n",
            "....\nunclosed\n",
            "====\n====\n====\n",
            "[source,rust]",
            "[source,rust]\n",
            "::",
            "term::",
            "|===\n|a\n",
            "|===",
            "= \n==\n=",
            "Title\n--",
            "'x'::\n\n\t\n",
            "é::\n\n  ü\n",
            "x\u{2028}y\n~~~\n",
            "```\nunclosed",
            "[[\n]]\n<<a,\n>>",
            "include::[]\ninclude::x[lines=..]",
            "\t\tindented first line",
            "+\n+\n----\n+\n",
        ];
        for page in pages {
            let out = as_markdown(page);
            assert!(
                crate::research::passages::keeps_lines(page, &out),
                "{page:?} → {out:?}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn any_page_keeps_its_lines(lines in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::string::string_regex("[-=.*_+|/ \t:a-z'\\[\\]{}<>,`#]{0,12}").expect("pattern"),
                proptest::sample::select(vec![
                    "----".to_owned(), "....".to_owned(), "====".to_owned(), "--".to_owned(),
                    "|===".to_owned(), "[source,sh]".to_owned(), "term::".to_owned(),
                    "\tdescribed".to_owned(), "".to_owned(), "+".to_owned(), ".Title".to_owned(),
                    "////".to_owned(), "```".to_owned(), "== Title".to_owned(), "Text".to_owned(),
                ]),
            ],
            0..30,
        )) {
            let page = lines.join("\n");
            let out = as_markdown(&page);
            proptest::prop_assert!(
                crate::research::passages::keeps_lines(&page, &out),
                "{page:?} → {out:?}"
            );
        }
    }
}
