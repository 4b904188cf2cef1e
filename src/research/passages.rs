//! Passages: the unit research retrieves, ranks and shows a model. A passage is a heading and
//! the paragraphs or code blocks under it, a few hundred tokens — enough for a small model to
//! synthesise from, small enough that several parts of a question each get one in its context.
//!
//! Also the question side of retrieval: the words worth searching for (stop words dropped) and
//! the parts of a multi-part question ("how does the cache evict entries, and how are requests
//! retried"), so that each part finds a passage of its own. See `docs/research.md`.
//!
//! Pure functions: no I/O.

/// A passage is cut after this many characters (about 300 tokens) at a block boundary.
pub const TARGET_CHARS: usize = 1200;
/// A single block longer than this is cut into line windows of [`TARGET_CHARS`].
pub const MAX_CHARS: usize = 2400;
/// A passage shorter than this takes the next block even past [`TARGET_CHARS`].
const MIN_CHARS: usize = 300;

pub use crate::store::Passage;

use std::sync::OnceLock;

use regex::Regex;

use crate::edit::text::{FenceLine, Fences};
use crate::research::{adoc, org, roff, rst};

/// Whether `out`, a page rewritten line for line, keeps the lines of `page`: as many, or one more
/// when a code block left open at the page's end got its closing fence after its last line.
#[cfg(test)]
pub(crate) fn keeps_lines(page: &str, out: &str) -> bool {
    let (expected, got) = (page.split('\n').count(), out.split('\n').count());
    got == expected || (got == expected + 1 && out.trim_end().ends_with("```"))
}

/// The extension of the file at `path`, lower-cased (`None` without one).
pub(crate) fn extension(path: &str) -> Option<String> {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())
}

/// Whether `path` is prose (headings are Markdown `#` lines) rather than code.
pub fn is_prose(path: &str) -> bool {
    if roff::is_manual(path) {
        return true;
    }
    match extension(path).as_deref() {
        None => true,
        Some(e) => matches!(
            e,
            "md" | "markdown"
                | "mdx"
                | "txt"
                | "text"
                | "rst"
                | "adoc"
                | "asciidoc"
                | "org"
                | "textile"
        ),
    }
}

/// A run of non-blank lines (a paragraph, a list, a fenced code block with its blank lines, a
/// code item) with the heading in force.
struct Block {
    heading: String,
    start: usize,
    end: usize,
    chars: usize,
}

/// Cuts `text` (the file at `path`) into passages.
pub fn split(path: &str, text: &str) -> Vec<Passage> {
    // Man pages, reStructuredText, AsciiDoc and Org are read as the Markdown they render as,
    // line for line (`research::roff`, `research::rst`, `research::adoc`, `research::org`).
    let markdown;
    let text = if roff::is_roff(path, text) {
        markdown = roff::as_markdown(text);
        markdown.as_str()
    } else if rst::is_rst(path, text) {
        markdown = rst::as_markdown(text);
        markdown.as_str()
    } else if adoc::is_adoc(path) {
        markdown = adoc::as_markdown(text);
        markdown.as_str()
    } else if org::is_org(path) {
        markdown = org::as_markdown(text);
        markdown.as_str()
    } else if let Some(rendered) = as_rendered(path, text) {
        markdown = rendered;
        markdown.as_str()
    } else {
        text
    };
    let lines: Vec<&str> = text.lines().collect();
    let prose = is_prose(path);
    let blocks = blocks(&lines, prose);
    let mut out: Vec<Passage> = Vec::new();
    let mut current: Option<(String, usize, usize, usize)> = None; // heading, start, end, chars
    let flush = |current: &mut Option<(String, usize, usize, usize)>, out: &mut Vec<Passage>| {
        if let Some((heading, start, end, _)) = current.take() {
            push_passage(out, &lines, heading, start, end);
        }
    };
    // The start line and size of the last block taken into `current`.
    let mut last: (usize, usize) = (0, 0);
    for block in blocks {
        if block.chars > MAX_CHARS {
            flush(&mut current, &mut out);
            // A long block: windows of lines.
            let mut start = block.start;
            let mut chars = 0;
            for i in block.start..=block.end {
                chars += lines[i].len() + 1;
                if chars >= TARGET_CHARS || i == block.end {
                    push_passage(&mut out, &lines, block.heading.clone(), start, i);
                    start = i + 1;
                    chars = 0;
                }
            }
            continue;
        }
        match &mut current {
            Some((heading, _, end, chars))
                if *heading == block.heading
                    && (*chars + block.chars <= TARGET_CHARS || *chars < MIN_CHARS) =>
            {
                *end = block.end;
                *chars += block.chars;
            }
            // A lead-in goes with what it leads to: the passage ends before it, and it opens
            // the next one with its code (chezmoi's "…, put the following in
            // `~/.local/share/chezmoi/.chezmoiexternal.$FORMAT`:" ended one passage and its
            // TOML block, which sets `refreshPeriod`, opened the next: 14 of the user guide's
            // 257 passages ended on a colon so, 2026-12-04).
            Some((heading, start, end, chars))
                if prose
                    && *heading == block.heading
                    && last.0 > *start
                    && last.1 + block.chars <= MAX_CHARS
                    && lead_in_block(&lines[last.0..=*end]) =>
            {
                let (lead_start, lead_chars) = last;
                let heading = heading.clone();
                let kept_end = (*start..lead_start)
                    .rev()
                    .find(|&k| !lines[k].trim().is_empty())
                    .unwrap_or(*start);
                *end = kept_end;
                *chars -= lead_chars;
                flush(&mut current, &mut out);
                current = Some((heading, lead_start, block.end, lead_chars + block.chars));
                last = (block.start, block.chars);
                continue;
            }
            _ => {
                flush(&mut current, &mut out);
                current = Some((block.heading, block.start, block.end, block.chars));
            }
        }
        last = (block.start, block.chars);
    }
    flush(&mut current, &mut out);
    out
}

/// A Markdown page as a site generator renders it, line for line, when that differs from its
/// text: the front matter (YAML between `---` lines, TOML between `+++` lines) blank but for
/// its `title`, which heads the page (`# Authentication Settings`: Docusaurus, Hugo and Jekyll
/// pages state their title there and nowhere else — 132 of pnpm's 144 pages have no `#`
/// heading, so every section was headed without its page); outside code, Docusaurus's and
/// MyST's admonition fences (`:::note`, `:::{warning}`, `:::`) and MDX's `import`/`export` lines and component tags
/// alone on a line (`<CatalogMode />`) blank; Python-Markdown's admonitions and collapsible
/// blocks (`!!! note`, `??? tip "Title"`, MkDocs' sites) as their title, with the box's indented
/// text dedented, and content tabs (`=== "pyproject.toml"`) as the first tab open, their labels
/// blank and their text dedented; Hugo's shortcodes alone on a line (`{{% note %}}`,
/// `{{< tabs >}}`) blank. Read as text, `!!! note` ended a sentence at `!!!` and left the note's
/// first sentence opening "note When not …" (Hatch's docs), no sentence to quote, and
/// `{{% note %}}` opened Poetry's notes the same way; a tab's label took the code its lead-in
/// introduces. `None` when nothing changes.
fn as_rendered(path: &str, text: &str) -> Option<String> {
    let ext = extension(path);
    let mdx = ext.as_deref() == Some("mdx");
    if !matches!(ext.as_deref(), Some("md" | "markdown" | "mdx")) {
        return None;
    }
    static TITLE: OnceLock<Regex> = OnceLock::new();
    static ADMONITION: OnceLock<Regex> = OnceLock::new();
    static TAG: OnceLock<Regex> = OnceLock::new();
    static IMPORT: OnceLock<Regex> = OnceLock::new();
    let title = crate::research::citations::regex(
        &TITLE,
        r#"^title\s*[:=]\s*(?:"([^"]*)"|'([^']*)'|(.*?))\s*$"#,
    );
    let admonition = crate::research::citations::regex(
        &ADMONITION,
        r"^\s*:{3,}\s*(?:\{?([A-Za-z][\w-]*)\}?\s*(?:\[(.*)\]|\s(.*))?)?\s*$",
    );
    let tag = crate::research::citations::regex(&TAG, r"^\s*</?[A-Z][\w.]*(?:\s[^<>]*)?/?>\s*$");
    let import =
        crate::research::citations::regex(&IMPORT, r#"^import\s.*\sfrom\s+['"][^'"]+['"];?\s*$"#);
    static BOXED: OnceLock<Regex> = OnceLock::new();
    static TABBED: OnceLock<Regex> = OnceLock::new();
    static SHORTCODES: OnceLock<Regex> = OnceLock::new();
    let boxed = crate::research::citations::regex(
        &BOXED,
        r#"^(\s*)(?:!!!|\?\?\?\+?)\s*([A-Za-z][\w-]*)(?:\s+[A-Za-z][\w-]*)*(?:\s+"([^"]*)")?\s*$"#,
    );
    let tabbed = crate::research::citations::regex(&TABBED, r#"^(\s*)===[!+]?\s+"[^"]*"\s*$"#);
    let shortcodes =
        crate::research::citations::regex(&SHORTCODES, r"^\s*(?:\{\{[<%].*?[%>]\}\}\s*)+$");
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    let mut changed = false;
    let mut start = 0;
    let delimiter = lines.first().map(|l| l.trim_end());
    if let Some(d @ ("---" | "+++")) = delimiter
        && let Some(close) = (1..lines.len().min(200))
            .find(|&k| lines[k].trim_end() == d || (d == "---" && lines[k].trim_end() == "..."))
        && lines[1..close].iter().any(|l| {
            l.split_once([':', '=']).is_some_and(|(k, _)| {
                let k = k.trim();
                !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
            })
        })
    {
        for (k, line) in lines.iter().enumerate().take(close + 1) {
            out[k] = match title.captures(line) {
                Some(c) => {
                    let t = c
                        .get(1)
                        .or(c.get(2))
                        .or(c.get(3))
                        .map_or("", |m| m.as_str());
                    if t.trim().is_empty() {
                        String::new()
                    } else {
                        format!("# {}", t.trim())
                    }
                }
                None => String::new(),
            };
        }
        changed = true;
        start = close + 1;
    }
    let mut fences = Fences::default();
    for k in start..lines.len() {
        if fences.line(&out[k]) != FenceLine::Outside {
            continue;
        }
        let line = out[k].clone();
        let line = line.as_str();
        // A box or a tab: its text is the lines under it indented four columns more.
        let opened = boxed
            .captures(line)
            .map(|c| {
                let title = c.get(3).map_or("", |t| t.as_str().trim());
                (c[1].to_owned(), titled(&c[2], title))
            })
            .or_else(|| {
                tabbed
                    .captures(line)
                    .map(|c| (c[1].to_owned(), String::new()))
            });
        if let Some((indent, label)) = opened {
            out[k] = if label.is_empty() {
                label
            } else {
                format!("{indent}{label}")
            };
            let width = columns(&indent) + 4;
            for next in out.iter_mut().skip(k + 1) {
                if next.trim().is_empty() {
                    continue;
                }
                if columns(next) < width {
                    break;
                }
                *next = dedented(next, 4);
            }
            changed = true;
        } else if shortcodes.is_match(line) {
            out[k] = String::new();
            changed = true;
        } else if let Some(c) = admonition.captures(line) {
            // An admonition's own title is text: `:::warning Removed in v11.0.0`.
            out[k] = match (c.get(1), c.get(2).or(c.get(3))) {
                (Some(kind), Some(t)) => titled(kind.as_str(), t.as_str().trim()),
                _ => String::new(),
            };
            changed = true;
        } else if tag.is_match(line)
            || import.is_match(line)
            || (mdx && line.starts_with("export "))
        {
            out[k] = String::new();
            changed = true;
        }
    }
    if !changed {
        return None;
    }
    Some(crate::edit::text::joined_like(&out, text))
}

/// An admonition's title line as its page shows it, a title bar in bold: "**Warning: Removed in
/// v11**" (its kind, then its title), which heads the box's text and is no sentence to quote
/// (`extractive`); nothing when it has no title of its own. Plain, "Info: Enabling or disabling
/// code copy buttons for a specific code block" was listed third among the sentences to pick
/// for "how do I get a copy button on every code block" (Material for MkDocs' docs).
fn titled(kind: &str, title: &str) -> String {
    if title.is_empty() {
        return String::new();
    }
    let mut chars = kind.chars();
    let first = chars
        .next()
        .map_or(String::new(), |c| c.to_uppercase().collect());
    format!("**{first}{}: {title}**", chars.as_str())
}

/// The columns `line` is indented by, a tab to the next multiple of four (Python-Markdown's,
/// and CommonMark's tab stops).
pub(crate) fn columns(line: &str) -> usize {
    crate::edit::text::indent_cols(crate::edit::text::indent_of(line), 4)
}

/// `line` with `by` columns of its leading whitespace taken away (a tab counted as it reaches).
fn dedented(line: &str, by: usize) -> String {
    let rest = &line[crate::edit::text::indent_of(line).len()..];
    format!("{}{rest}", " ".repeat(columns(line).saturating_sub(by)))
}

/// Whether a block of prose leads to what follows it: its last line ends with a colon, as
/// "For example:" or "… put the following in `~/.config/app.toml`:" do before their code.
/// A heading or a fence line does not.
fn lead_in_block(block: &[&str]) -> bool {
    block
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| !l.is_empty())
        .is_some_and(|l| l.ends_with(':') && !l.starts_with('#') && !l.starts_with("```"))
}

fn push_passage(out: &mut Vec<Passage>, lines: &[&str], heading: String, start: usize, end: usize) {
    let text = lines[start..=end].join("\n");
    if text.trim().is_empty() {
        return;
    }
    out.push(Passage {
        heading,
        start_line: start as u32 + 1,
        end_line: end as u32 + 1,
        text,
    });
}

fn blocks(lines: &[&str], prose: bool) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut headings: Vec<(usize, String)> = Vec::new(); // level, text
    let mut definition = String::new();
    let mut fences = Fences::default();
    let mut open: Option<Block> = None;
    let heading_of = |headings: &[(usize, String)], definition: &str| {
        if prose {
            headings
                .iter()
                .map(|(_, t)| t.as_str())
                .collect::<Vec<_>>()
                .join(" › ")
        } else {
            definition.to_owned()
        }
    };
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim();
        if fences.is_open() {
            fences.line(line);
            if let Some(b) = &mut open {
                b.end = i;
                b.chars += line.len() + 1;
            }
            continue;
        }
        if prose {
            // A fence opens here, or the line is outside any block.
            fences.line(line);
        }
        // A setext heading: the one-line paragraph above this underline is a heading (man pages
        // in Markdown write every section so: "NAME" over "----"). That line may have joined a
        // heading alone above it; it is taken back.
        if prose
            && i >= 1
            && (i < 2 || lines[i - 2].trim().is_empty())
            && let Some((level, title)) = setext_heading(lines[i - 1], trimmed)
            && open.as_ref().is_some_and(|b| b.end + 1 == i)
        {
            if let Some(mut b) = open.take()
                && b.start < i - 1
            {
                b.end = (b.start..i - 1)
                    .rev()
                    .find(|k| !lines[*k].trim().is_empty())
                    .unwrap_or(b.start);
                b.chars = b.chars.saturating_sub(lines[i - 1].len() + 1);
                blocks.push(b);
            }
            headings.retain(|(l, _)| *l < level);
            headings.push((level, title));
            open = Some(Block {
                heading: heading_of(&headings, &definition),
                start: i - 1,
                end: i,
                chars: lines[i - 1].len() + line.len() + 2,
            });
            continue;
        }
        // Four columns in (a tab to the next multiple of four) a line is an indented example,
        // not a heading: "    # Single expression" in a man page's example, a shell comment in
        // a README's indented block (CommonMark allows a heading three spaces in at most).
        if prose
            && columns(line) < 4
            && let Some((level, title)) = markdown_heading(trimmed)
        {
            if let Some(b) = open.take() {
                blocks.push(b);
            }
            headings.retain(|(l, _)| *l < level);
            headings.push((level, title));
            // The heading line opens the block under it, so the passage shows it.
            open = Some(Block {
                heading: heading_of(&headings, &definition),
                start: i,
                end: i,
                chars: line.len() + 1,
            });
            continue;
        }
        if trimmed.is_empty() {
            if let Some(b) = open.take() {
                // A heading alone is not a block: it joins the paragraph under it.
                let heading_alone = (b.start == b.end
                    && markdown_heading(lines[b.start].trim()).is_some())
                    || (b.end == b.start + 1
                        && setext_heading(lines[b.start], lines[b.end]).is_some());
                if prose && heading_alone {
                    open = Some(b);
                } else {
                    blocks.push(b);
                }
            }
            continue;
        }
        if !prose && let Some(def) = definition_line(line) {
            // A definition starts a block of its own unless the block is its doc comment.
            if let Some(b) = open.take() {
                if lines[b.start..=b.end].iter().all(|l| is_comment(l)) {
                    definition = def;
                    open = Some(Block {
                        heading: definition.clone(),
                        end: i,
                        chars: b.chars + line.len() + 1,
                        ..b
                    });
                    continue;
                }
                blocks.push(b);
            }
            definition = def;
        }
        match &mut open {
            Some(b) => {
                b.end = i;
                b.chars += line.len() + 1;
            }
            None => {
                open = Some(Block {
                    heading: heading_of(&headings, &definition),
                    start: i,
                    end: i,
                    chars: line.len() + 1,
                })
            }
        }
    }
    if let Some(b) = open {
        blocks.push(b);
    }
    blocks
}

/// The level a line of `=` (1) or of two `-` or more (2) gives the line above it when it
/// underlines a setext heading; otherwise (after a blank line) it is a rule, never text.
pub(crate) fn underline(line: &str) -> Option<usize> {
    let line = line.trim();
    if !line.is_empty() && line.chars().all(|c| c == '=') {
        Some(1)
    } else if line.len() >= 2 && line.chars().all(|c| c == '-') {
        Some(2)
    } else {
        None
    }
}

/// A setext heading: `line` underlines `above`, with `=` (level 1) or two `-` or more (level 2),
/// and `above` is text — not a list item, quote, table row, ATX heading or fence — indented
/// less than code. Returns its level and title.
pub(crate) fn setext_heading(above: &str, line: &str) -> Option<(usize, String)> {
    let level = underline(line)?;
    let t = above.trim();
    let list = t.starts_with(['-', '*', '+'])
        || t.split_once(['.', ')'])
            .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
    let markup = t.starts_with(['>', '|', '#', '`', '~', '<']);
    let indent = above.len() - above.trim_start().len();
    (!t.is_empty() && !list && !markup && indent < 4)
        .then(|| (level, t.chars().take(120).collect()))
}

/// `## Title` → (2, "Title").
fn markdown_heading(line: &str) -> Option<(usize, String)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &line[level..];
    if !rest.starts_with(' ') {
        return None;
    }
    let title = rest.trim().trim_end_matches('#').trim();
    (!title.is_empty()).then(|| (level, title.chars().take(120).collect()))
}

fn is_comment(line: &str) -> bool {
    let t = line.trim_start();
    ["//", "#", "/*", "*", "--", ";;", "\"\"\"", "'''"]
        .iter()
        .any(|p| t.starts_with(p))
}

/// A line that defines something (a function, type, class, module), trimmed, as a heading.
fn definition_line(line: &str) -> Option<String> {
    let indent = line.len() - line.trim_start().len();
    if indent > 8 {
        return None;
    }
    let t = line.trim();
    let mut words = t
        .split(|c: char| c.is_whitespace() || c == '(' || c == '<' || c == '{' || c == ':')
        .filter(|w| !w.is_empty());
    const MODIFIERS: [&str; 14] = [
        "pub",
        "pub(crate)",
        "pub(super)",
        "async",
        "unsafe",
        "const",
        "export",
        "default",
        "static",
        "public",
        "private",
        "protected",
        "abstract",
        "extern",
    ];
    const KEYWORDS: [&str; 16] = [
        "fn",
        "struct",
        "enum",
        "trait",
        "impl",
        "mod",
        "type",
        "union",
        "def",
        "class",
        "function",
        "func",
        "interface",
        "macro_rules!",
        "module",
        "record",
    ];
    let keyword = words.find(|w| !MODIFIERS.contains(w))?;
    KEYWORDS
        .contains(&keyword)
        .then(|| t.trim_end_matches('{').trim().chars().take(120).collect())
}

/// Words that carry no topic: dropped from searches and from overlap measures.
pub const STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as",
    "at", "be", "because", "been", "before", "being", "between", "both", "but", "by", "can",
    "could", "did", "do", "does", "doing", "done", "during", "each", "either", "else", "etc",
    "every", "few", "for", "from", "further", "get", "gets", "had", "has", "have", "having", "he",
    "her", "here", "hers", "him", "his", "how", "however", "i", "if", "in", "into", "is", "it",
    "its", "itself", "just", "let", "may", "me", "might", "more", "most", "much", "must", "my",
    "no", "nor", "not", "now", "of", "off", "on", "once", "one", "only", "or", "other", "our",
    "out", "over", "own", "per", "same", "she", "should", "so", "some", "such", "than", "that",
    "the", "their", "them", "then", "there", "these", "they", "this", "those", "through", "thus",
    "to", "too", "under", "until", "up", "upon", "us", "use", "used", "uses", "using", "very",
    "via", "was", "way", "we", "were", "what", "when", "where", "whether", "which", "while", "who",
    "whom", "why", "will", "with", "within", "without", "would", "you", "your",
];

/// A word with its contraction taken off: none left of a negation ("isn't", "don't": split at
/// the apostrophe, "isn" was the rarest word of Poetry's "how do I make a dependency group
/// such as docs optional so it isn't installed by default" among its passages and weighed more
/// than "optional" and "group" together), the word without "'s", "'ll", "'ve", "'re", "'d",
/// "'m" ("project's" is "project"). Other apostrophes split as before.
fn uncontracted(token: &str) -> &str {
    let Some(at) = token.rfind(['\'', '\u{2019}']) else {
        return token;
    };
    let (base, tail) = (&token[..at], &token[at..]);
    let tail = tail[tail.chars().next().map_or(0, char::len_utf8)..]
        .trim_end_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    let letters = |s: &str| !s.is_empty() && s.chars().all(char::is_alphabetic);
    let word = base.trim_start_matches(|c: char| !c.is_alphanumeric());
    if tail == "t" && word.ends_with(['n', 'N']) && letters(word) {
        ""
    } else if matches!(tail.as_str(), "s" | "ll" | "ve" | "re" | "d" | "m")
        && base.chars().last().is_some_and(char::is_alphanumeric)
    {
        base
    } else {
        token
    }
}

/// The words of `text` worth searching for: lower-case, at least two characters (or a digit),
/// stop words dropped, each once, in order.
pub fn terms(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let words = text
        .split_whitespace()
        .map(uncontracted)
        .flat_map(|t| t.split(|c: char| !c.is_alphanumeric()));
    for word in words {
        let w = word.to_lowercase();
        if w.is_empty()
            || (w.chars().count() < 2 && !w.chars().all(|c| c.is_ascii_digit()))
            || STOP_WORDS.contains(&w.as_str())
        {
            continue;
        }
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// A crude stem, enough to match `retried`/`retries`/`retry` and `entries`/`entry` when
/// measuring overlap (the index itself uses FTS5's Porter stemmer).
pub fn stem(word: &str) -> String {
    let w = word.to_lowercase();
    let n = w.chars().count();
    if n <= 3 {
        return w;
    }
    for (suffix, keep) in [
        ("ies", "y"),
        ("ied", "y"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("ly", ""),
        ("s", ""),
    ] {
        if let Some(base) = w.strip_suffix(suffix)
            && base.chars().count() >= 3
            && !(suffix == "s" && (base.ends_with('s') || base.ends_with('u')))
        {
            let mut b = format!("{base}{keep}");
            // `evicted` → `evict`, `stopped` → `stop`.
            let chars: Vec<char> = b.chars().collect();
            if keep.is_empty()
                && chars.len() >= 4
                && chars[chars.len() - 1] == chars[chars.len() - 2]
                && !matches!(chars[chars.len() - 1], 'l' | 's' | 'z')
            {
                b.pop();
            }
            return strip_final_e(b);
        }
    }
    strip_final_e(w)
}

/// `cache` → `cach` (so it meets `caching`), but `use` stays `use`.
fn strip_final_e(word: String) -> String {
    match word.strip_suffix('e') {
        Some(base) if base.chars().count() >= 3 => base.to_owned(),
        _ => word,
    }
}

/// The stems of the content words of `text` (see [`terms`] and [`stem`]).
pub fn content_stems(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in terms(text) {
        let s = stem(&t);
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// Whether a passage is navigation rather than content: a table of contents, a list of links,
/// or headings with nothing under them (docs/research.md, "Navigation is not evidence"). Every
/// line outside headings is a link with at most three words of its own beside it ("- [Does
/// it support configuration files?](#config)"), allowing one short title line ("Contents:")
/// over three links or more; a passage with code (other than a `{toctree}` or `{contents}`
/// directive, which a Sphinx build turns into a table of contents) or with
/// a sentence of its own is content. Such a passage holds the words of every section it names,
/// so it ranks high for any question and "supports" any sentence by overlap; it says nothing.
pub fn is_navigation(text: &str) -> bool {
    let mut fences = Fences::default();
    let mut toctree = false;
    let (mut links, mut loose_words, mut loose_lines) = (0usize, 0usize, 0usize);
    for line in text.lines() {
        match fences.line(line) {
            FenceLine::Open => {
                let info = line.trim_start().trim_start_matches(['`', '~']);
                toctree = info.starts_with("{toctree}") || info.starts_with("{contents}");
                if !toctree {
                    return false;
                }
                continue;
            }
            FenceLine::Inside | FenceLine::Close => continue,
            FenceLine::Outside => {}
        }
        let t = line.trim();
        if t.is_empty() || markdown_heading(t).is_some() || t.starts_with("<!--") {
            continue;
        }
        let (own, linked) = words_beside_links(t);
        if linked && own <= 3 {
            links += 1;
        } else {
            loose_lines += 1;
            loose_words += own;
        }
    }
    if toctree && loose_lines == 0 {
        return true;
    }
    loose_lines == 0 || (loose_lines == 1 && loose_words <= 4 && links >= 3)
}

/// The words of a line outside its links (`[text](url)`, `<url>`, bare URLs, list markers
/// and emphasis aside), and whether it has a link.
fn words_beside_links(line: &str) -> (usize, bool) {
    static ANCHOR: OnceLock<Regex> = OnceLock::new();
    static TAG: OnceLock<Regex> = OnceLock::new();
    let anchor = crate::research::citations::regex(&ANCHOR, r"(?is)<a\b[^>]*>.*?</a>");
    let tag = crate::research::citations::regex(&TAG, r"(?s)<[^>]*>");
    let mut linked = anchor.is_match(line);
    let line = anchor.replace_all(line, " ");
    let line = tag.replace_all(&line, " ");
    let mut rest: &str = &line;
    let mut outside = String::new();
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let Some(close) = after.find(']') else { break };
        let tail = &after[close + 1..];
        let target_end = if tail.starts_with('(') {
            tail.find(')').map(|e| e + 1)
        } else if tail.starts_with('[') {
            tail.find(']').map(|e| e + 1)
        } else {
            None
        };
        match target_end {
            Some(end) => {
                outside.push_str(&rest[..open]);
                outside.push(' ');
                linked = true;
                rest = &tail[end..];
            }
            None => {
                outside.push_str(&rest[..open + 1]);
                rest = after;
            }
        }
    }
    outside.push_str(rest);
    let own = outside
        .split_whitespace()
        .filter(|w| {
            if w.starts_with("http://") || w.starts_with("https://") || w.starts_with('<') {
                linked = true;
                return false;
            }
            w.chars().any(|c| c.is_alphanumeric())
                && !(w.ends_with('.') && w[..w.len() - 1].chars().all(|c| c.is_ascii_digit()))
        })
        .count();
    (own, linked)
}

const QUESTION_WORDS: [&str; 17] = [
    "how", "what", "why", "when", "where", "which", "who", "whether", "does", "do", "is", "are",
    "can", "should", "did", "will", "whose",
];

/// Words that open a condition (`…, and if X, which …`).
const CONDITIONS: [&str; 4] = ["if", "when", "whenever", "unless"];

/// Words "what" or "how" may follow and still open a question ("in what order …", "and for how
/// long …"). Not "which": after a comma, "in which …", "from which …" is mostly a relative
/// clause ("how do I update the lockfile, in which every dependency is pinned").
const PREPOSITIONS: [&str; 11] = [
    "in", "at", "on", "for", "by", "from", "to", "with", "under", "into", "of",
];

/// Whether a word ends a statement that a question follows: a spaced dash, or a word ending
/// with a colon ("I'm writing a Dockerfile — how do I …", "My problem: why …"). It counts
/// only where the words after it ask something ([`question_parts`]).
fn is_dash(word: &str) -> bool {
    matches!(word, "\u{2014}" | "\u{2013}") || (word.chars().count() > 1 && word.ends_with(':'))
}

/// For each word, whether it is inside a pair of parentheses (an aside, "(and can I change
/// that)"); a parenthesis that is never closed (":(") opens nothing.
fn asides(words: &[&str]) -> Vec<bool> {
    let mut inside = vec![false; words.len()];
    let mut open: Vec<usize> = Vec::new();
    for (k, w) in words.iter().enumerate() {
        for c in w.chars() {
            if c == '(' {
                open.push(k);
            } else if c == ')'
                && let Some(from) = open.pop()
            {
                inside[from..=k].iter_mut().for_each(|i| *i = true);
            }
        }
    }
    inside
}

/// `prose` with each `?` that ends a question of the asker's replaced by `asked`: not one
/// that ends a quotation or an aside inside a sentence, the closing mark right after it and
/// the sentence going on after that ("pressing `d` should pop up a small "Delete this note?" box with Yes and
/// No buttons", a dialog's title quoted in a Textual question, 2026-12-04, was asked as two
/// parts cut at its `?`). A closing `"` counts when a `"` opened before it; `”`, `’`, `»`
/// and `)` when their opening mark did. A closing mark after a `?` that does end a question
/// ends it too, before `asked`: the question after it does not open with it.
fn quoted_marks_kept(prose: &str, asked: char) -> String {
    let chars: Vec<char> = prose.chars().collect();
    let mut out = String::with_capacity(prose.len());
    let mut straight = 0usize;
    // A straight single quote opens a quotation at a word's start ("ask 'are you sure?'
    // before …") and closes it at a word's end; between letters it is an apostrophe.
    let mut single = false;
    let mut open: Vec<char> = Vec::new();
    // The closing mark after a `?` that ends a question, pushed before the end with it.
    let mut pushed = false;
    for (k, &c) in chars.iter().enumerate() {
        match c {
            '"' => straight += 1,
            '\'' => {
                let before = k.checked_sub(1).map(|b| chars[b]);
                let after = chars.get(k + 1);
                if before.is_none_or(|b| b.is_whitespace() || matches!(b, '(' | '[')) {
                    single = after.is_some_and(|a| !a.is_whitespace());
                } else if after.is_none_or(|a| !a.is_alphanumeric()) {
                    single = false;
                }
            }
            '\u{201c}' | '\u{2018}' | '\u{ab}' | '(' => open.push(c),
            '\u{201d}' | '\u{2019}' | '\u{bb}' | ')' => {
                let opener = match c {
                    '\u{201d}' => '\u{201c}',
                    '\u{2019}' => '\u{2018}',
                    '\u{bb}' => '\u{ab}',
                    _ => '(',
                };
                if let Some(at) = open.iter().rposition(|o| *o == opener) {
                    open.truncate(at);
                }
            }
            _ => {}
        }
        if c != '?' {
            if !std::mem::take(&mut pushed) {
                out.push(c);
            }
            continue;
        }
        let closes = chars.get(k + 1).is_some_and(|next| match next {
            '"' => straight % 2 == 1,
            '\'' => single,
            '\u{201d}' => open.contains(&'\u{201c}'),
            '\u{2019}' => open.contains(&'\u{2018}'),
            '\u{bb}' => open.contains(&'\u{ab}'),
            ')' => open.contains(&'('),
            _ => false,
        });
        // The sentence goes on after the closing mark: a word in lower case, a comma or a dash
        // ("… a "Delete?" box", not "… say "why?" Then …").
        let goes_on = chars[(k + 2).min(chars.len())..]
            .iter()
            .find(|c| !c.is_whitespace())
            .is_some_and(|c| {
                c.is_lowercase() || matches!(c, ',' | '`' | '-' | '\u{2014}' | '\u{2013}')
            });
        if closes && goes_on {
            out.push(c);
        } else if closes {
            // `Should the flag be "--force?" Then …`: the quotation ends with the question,
            // and the next one does not open with its closing mark.
            out.extend([chars[k + 1], asked]);
            pushed = true;
        } else {
            out.push(asked);
        }
    }
    out
}

/// Where a piece of a question ends ([`outside_code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ends {
    /// At a `?` or the end of the text: a question.
    Asked,
    /// At a `;` or a new line, where what came before may be a statement.
    Stopped,
    /// At the end of a sentence whose next one opens a part ([`OPENERS`]).
    BeforeOpener,
}

/// Words that open a sentence which turns to another matter: "Second, we use an internal SDK …
/// and just want those errors gone for that one library. Third, a colleague …", "On another
/// import I already had `# noqa: F401` …". Read at the start of a sentence after a `.` or a `!`
/// only, in the asker's prose (not inside code), they cut the question there ([`outside_code`])
/// and the sentence they open is a part of its own even when it asks nothing ("Separately, a
/// teammate on Windows runs the same command inside WSL and even .py edits don't trigger
/// anything."). Not "First", which opens the first part, the context before it being the story;
/// not "Next" or "Last" without their comma ("Last week someone typo'd …" tells a story).
/// "And" also cuts ("… don't trigger anything. And I'd rather start the server from my script
/// …"), but what it opens is a part only when it asks.
const OPENERS: [&str; 17] = [
    "also",
    "separately",
    "second",
    "secondly",
    "third",
    "thirdly",
    "fourth",
    "finally",
    "lastly",
    "last,",
    "next,",
    "additionally",
    "besides",
    "plus",
    "another",
    "on another",
    "for another",
];

/// Whether `piece` opens with a word of [`OPENERS`].
fn opens_part(piece: &str) -> bool {
    let mut words = piece.split_whitespace();
    let first = words.next().unwrap_or("");
    let two = format!("{} {}", lower(first), lower(words.next().unwrap_or("")));
    OPENERS.iter().any(|o| match o.strip_suffix(',') {
        Some(_) => first.to_lowercase() == *o,
        None => lower(first) == *o || two == *o,
    })
}

/// `text` split at `?`, `;` and new lines outside inline code ([`citations::map_prose`]'s
/// reading of code spans), and before a sentence that opens another part ([`OPENERS`]), each
/// piece with where it ends ([`Ends`]): a question that quotes shell (`if [ -n "$CI" ]; then …
/// fi`) or Rust (`x?`) is not cut inside the quote. Over just's manual the part "then … fi`
/// block, and just refuses with 'Recipe line has extra leading whitespace'" was asked on its
/// own (2026-12-01). A backtick without a closing one opens nothing.
fn outside_code(text: &str) -> Vec<(String, Ends)> {
    const ASKED: char = '\u{1e}';
    const STOPPED: char = '\u{1f}';
    const OPENED: char = '\u{1d}';
    static OPENER: OnceLock<Regex> = OnceLock::new();
    let opener = OPENER.get_or_init(|| {
        let words = ["and"]
            .iter()
            .chain(&OPENERS)
            .map(|o| {
                let mut c = o.chars();
                let first = c.next().map(|f| f.to_ascii_uppercase()).unwrap_or(' ');
                let word = format!("{first}{}", c.as_str()).replace(' ', r"\s+");
                if word.ends_with(',') {
                    word
                } else {
                    format!(r"{word}\b")
                }
            })
            .collect::<Vec<_>>()
            .join("|");
        Regex::new(&format!(r"([.!])\s+((?:{words}))")).expect("valid")
    });
    let mapped = crate::research::citations::map_prose(
        &text.replace([ASKED, STOPPED, OPENED], " "),
        |prose| {
            let prose = quoted_marks_kept(prose, ASKED).replace(';', "\u{1f}");
            opener
                .replace_all(&prose, format!("${{1}}{OPENED} ${{2}}"))
                .into_owned()
        },
    );
    let mut pieces = Vec::new();
    let mut piece = String::new();
    for c in mapped.chars() {
        match c {
            ASKED => pieces.push((std::mem::take(&mut piece), Ends::Asked)),
            STOPPED | '\n' => pieces.push((std::mem::take(&mut piece), Ends::Stopped)),
            OPENED => pieces.push((std::mem::take(&mut piece), Ends::BeforeOpener)),
            _ => piece.push(c),
        }
    }
    pieces.push((piece, Ends::Asked));
    pieces
}

/// A word without the punctuation around it, in lower case.
fn lower(word: &str) -> String {
    word.trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase()
}

/// Question words that are verbs: they open a question in first place ("is there …", "does it
/// …"), and in second place they are a statement's ("Also, `etl/schema_pb2.py` is generated by
/// protoc on every build", a part of its own over mypy's docs, 2026-12-05), where "how" and
/// "what" still ask ("and how …", "so what …").
const AUXILIARIES: [&str; 8] = ["does", "do", "is", "are", "can", "should", "did", "will"];

fn is_auxiliary(word: &str) -> bool {
    AUXILIARIES.contains(&lower(word).as_str())
}

/// Whether a word opens a question ([`QUESTION_WORDS`]).
fn is_q(word: &str) -> bool {
    QUESTION_WORDS.contains(&lower(word).as_str())
}

/// Whether `words` ask something: a question word among their first two (after a leading
/// "and"), or among the first two after a dash, a colon that ends a statement or a comma
/// inside them, a verb of [`AUXILIARIES`] only in first place; not when the first opens a
/// condition and the second is no question word ("When I override the block, …" asks nothing
/// before its comma).
fn asks(words: &[&str]) -> bool {
    let asks_from = |k: usize| {
        let first = words.get(k);
        let second = words.get(k + 1);
        if first.is_some_and(|f| CONDITIONS.contains(&lower(f).as_str()))
            && !second.is_some_and(|s| is_q(s))
        {
            return false;
        }
        first.is_some_and(|f| is_q(f)) || second.is_some_and(|s| is_q(s) && !is_auxiliary(s))
    };
    let asked_inside = (1..words.len()).any(|j| {
        let before = words[j - 1];
        (is_dash(before) || before.ends_with(',')) && asks_from(j)
    });
    let lead = usize::from(words.first().is_some_and(|w| lower(w) == "and"));
    asked_inside || (lead < words.len() && asks_from(lead))
}

/// The pieces of a question ([`outside_code`]) with each statement that ends at a semicolon, a
/// new line or before a sentence that opens another part, and asks nothing ([`asks`]), kept as
/// the context of the piece after it: "our CI runs `make release VERSION=2.1.0` to override a
/// variable; what's the just equivalent" is one question. Asked on their own over just's manual
/// and Uvicorn's docs, the statement got an answer about itself and "what's the just
/// equivalent" one about nothing in particular (2026-12-01). A statement that a sentence
/// opening another part follows ([`OPENERS`]) is a part of its own when it opens with one of
/// those words itself ("Second, we use an internal SDK …; it's imported in dozens of our
/// modules …. Third, …"): over mypy's docs, "Second, … just want those errors gone for that
/// one library" was asked together with "Third, … Why?" and only the third was answered
/// (2026-12-05). One that only says what the asker wants ("I want to …", "we need …") stays
/// context when a part was asked before it: of 80 questions users wrote on GitHub and in
/// forums, such a statement before an opener was a request of its own once and the story of
/// the question after it four times. With nothing asked before it, it is the matter the
/// opener turns from ("For our API I'd rather get an error. Separately, can a model be made
/// read-only?"): merged into the question after it, the question was one part, and over
/// Pydantic's docs three of eight questions lost a part that way (2026-12-05).
fn with_context(pieces: Vec<(String, Ends)>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut context: Option<(String, Ends)> = None;
    let opened: Vec<bool> = pieces.iter().map(|(p, _)| opens_part(p)).collect();
    for (k, (piece, ends)) in pieces.into_iter().enumerate() {
        let piece = match context.take() {
            Some((before, _)) if piece.trim().is_empty() => before,
            Some((before, Ends::BeforeOpener)) => {
                format!("{} {}", before.trim_end(), piece.trim_start())
            }
            Some((before, _)) => format!("{}; {}", before.trim_end(), piece.trim_start()),
            None => piece,
        };
        let words: Vec<&str> = piece.split_whitespace().collect();
        // "Also," or "Separately," (not "And") after a statement with no part before it: the
        // statement is the matter the opener turns from, which merged into the question after
        // it would leave the question one part.
        let first_matter = ends == Ends::BeforeOpener
            && out.is_empty()
            && opened.get(k + 1).copied().unwrap_or(false);
        // A want said after a question is another request; said before anything was asked,
        // it is the story's goal, which the question after it serves ("I want to perform
        // digital aneurysm removal … And the three python scripts are in my path. … Do you
        // know how to use this script").
        let request = !out.is_empty() && says_a_want(&piece);
        let own = asks(&words)
            || (ends == Ends::BeforeOpener && (opens_part(&piece) || first_matter || request));
        if ends != Ends::Asked && !own && !terms(&piece).is_empty() {
            context = Some((piece, ends));
        } else {
            out.push(piece);
        }
    }
    out.extend(context.map(|(piece, _)| piece));
    out
}

/// Whether the last sentence of `piece` says what the asker wants ("I'd like …", "we need
/// …", "I'd also like …", after a lead-in and its comma: "While I'm at it, I'd like …"). After
/// a question and before a sentence that turns to another matter ([`with_context`]: "And",
/// "Also", …), such a statement is a request of its own, not the context of what follows:
/// "I'd like chezmoi to ask me for it when a new machine is set up, but not ask again … And at
/// work we spin up short-lived dev containers … Is there a mode for that?" was asked as one
/// part, and only the containers were answered.
fn says_a_want(piece: &str) -> bool {
    static WANT: OnceLock<Regex> = OnceLock::new();
    let want = WANT.get_or_init(|| {
        Regex::new(
            r"(?i)^(?:[^,.;:?!]{1,40},\s+)?(?:i|we)(?:'d|\u{2019}d| would)?(?:\s+(?:also|really|just|still))?\s+(?:like|want|need|love|prefer|rather)\b",
        )
        .expect("a valid pattern")
    });
    // The last sentence: after the last ". ", "! " or "; " (not a dot inside a name, as in
    // `config.toml`).
    let text = piece.trim().trim_end_matches(['.', '!', ';']);
    let start = [". ", "! ", "; "]
        .iter()
        .filter_map(|end| text.rfind(end).map(|i| i + end.len()))
        .max()
        .unwrap_or(0);
    want.is_match(text[start..].trim_start())
}

/// The parts of a question, each a question of its own: split at `?`, `;`, new lines, and at
/// `, and …` / `and how …` / `, what …` before a question word (or "what" or "how" after a
/// preposition: `, and in what order …`). What a question opens with that asks nothing stays
/// with the question after its comma (its context): a statement ("my Docker image reinstalls
/// every dependency whenever a file changes, how do I avoid that"), a condition ("And if a
/// folder has both files, which one is used", "When I override the block, how do I keep …"),
/// a phrase ("And by default, does it …"). Words ask something when a question word is among
/// their first two, or among the first two after a dash or a colon that ends a statement ("I'm
/// writing a Dockerfile — how do I skip the project, how do I install it" has two parts, the
/// first with the statement), or after a comma ("if it is set, which value wins"). A
/// condition after `, and` (`…, and if X, which …`) goes with the question it conditions.
/// Nothing inside parentheses is split off ("… a newer release (and can I change that), and
/// why …"). A statement before a semicolon or on a line of its own is the context of the
/// question after it ([`with_context`]). A part loses a leading "and". A question with one
/// part comes back whole. Parts without a searchable word are dropped.
pub fn question_parts(question: &str) -> Vec<String> {
    let spaced = question.replace('\u{2014}', " \u{2014} ");
    let mut parts: Vec<String> = Vec::new();
    for piece in with_context(outside_code(&spaced)) {
        let words: Vec<&str> = piece.split_whitespace().collect();
        let inside = asides(&words);
        // A question word, or a preposition and then "what" or "how" ("in what order").
        let opens = |k: usize| {
            words.get(k).is_some_and(|n| is_q(n))
                || (words
                    .get(k)
                    .is_some_and(|n| PREPOSITIONS.contains(&lower(n).as_str()))
                    && words
                        .get(k + 1)
                        .is_some_and(|n| matches!(lower(n).as_str(), "what" | "how")))
        };
        // The words of the part being read, as indices into `words`.
        let mut current: Vec<usize> = Vec::new();
        let text = |current: &[usize]| {
            current
                .iter()
                .map(|k| words[*k])
                .collect::<Vec<_>>()
                .join(" ")
        };
        let mut i = 0;
        while i < words.len() {
            let w = words[i];
            // `…, and how …` / `… and what …` / `…, how …` / `… as well as how …`: the
            // connective (`and`, `as well as`) belongs to neither part.
            let comma_before = current.last().is_some_and(|k| words[*k].ends_with(','));
            let connective = if current.is_empty() || inside[i] {
                None
            } else if lower(w) == "and" && opens(i + 1) {
                Some(1)
            } else if comma_before && opens(i) {
                Some(0)
            } else if lower(w) == "as"
                && words.get(i + 1).is_some_and(|n| lower(n) == "well")
                && words.get(i + 2).is_some_and(|n| lower(n) == "as")
                && opens(i + 3)
            {
                Some(3)
            } else {
                None
            };
            // What comes before the comma asks nothing when no question word opens it (after
            // a leading "and"), nor the words after a dash or a comma inside it: it is the
            // context of the question after the comma, not a part of its own. A lead-in with
            // no word to search for ("Also, what …") is no context either.
            let context = connective == Some(0) && {
                let said: Vec<&str> = current.iter().map(|k| words[*k]).collect();
                !asks(&said) && !terms(&text(&current)).is_empty()
            };
            let connective = if context { None } else { connective };
            if let Some(skip) = connective {
                // "…, and if the same setting is also set in the environment, which value
                // wins": the condition belongs to the question after it.
                let condition = (1..current.len().saturating_sub(1)).rev().find(|&k| {
                    skip == 0
                        && words[current[k - 1]].ends_with(',')
                        && lower(words[current[k]]) == "and"
                        && CONDITIONS.contains(&lower(words[current[k + 1]]).as_str())
                });
                match condition {
                    Some(k) => {
                        parts.push(text(&current[..k]));
                        current.drain(..=k);
                    }
                    None => {
                        parts.push(text(&current));
                        current.clear();
                    }
                }
                if skip > 0 {
                    i += skip;
                    continue;
                }
            }
            current.push(i);
            i += 1;
        }
        if !current.is_empty() {
            parts.push(text(&current));
        }
    }
    let parts: Vec<String> = parts
        .into_iter()
        .map(|p| {
            let p = p.trim().trim_matches(|c: char| {
                c == ',' || c == '\u{2014}' || c == '\u{2013}' || c.is_whitespace()
            });
            let p = match p.split_once(' ') {
                Some(("and" | "And", rest)) => rest,
                _ => p,
            };
            p.trim_start_matches(|c: char| c == ',' || c.is_whitespace())
                .to_owned()
        })
        .filter(|p| !terms(p).is_empty())
        .collect();
    if parts.len() <= 1 {
        let whole = question.split_whitespace().collect::<Vec<_>>().join(" ");
        return vec![whole];
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn a_page_read_as_rendered_keeps_its_lines(lines in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::string::string_regex("[-+:=<>/{}'\" a-zA-Z`]{0,14}").expect("pattern"),
                proptest::sample::select(vec![
                    "---".to_owned(), "+++".to_owned(), "title: T".to_owned(), "title = \"T\"".to_owned(),
                    ":::note".to_owned(), ":::".to_owned(), "```".to_owned(), "<Tabs>".to_owned(),
                    "import A from 'b'".to_owned(), "".to_owned(), "...".to_owned(),
                    "!!! note".to_owned(), "??? tip \"T\"".to_owned(), "=== \"Tab\"".to_owned(),
                    "    indented".to_owned(), "\tin a tab".to_owned(), "{{% note %}}".to_owned(),
                    "    ```".to_owned(),
                ]),
            ],
            0..30,
        )) {
            let page = lines.join("\n");
            if let Some(out) = as_rendered("p.mdx", &page) {
                proptest::prop_assert_eq!(out.split('\n').count(), page.split('\n').count(), "{:?} → {:?}", page, out);
            }
        }
    }

    /// Four columns in, a `#` line is an indented example's comment, not a heading (just's
    /// README, direnv's stdlib page); three spaces in it still heads a section (CommonMark).
    #[test]
    fn a_line_four_columns_in_is_no_heading() {
        let text = "# Guide\n\nRun it:\n\n    # start the server\n    serve\n\n\t# a tab is four\n\n   ## Later\n\nMore.\n";
        let passages = split("README.md", text);
        let headings: Vec<&str> = passages.iter().map(|p| p.heading.as_str()).collect();
        assert_eq!(headings, vec!["Guide", "Guide › Later"], "{passages:#?}");
    }

    #[test]
    fn markdown_passages_carry_their_heading_path() {
        let text = "# Cache\n\nIntro line.\n\n## Eviction\n\nWhen full, the cache evicts the least recently used entry.\n\n```rust\nfn evict() {}\n\nfn other() {}\n```\n\n## Sizes\n\nAt most 1000 entries.\n";
        let passages = split("docs/cache.md", text);
        assert_eq!(passages.len(), 3, "{passages:#?}");
        assert_eq!(passages[0].heading, "Cache");
        assert_eq!(passages[1].heading, "Cache › Eviction");
        assert!(passages[1].text.starts_with("## Eviction"));
        assert!(
            passages[1].text.contains("fn other() {}\n```"),
            "the fence is one block"
        );
        assert_eq!(passages[1].start_line, 5);
        assert_eq!(passages[2].heading, "Cache › Sizes");
        assert_eq!(passages[2].end_line, 17);
    }

    #[test]
    fn restructured_text_titles_head_passages_and_its_literal_blocks_are_code() {
        // Requests' quickstart, shortened: read as Markdown, line for line (`research::rst`).
        let text = ".. _quickstart:\n\nQuickstart\n==========\n\nEager to get started? This page gives a good introduction.\n\nMake a Request\n--------------\n\nBegin by importing the Requests module::\n\n    >>> import requests\n\nNow, we have a :class:`Response <requests.Response>` object called ``r``.\n";
        let passages = split("docs/user/quickstart.rst", text);
        let headings: Vec<&str> = passages.iter().map(|p| p.heading.as_str()).collect();
        assert_eq!(
            headings,
            ["Quickstart", "Quickstart › Make a Request"],
            "{passages:#?}"
        );
        assert_eq!(passages[0].start_line, 3);
        assert_eq!(passages[1].start_line, 8);
        assert_eq!(passages[1].end_line, 15);
        assert_eq!(
            passages[1].text,
            "## Make a Request\n\n\nBegin by importing the Requests module:\n```pycon\n>>> import requests\n```\nNow, we have a `Response` object called `r`."
        );
        // The same page as Markdown is read as written.
        assert_eq!(split("quickstart.md", text)[0].heading, "");
    }

    #[test]
    fn setext_headings_head_their_passages_as_hash_headings_do() {
        // direnv's man pages in Markdown: a title over "=", sections over "-".
        let text = "DIRENV.TOML 1 \"2019\" direnv \"User Manuals\"\n==========\n\nNAME\n----\n\ndirenv.toml - the direnv configuration file\n\nCONFIG\n------\n\nThe configuration is specified in sections.\n\n- a list item\n---\n\nA paragraph.\n";
        let passages = split("man/direnv.toml.1.md", text);
        let headings: Vec<&str> = passages.iter().map(|p| p.heading.as_str()).collect();
        assert_eq!(
            headings,
            [
                "DIRENV.TOML 1 \"2019\" direnv \"User Manuals\"",
                "DIRENV.TOML 1 \"2019\" direnv \"User Manuals\" › NAME",
                "DIRENV.TOML 1 \"2019\" direnv \"User Manuals\" › CONFIG",
            ],
            "{passages:#?}"
        );
        assert!(
            passages[1]
                .text
                .starts_with("NAME\n----\n\ndirenv.toml - the")
        );
        assert_eq!(passages[1].start_line, 4);
        // A list item over dashes is no heading: it stays in CONFIG's passage.
        assert!(
            passages[2]
                .text
                .contains("- a list item\n---\n\nA paragraph.")
        );
        // Docusaurus's admonitions and MDX's lines are no text.
        let page = "---\nid: npmrc\ntitle: \"Auth Settings\"\n---\n\nimport Tabs from '@theme/Tabs'\n\n## Files\n\n:::warning Removed in v11\n\nText.\n\n:::\n\n<CatalogMode />\n\n```js\nimport x from 'y'\n:::\n```\n";
        let passages = split("docs/npmrc.md", page);
        let files = passages
            .iter()
            .find(|p| p.heading == "Auth Settings › Files")
            .expect("the section under the page's title");
        assert_eq!(files.start_line, 8);
        let text: String = passages.iter().map(|p| p.text.as_str()).collect();
        assert!(
            text.contains("**Warning: Removed in v11**\n\nText."),
            "{text}"
        );
        assert!(
            !text.contains("<CatalogMode") && !text.contains("import Tabs"),
            "{text}"
        );
        assert!(text.contains("import x from 'y'\n:::\n```"), "{text}");
        // MyST's fences too; mkdocstrings' `::: module.Name` is left alone.
        let text = as_rendered(
            "a.md",
            ":::{warning}\nText.\n:::\n\n::: mkdocs.config.Config\n",
        )
        .expect("changed");
        assert_eq!(text, "\nText.\n\n\n::: mkdocs.config.Config\n");
        // MkDocs' admonitions and content tabs, Hugo's shortcodes.
        let page = "Text.\n\n!!! note\n    When not persisting config, there is no need to extend it.\n\n    ```toml\n    [x]\n    ```\n\n??? tip \"What is `uv.lock`?\"\n\tA lockfile.\n\n  !!! warning inline end \"Deprecated\"\n      Nested text.\n\nAfter.\n\nRun:\n\n=== \"pyproject.toml\"\n\n    ```toml\n    [tool.ruff]\n    ```\n\n=== \"ruff.toml\"\n\n    Plain.\n\n{{% note %}}\nIf you only want the runtime dependencies, use `--only main`.\n{{% /note %}}\n{{< tab \"macOS\" >}} {{< /tab >}}\nSee [it]({{< relref \"cli\" >}}).\n";
        let text = as_rendered("docs/a.md", page).expect("changed");
        assert!(keeps_lines(page, &text), "{text}");
        assert_eq!(
            text,
            "Text.\n\n\nWhen not persisting config, there is no need to extend it.\n\n```toml\n[x]\n```\n\n**Tip: What is `uv.lock`?**\nA lockfile.\n\n  **Warning: Deprecated**\n  Nested text.\n\nAfter.\n\nRun:\n\n\n\n```toml\n[tool.ruff]\n```\n\n\n\nPlain.\n\n\nIf you only want the runtime dependencies, use `--only main`.\n\n\nSee [it]({{< relref \"cli\" >}}).\n"
        );
        // Inside code they are code.
        assert_eq!(
            as_rendered("a.md", "```\n!!! note\n    x\n{{% note %}}\n```\n"),
            None
        );
        // Front matter is no setext heading: its title heads the page.
        assert!(
            split("x.md", "---\ntitle: front matter\n---\n\nText.\n")
                .iter()
                .all(|p| p.heading == "front matter" && !p.text.contains("title:"))
        );
    }

    #[test]
    fn code_passages_are_headed_by_their_definition() {
        let text = "use std::fmt;\n\n/// Retries with backoff.\npub fn retry(n: u32) -> u32 {\n    n * 2\n}\n\nstruct Cache {\n    size: usize,\n}\n";
        let passages = split("src/net.rs", text);
        assert!(
            passages
                .iter()
                .any(|p| p.heading == "pub fn retry(n: u32) -> u32"
                    && p.text.contains("/// Retries with backoff."))
        );
        assert!(
            passages
                .iter()
                .any(|p| p.heading.starts_with("struct Cache"))
        );
    }

    #[test]
    fn long_blocks_are_cut_into_windows_and_small_ones_grouped() {
        let long: String = (0..200)
            .map(|i| format!("line {i} of a long block\n"))
            .collect();
        let passages = split("notes.txt", &long);
        assert!(passages.len() >= 3);
        assert!(passages.iter().all(|p| p.text.len() <= TARGET_CHARS + 40));
        let small = "a\n\nb\n\nc\n";
        assert_eq!(split("x.md", small).len(), 1);
    }

    #[test]
    fn a_passage_does_not_end_on_a_lead_in_to_the_next() {
        // chezmoi's user guide: the lead-in ended one passage and its example opened the next.
        let intro = "To include a subdirectory from another repository you cannot use git submodules because chezmoi uses its own format for the source state. ".repeat(4);
        let example: String = (0..30)
            .map(|i| format!("[\".plugin{i}\"]\n    refreshPeriod = \"168h\"\n"))
            .collect();
        let text = format!(
            "## Include a subdirectory from a URL\n\n{intro}\n\nFor example, put the following in `.chezmoiexternal.toml`:\n\n```toml\n{example}```\n\nTo apply the changes, run chezmoi apply.\n"
        );
        let passages = split("include.md", &text);
        assert!(passages.len() >= 2, "{passages:?}");
        let lead = passages
            .iter()
            .find(|p| p.text.contains("put the following in"))
            .expect("the lead-in is in a passage");
        assert!(lead.text.contains("```toml\n[\".plugin0\"]"), "{lead:?}");
        assert!(
            lead.text.starts_with("For example"),
            "the lead-in opens the passage with its code: {lead:?}"
        );
        assert!(
            passages.iter().all(|p| !p.text.trim_end().ends_with(':')),
            "{passages:?}"
        );
        // Every non-blank line is in exactly one passage, in order.
        let mut next = 1;
        let mut covered = Vec::new();
        for p in &passages {
            assert!(p.start_line >= next, "{passages:?}");
            covered.extend(p.start_line..=p.end_line);
            next = p.end_line + 1;
        }
        for (i, line) in text.lines().enumerate() {
            assert!(
                line.trim().is_empty() || covered.contains(&(i as u32 + 1)),
                "line {} lost: {passages:?}",
                i + 1
            );
        }
        // In code, a line ending with a colon is no lead-in: it stays where it is.
        let body = "    total = total + value * 2  # add the doubled value\n".repeat(18);
        let code = format!(
            "def f(values):\n    total = 0\n\n{body}    if total:\n\n{body}    return total\n"
        );
        let cut = split("f.py", &code);
        assert!(
            cut.iter().any(|p| p.text.trim_end().ends_with("if total:")),
            "{cut:?}"
        );
    }

    #[test]
    fn terms_drop_stop_words_and_repeats() {
        assert_eq!(
            terms("How does the cache evict entries, and how does the cache grow?"),
            vec!["cache", "evict", "entries", "grow"]
        );
    }

    #[test]
    fn stems_meet() {
        assert_eq!(stem("retried"), stem("retry"));
        assert_eq!(stem("retries"), stem("retry"));
        assert_eq!(stem("entries"), stem("entry"));
        assert_eq!(stem("evicted"), stem("evicts"));
        assert_eq!(stem("evicting"), stem("evict"));
        assert_eq!(stem("stopped"), stem("stop"));
        assert_eq!(stem("uses"), stem("use"));
    }

    #[test]
    fn navigation_is_told_from_content() {
        for nav in [
            "* [Does ripgrep support configuration files?](#config)\n* [How do I search hidden files?](#hidden)\n* [Why is it fast?](#fast)",
            "## Installation\n\n### On Ubuntu",
            "Contents:\n\n1. [Usage](usage.md)\n2. [Configuration](config.md)\n3. [FAQ](faq.md)",
            "<a href=\"#syntax\">Key Features</a> •\n<a href=\"#usage\">How To Use</a> •",
            "```{toctree}\n:maxdepth: 2\n\nquickstart\noptions\n```",
            "```{contents}\n:depth: 2\n:local: true\n```",
            "[guide]: https://example.com/guide\n[faq]: https://example.com/faq",
        ] {
            assert!(is_navigation(nav), "{nav}");
        }
        for content in [
            "The default port is 3000.",
            "- `-H`, `--hidden`: search hidden files\n- `--no-ignore`: do not respect ignore files",
            "See the [configuration guide](config.md) for the file format; flags given on the command line override it.",
            "```bash\nbat --list-themes\n```",
            "## Paging\n\nBy default, `bat` pipes its own output to a pager.",
        ] {
            assert!(!is_navigation(content), "{content}");
        }
    }

    #[test]
    fn multi_part_questions_are_split_at_question_words() {
        assert_eq!(
            question_parts(
                "how does the cache evict entries, how does the store use its write-ahead log, and how are requests retried"
            ),
            vec![
                "how does the cache evict entries",
                "how does the store use its write-ahead log",
                "how are requests retried"
            ]
        );
        assert_eq!(
            question_parts(
                "what does the cache do when it is full and what does the store keep for crash recovery"
            ),
            vec![
                "what does the cache do when it is full",
                "what does the store keep for crash recovery"
            ]
        );
        assert_eq!(
            question_parts("Why is X slow? Is Y faster?"),
            vec!["Why is X slow", "Is Y faster"]
        );
        assert_eq!(
            question_parts("how do the cache and the store interact"),
            vec!["how do the cache and the store interact"]
        );
    }

    /// Inline code is never cut: just's question 2 (2026-12-01) was split at the `;` of
    /// `if [ -n "$CI" ]; then … fi`. A lone backtick opens nothing.
    #[test]
    fn a_question_is_not_split_inside_inline_code() {
        let parts = question_parts(
            "It has `cd infra` on one line and `terraform apply` on the next, but terraform runs in the repo root. I also pasted an indented `if [ -n \"$CI\" ]; then … fi` block, and just refuses with 'Recipe line has extra leading whitespace'. If I make the whole recipe a `#!/usr/bin/env bash` script, what should I put in it so it still stops at the first failing command?",
        );
        assert!(
            parts.iter().all(|p| p.matches('`').count() % 2 == 0),
            "{parts:?}"
        );
        assert!(
            parts
                .iter()
                .any(|p| p.contains("`if [ -n \"$CI\" ]; then … fi` block")),
            "{parts:?}"
        );
        assert_eq!(
            question_parts("Why does `x?` fail to compile? How do I return early?"),
            vec!["Why does `x?` fail to compile", "How do I return early"]
        );
        assert_eq!(
            question_parts("why does the ` key do nothing? how do I remap it?"),
            vec!["why does the ` key do nothing", "how do I remap it"]
        );
    }

    /// A question mark inside a quotation or an aside that the sentence goes on after is the
    /// quotation's, not the end of a part: Textual's question 2 (2026-12-04) was cut at a
    /// dialog's quoted title. A quotation that ends its sentence still ends it.
    #[test]
    fn a_quoted_question_mark_does_not_end_a_part() {
        // (question, its parts)
        let cases: [(&str, &[&str]); 7] = [
            (
                "Pressing `d` should pop up a small \"Delete this note?\" box with Yes and No buttons; right now it hides the list. How do I make it a proper dialog? And how does it hand the answer back?",
                &[
                    "Pressing `d` should pop up a small \"Delete this note?\" box with Yes and No buttons; right now it hides the list. How do I make it a proper dialog",
                    "how does it hand the answer back",
                ],
            ),
            // Curly quotes and an aside alike: one part, the question whole.
            (
                "The prompt \u{201c}Overwrite?\u{201d} shows twice (is that a bug?) when I run it. How do I turn it off?",
                &[
                    "The prompt \u{201c}Overwrite?\u{201d} shows twice (is that a bug?) when I run it. How do I turn it off?",
                ],
            ),
            // A new sentence after the quotation: the part ends with its closing mark. A
            // closing mark no opening one went before is no quotation's: the `?` ends the part.
            (
                "Should the flag be \"--force?\" Then how do I reset it?",
                &["Should the flag be \"--force\"", "Then how do I reset it"],
            ),
            (
                "Is it slow?) or fast? Why does it hang?",
                &["Is it slow", ") or fast", "Why does it hang"],
            ),
            // Straight single quotes: a quotation opens at a word's start, and an apostrophe
            // between letters opens nothing (mise's question 2, 2026-12-06, left "' before it
            // actually does that." a part of its own).
            (
                "Third, we have a `db:reset` task that wipes the local database; I'd like it to stop and ask 'are you sure?' before it actually does that. Can mise do that?",
                &[
                    "Third, we have a `db:reset` task that wipes the local database; I'd like it to stop and ask 'are you sure?' before it actually does that. Can mise do that?",
                ],
            ),
            (
                "Why won't it start? And what's 'safe mode'? Who's asking?",
                &["Why won't it start", "what's 'safe mode'", "Who's asking"],
            ),
            (
                "Where do the users' files go? How do I restore them?",
                &["Where do the users' files go", "How do I restore them"],
            ),
        ];
        for (question, parts) in cases {
            assert_eq!(question_parts(question), parts, "{question}");
        }
    }

    /// Two of Poetry's questions (2026-11-29): the statement a question opens with, and a
    /// condition after `, and`, were parts of their own, and the part left over ("how do I avoid
    /// that", "which value wins") was searched without what it is about.
    #[test]
    fn a_statement_and_a_condition_stay_with_the_question_they_belong_to() {
        assert_eq!(
            question_parts(
                "my Docker image reinstalls all third-party dependencies whenever a source file changes, how do I avoid that, and how do I install only the runtime dependencies?"
            ),
            vec![
                "my Docker image reinstalls all third-party dependencies whenever a source file changes, how do I avoid that",
                "how do I install only the runtime dependencies"
            ]
        );
        assert_eq!(
            question_parts(
                "how do I set a Poetry setting just for one project instead of globally, and if the same setting is also given as an environment variable, which value wins?"
            ),
            vec![
                "how do I set a Poetry setting just for one project instead of globally",
                "if the same setting is also given as an environment variable, which value wins"
            ]
        );
        // A question word after a preposition opens a question too.
        assert_eq!(
            question_parts(
                "in what order does Config look for a setting, how do I keep a secret out of tracebacks"
            ),
            vec![
                "in what order does Config look for a setting",
                "how do I keep a secret out of tracebacks"
            ]
        );
    }

    /// Questions over just's manual and Uvicorn's docs (2026-12-01): a statement before a
    /// semicolon was a part of its own, and the question after it ("what's the just
    /// equivalent", "is there an implementation that avoids the deprecated API") was asked
    /// without what it is about.
    #[test]
    fn a_statement_before_a_semicolon_or_on_a_line_of_its_own_is_the_context_of_its_question() {
        assert_eq!(
            question_parts(
                "In make we needed `.PHONY: docs test` \u{2014} do I need anything like that in a justfile? And our CI runs `make release VERSION=2.1.0` to override a variable; what's the just equivalent?"
            ),
            vec![
                "In make we needed `.PHONY: docs test` \u{2014} do I need anything like that in a justfile",
                "our CI runs `make release VERSION=2.1.0` to override a variable; what's the just equivalent"
            ]
        );
        // A statement on a line of its own is the context of the question below it.
        assert_eq!(
            question_parts(
                "Which file does bat read its configuration from?\nMy config sets a theme\nwhy is the theme ignored?"
            ),
            vec![
                "Which file does bat read its configuration from",
                "My config sets a theme; why is the theme ignored"
            ]
        );
        // A semicolon or a new line between two questions splits them.
        assert_eq!(
            question_parts("how are API keys rotated; how are they stored"),
            vec!["how are API keys rotated", "how are they stored"]
        );
        assert_eq!(
            question_parts("how do I add a theme?\nwhich file format must it use?"),
            vec!["how do I add a theme", "which file format must it use"]
        );
    }

    /// Requests stated as sentences and turned to with "Second," "Separately," "And" or "On
    /// another": over mypy's, Uvicorn's and chezmoi's docs (2026-12-05) the statement was asked
    /// together with the question after it and only that one was answered. A story told with
    /// "And" or "Last week" stays the context of its question.
    #[test]
    fn a_sentence_that_turns_to_another_matter_opens_a_part() {
        assert_eq!(
            question_parts(
                "First, `error: Library stubs not installed for \"yaml\"` \u{2014} what's the proper fix? Second, we use an untyped SDK, `acmepay`; each import gives `Skipping analyzing`. We just want those errors gone for that one library. Third, a colleague's global mypy can't find `httpx`, although it is installed. Why?"
            ),
            vec![
                "First, `error: Library stubs not installed for \"yaml\"` \u{2014} what's the proper fix",
                "Second, we use an untyped SDK, `acmepay`; each import gives `Skipping analyzing`. We just want those errors gone for that one library.",
                "Third, a colleague's global mypy can't find `httpx`, although it is installed. Why",
            ]
        );
        // A statement that a part was asked before is the story of the question after it.
        assert_eq!(
            question_parts(
                "How do I pin the version? Our builds must be reproducible. Also, how do I update one package?"
            ),
            vec![
                "How do I pin the version",
                "Our builds must be reproducible. Also, how do I update one package",
            ]
        );
        // Unless it says what the asker wants: that is another request.
        assert_eq!(
            question_parts(
                "Can old prompts shrink to an arrow? While I'm at it, I'd like the info on the right side of `starship.toml`'s line. And one more thing: my clock never shows up. What am I missing?"
            ),
            vec![
                "Can old prompts shrink to an arrow",
                "While I'm at it, I'd like the info on the right side of `starship.toml`'s line.",
                "one more thing: my clock never shows up. What am I missing",
            ]
        );
        assert_eq!(
            question_parts(
                "How do I pin the version? We'd also like the build to be reproducible. Also, how do I update one package?"
            ),
            vec![
                "How do I pin the version",
                "We'd also like the build to be reproducible.",
                "how do I update one package",
            ]
        );
        // Said before anything was asked, a want is the story's goal.
        assert_eq!(
            question_parts(
                "I want to remove the aneurysm as the tutorial does. And the scripts are in my path. Do you know how to run this script?"
            ),
            vec![
                "I want to remove the aneurysm as the tutorial does. And the scripts are in my path. Do you know how to run this script?"
            ]
        );
        // With nothing asked before it, it is the matter the opener turns from: merged into
        // the question after it, the question would be one part.
        assert_eq!(
            question_parts(
                "Our importer silently drops unknown columns and I'd rather it failed loudly. Separately, our settings get changed by accident. Can the cache be made read-only?"
            ),
            vec![
                "Our importer silently drops unknown columns and I'd rather it failed loudly.",
                "Separately, our settings get changed by accident. Can the cache be made read-only",
            ]
        );
        // "And" cuts; what it opens is a part when it asks, and a part
        // "Separately" opens is one though it asks nothing.
        assert_eq!(
            question_parts(
                "Separately, inside WSL even .py edits don't trigger a reload. And I'd rather start the server with `uvicorn.run(app, reload=True)` \u{2014} why doesn't that work?"
            ),
            vec![
                "Separately, inside WSL even .py edits don't trigger a reload.",
                "I'd rather start the server with `uvicorn.run(app, reload=True)` \u{2014} why doesn't that work",
            ]
        );
        // A story: one question.
        for story in [
            "I ran `just deploy`. And it failed with `exit 1`. How do I see what went wrong?",
            "Last week I upgraded the tool. Now the config is ignored. Why?",
            "I ran the tests. Next thing I knew, the cache was full. How do I clear it?",
        ] {
            assert_eq!(question_parts(story).len(), 1, "{story}");
        }
        // "X is generated …" after "Also," states; "is" asks only in first place.
        assert_eq!(
            question_parts(
                "Also, `etl/schema_pb2.py` is generated by protoc on every build; I can make the generator prepend a header line. What header line makes mypy stop reporting errors in that file?"
            )
            .len(),
            1
        );
        assert_eq!(
            question_parts("which flags exist; also, is there a config file?").len(),
            2
        );
        // Inside code a sentence is not cut: `echo done. And more` is what the user typed.
        assert_eq!(
            question_parts("why does `echo done. And more` print twice?").len(),
            1
        );
    }

    /// Questions as users write them, over uv's and MkDocs' docs (2026-11-30, written by a
    /// reader who never saw this splitter): a statement before a dash, a condition or a phrase
    /// opening a sentence, an aside in parentheses, "and in what order".
    #[test]
    fn a_statement_before_a_dash_a_condition_and_an_aside_stay_with_their_question() {
        assert_eq!(
            question_parts(
                "I'm writing a Dockerfile \u{2014} how do I make uv sync skip installing my own project, how do I get the project installed as a normal package, and how do I make the build fail when uv.lock is out of date?"
            ),
            vec![
                "I'm writing a Dockerfile \u{2014} how do I make uv sync skip installing my own project",
                "how do I get the project installed as a normal package",
                "how do I make the build fail when uv.lock is out of date"
            ]
        );
        assert_eq!(
            question_parts(
                "How do I pin my project to Python 3.12, and how do I stop uv from downloading Python? And by default, does uv prefer a Python it installed itself?"
            ),
            vec![
                "How do I pin my project to Python 3.12",
                "how do I stop uv from downloading Python",
                "by default, does uv prefer a Python it installed itself"
            ]
        );
        assert_eq!(
            question_parts(
                "What title does a page get in the menu? And if a folder has both README.md and index.md, which one becomes the index page?"
            ),
            vec![
                "What title does a page get in the menu",
                "if a folder has both README.md and index.md, which one becomes the index page"
            ]
        );
        assert_eq!(
            question_parts(
                "I'm writing a plugin\u{2014}how do I register it, how should it report a failure, and in what order do several plugins' handlers run?"
            ),
            vec![
                "I'm writing a plugin \u{2014} how do I register it",
                "how should it report a failure",
                "in what order do several plugins' handlers run"
            ]
        );
        assert_eq!(
            question_parts(
                "why does uv install the internal package from that index (and can I change that), and why does the index never receive the credentials? Also, what should I run at the end of a CI job?"
            ),
            vec![
                "why does uv install the internal package from that index (and can I change that)",
                "why does the index never receive the credentials",
                "what should I run at the end of a CI job"
            ]
        );
        // Questions that split before stay as they were: a word before the question word, a
        // colon or "--" inside a part, a relative clause after a comma, an unclosed "(".
        for (question, n) in [
            ("So what is a lockfile, how do I update it", 2),
            ("but how do I pin a version, what does uv lock do", 2),
            (
                "what does this error mean: No solution found, how do I fix it",
                2,
            ),
            (
                "what does uv run -- python do, how is it different from uv run python",
                2,
            ),
            (
                "how do I test on Python 3.8\u{2013}3.12, what does tox do",
                2,
            ),
            (
                "how do I update the lockfile, in which every dependency is pinned",
                1,
            ),
            ("which flag should I pass, to do a dry run", 1),
            (
                "uv lock fails :( how do I fix it, and what does the error mean",
                2,
            ),
            (
                "how do I set the cache dir, and if it is set in the environment, which value wins, what does uv cache prune do",
                3,
            ),
            (
                "When I override the libs block to add a library, how do I keep the ones it loads",
                1,
            ),
        ] {
            assert_eq!(
                question_parts(question).len(),
                n,
                "{question}: {:?}",
                question_parts(question)
            );
        }
        assert_eq!(
            question_parts(
                "How does caching work\u{2014}and where is the cache stored, and how do I clean it"
            )[0],
            "How does caching work"
        );
        // A contraction's negation leaves no word to search for; "LL" alone is a word.
        assert_eq!(terms("it isn't installed"), vec!["installed"]);
        assert_eq!(
            terms("the project's LL(1) parser won"),
            vec!["project", "ll", "1", "parser", "won"]
        );
    }
}
