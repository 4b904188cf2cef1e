//! Org pages read as the Markdown the rest of research understands, line for line.
//!
//! Emacs packages (Magit, Org itself, many a dotfile guide) write their documentation in Org,
//! and research read it as Markdown: a headline (`* Installation`, `** From MELPA`) was a list
//! item, so no passage had a heading; a source block between `#+BEGIN_SRC emacs-lisp` and
//! `#+END_SRC` was prose, its code quoted as sentences; a link (`[[https://…][the manual]]`),
//! `=verbatim=` and `~code~` were printed as written. [`as_markdown`] rewrites a page into the
//! Markdown those readers handle: headlines into `#` headings (one level down under a
//! `#+TITLE:`, which heads the page), their tags dropped; source and example blocks into fenced
//! code; description list items (`- term :: text`) into `- term: text`; links into their text,
//! `=x=` and `~x~` into inline code, `*x*` into bold; table rules into Markdown's; keywords,
//! comments, comment blocks and property drawers into blank lines.
//!
//! **Line for line**, as [`crate::research::rst`]: the result has the page's lines in the same
//! places (a fence takes the block's `#+BEGIN_`/`#+END_` line; a block left open at the end of
//! the page gets its closing fence after its last line).
//!
//! Pure: no I/O. Hostile input (an unclosed block or drawer, stars alone) is read as text or as
//! a block to the end of the page; nothing panics and no line is lost.

use std::sync::OnceLock;

use regex::{Captures, Regex};

use crate::edit::text::{fence_for, joined_like};
use crate::research::citations::regex;

/// Whether the page at `path` is Org, by its extension.
pub fn is_org(path: &str) -> bool {
    crate::research::passages::extension(path).as_deref() == Some("org")
}

/// `text` (an Org page) as Markdown with the same lines (module docs).
pub fn as_markdown(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = vec![String::new(); lines.len()];
    static KEYWORD: OnceLock<Regex> = OnceLock::new();
    static BEGIN: OnceLock<Regex> = OnceLock::new();
    static HEADLINE: OnceLock<Regex> = OnceLock::new();
    static DRAWER: OnceLock<Regex> = OnceLock::new();
    static DESCRIPTION: OnceLock<Regex> = OnceLock::new();
    let keyword = regex(&KEYWORD, r"^\s*#\+([A-Za-z_]+):\s*(.*)$");
    let begin = regex(&BEGIN, r"^\s*#\+(?i:begin_)([A-Za-z]+)\s*(\S*)");
    let headline = regex(&HEADLINE, r"^(\*+)\s+(.*?)(?:\s+:[\w@#%:]+:)?\s*$");
    let drawer = regex(&DRAWER, r"^\s*:[A-Za-z_-]+:\s*$");
    let description = regex(&DESCRIPTION, r"^(\s*)[-+]\s+(.+?)\s+::(?:\s+(.*))?$");
    let titled = lines.iter().any(|l| {
        keyword
            .captures(l)
            .is_some_and(|c| c[1].eq_ignore_ascii_case("title") && !c[2].trim().is_empty())
    });
    // Description items whose text is on the lines under them (Magit's "- Key: s
    // (magit-stage) ::" over "  Add the change at point to the staging area."): their
    // indentation, terms and last line; the text opens with them.
    let mut terms: Option<(String, Vec<String>, usize)> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(c) = begin.captures(line) {
            let kind = c[1].to_ascii_lowercase();
            let end = format!("#+end_{kind}");
            let close = (i + 1..lines.len()).find(|&k| lines[k].trim().eq_ignore_ascii_case(&end));
            let last = close.map_or(lines.len() - 1, |k| k - 1);
            match kind.as_str() {
                "src" | "example" | "verse" | "export" => {
                    let lang = if kind == "src" {
                        c[2].to_owned()
                    } else {
                        String::new()
                    };
                    let body = if last > i {
                        &lines[i + 1..=last]
                    } else {
                        &[][..]
                    };
                    let fence = fence_for(body.iter().copied());
                    out[i] = format!("{fence}{lang}");
                    // Org escapes a line that would read as markup with a comma: `,* text`.
                    for (k, l) in lines.iter().enumerate().take(last + 1).skip(i + 1) {
                        let t = l.trim_start();
                        out[k] = match t.strip_prefix(',') {
                            Some(rest) if rest.starts_with(['*', '#']) => {
                                format!("{}{rest}", &l[..l.len() - t.len()])
                            }
                            _ => (*l).to_owned(),
                        };
                    }
                    match close {
                        Some(k) => out[k] = fence,
                        None => {
                            let at = last.max(i);
                            out[at].push('\n');
                            out[at].push_str(&fence);
                        }
                    }
                    i = close.map_or(lines.len(), |k| k + 1);
                }
                "comment" => i = close.map_or(lines.len(), |k| k + 1),
                // A quote, a center or a special block: its content is prose.
                _ => i += 1,
            }
            continue;
        }
        let t = line.trim();
        if t.to_ascii_lowercase().starts_with("#+end_") {
            i += 1;
            continue;
        }
        if let Some(c) = keyword.captures(line) {
            if c[1].eq_ignore_ascii_case("title") && !c[2].trim().is_empty() {
                out[i] = format!("# {}", inline(c[2].trim()));
            }
            i += 1;
            continue;
        }
        // A comment line.
        if t == "#" || t.starts_with("# ") {
            i += 1;
            continue;
        }
        // A drawer: a property or log drawer is nothing a reader sees, another one's content
        // is exported (Magit's `:PREAMBLE:`), its delimiters are not.
        if drawer.is_match(line) && !t.eq_ignore_ascii_case(":end:") {
            let close = (i + 1..lines.len().min(i + 200))
                .find(|&k| lines[k].trim().eq_ignore_ascii_case(":end:"));
            if let Some(k) = close {
                let hidden =
                    [":properties:", ":logbook:"].contains(&t.to_ascii_lowercase().as_str());
                i = if hidden { k + 1 } else { i + 1 };
                continue;
            }
        }
        if t.eq_ignore_ascii_case(":end:") {
            i += 1;
            continue;
        }
        if let Some(c) = headline.captures(line) {
            let level = c[1].len() + usize::from(titled);
            let title = inline(c[2].trim());
            if !title.is_empty() {
                out[i] = format!("{} {title}", "#".repeat(level.min(6)));
                i += 1;
                continue;
            }
        }
        if let Some(c) = description.captures(line) {
            let text = c.get(3).map_or("", |m| m.as_str().trim());
            let (indent, mut all) = match terms.take() {
                // Items stacked one under the other share the text under the last.
                Some((indent, all, at)) if at + 1 == i && indent == c[1] => {
                    out[at].clear();
                    (indent, all)
                }
                _ => (c[1].to_owned(), Vec::new()),
            };
            all.push(inline(c[2].trim()));
            if text.is_empty() {
                // Written here as a lead-in, unless text comes under it.
                out[i] = format!("{indent}- {}:", all.join(", "));
                terms = Some((indent, all, i));
            } else {
                out[i] = format!("{indent}- {}: {}", all.join(", "), inline(text));
            }
            i += 1;
            continue;
        }
        if let Some((indent, all, at)) = terms.take() {
            let deeper = line.len() - line.trim_start().len() > indent.len();
            if t.is_empty() {
                terms = Some((indent, all, at));
            } else if deeper {
                out[at].clear();
                out[i] = format!("{indent}- {}: {}", all.join(", "), inline(t));
                i += 1;
                continue;
            }
        }
        // A table's rule: `|---+---|` as Markdown's.
        if t.starts_with("|-") && t.chars().all(|x| matches!(x, '|' | '-' | '+' | ':')) {
            let cols = t.trim_matches('|').split('+').count();
            out[i] = format!("|{}", "---|".repeat(cols));
            i += 1;
            continue;
        }
        // `+ item` is a list item as `- item` is.
        let text = match t.strip_prefix("+ ") {
            Some(rest) => format!("{}- {rest}", &line[..line.len() - line.trim_start().len()]),
            None => line.to_owned(),
        };
        out[i] = inline(&text);
        i += 1;
    }
    joined_like(&out, text)
}

/// Org's inline markup as the page shows it: links as their text, `=x=` and `~x~` as code,
/// `*x*` as bold, footnote references dropped.
fn inline(line: &str) -> String {
    static LINK: OnceLock<Regex> = OnceLock::new();
    static CODE: OnceLock<Regex> = OnceLock::new();
    static BOLD: OnceLock<Regex> = OnceLock::new();
    static FOOTNOTE: OnceLock<Regex> = OnceLock::new();
    let text =
        regex(&LINK, r"\[\[([^\[\]]+)\](?:\[([^\[\]]+)\])?\]").replace_all(line, |c: &Captures| {
            c.get(2).map_or_else(
                || c[1].trim_start_matches("file:").to_owned(),
                |m| m.as_str().to_owned(),
            )
        });
    let text = regex(
        &CODE,
        r#"(^|[\s(\[{"'])[=~]([^\s=~](?:[^=~\n]*?[^\s=~])?)[=~]($|[\s.,;:!?)\]}"'-])"#,
    )
    .replace_all(&text, "$1`$2`$3");
    let text = regex(
        &BOLD,
        r#"(^|[\s(\[{"'])\*([^\s*](?:[^*\n]*?[^\s*])?)\*($|[\s.,;:!?)\]}"'-])"#,
    )
    .replace_all(&text, "$1**$2**$3");
    let text = regex(&FOOTNOTE, r"\[fn:[\w-]*\]").replace_all(&text, "");
    text.into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(text: &str) -> Vec<String> {
        let out = as_markdown(text);
        assert_eq!(out.split('\n').count(), text.split('\n').count(), "{out}");
        out.split('\n').map(str::to_owned).collect()
    }

    #[test]
    fn headlines_become_headings_under_the_title() {
        let page = "#+TITLE: Magit User Manual\n#+AUTHOR: Jonas\n\n* Installation :install:\n  :PROPERTIES:\n  :CUSTOM_ID: install\n  :END:\n\nText.\n\n** From MELPA\n";
        let out = lines_of(page);
        assert_eq!(out[0], "# Magit User Manual");
        assert_eq!(out[1], "");
        assert_eq!(out[3], "## Installation");
        assert!(out[4..=6].iter().all(String::is_empty), "{out:?}");
        assert_eq!(out[8], "Text.");
        assert_eq!(out[10], "### From MELPA");
        let passages = crate::research::passages::split("docs/magit.org", page);
        assert!(
            passages
                .iter()
                .any(|p| p.heading == "Magit User Manual › Installation")
        );
    }

    #[test]
    fn a_drawer_s_delimiters_are_blank_and_only_properties_and_logs_hide_their_content() {
        let out = lines_of(
            ":PREAMBLE:\nMagit is an interface to Git.\n:END:\n* Intro\n:LOGBOOK:\nCLOCK: x\n:END:\n",
        );
        assert_eq!(out[..3], ["", "Magit is an interface to Git.", ""]);
        assert_eq!(out[3], "# Intro");
        assert!(out[4..=6].iter().all(String::is_empty), "{out:?}");
    }

    #[test]
    fn source_blocks_are_fenced_and_their_lines_kept() {
        let page = "Put this in your init file:\n\n#+BEGIN_SRC emacs-lisp\n  (use-package magit)\n  ,* not a headline\n#+END_SRC\n\n#+begin_example\n$ make\n#+end_example\n#+BEGIN_COMMENT\nhidden\n#+END_COMMENT\n# a comment\n";
        let out = lines_of(page);
        assert_eq!(out[2], "```emacs-lisp");
        assert_eq!(out[3], "  (use-package magit)");
        assert_eq!(out[4], "  * not a headline");
        assert_eq!(out[5], "```");
        assert_eq!(out[7], "```");
        assert_eq!(out[9], "```");
        assert!(out[10..=13].iter().all(String::is_empty), "{out:?}");
    }

    #[test]
    fn lists_links_markup_and_tables_read_as_markdown() {
        let page = "- =magit-status= :: Show the status of the repository.\n+ See [[https://magit.vc/manual][the manual]] and [[file:faq.org]].\nPress ~C-x g~ to open *status*.[fn:1]\n| Key | Command |\n|-----+---------|\n| g | refresh |\n";
        let out = lines_of(page);
        assert_eq!(
            out[0],
            "- `magit-status`: Show the status of the repository."
        );
        assert_eq!(out[1], "- See the manual and faq.org.");
        assert_eq!(out[2], "Press `C-x g` to open **status**.");
        assert_eq!(out[4], "|---|---|");
        // Terms over their text: the text opens with them.
        let stacked = lines_of(
            "- Key: C-c f b (magit-blame-addition) ::\n- Key: C-c f B b ::\n\n  Annotate each line with the commit that added it.\n  More.\n\n- Key: q ::\n* Next\n",
        );
        assert_eq!(stacked[0], "");
        assert_eq!(stacked[1], "");
        assert_eq!(
            stacked[3],
            "- Key: C-c f b (magit-blame-addition), Key: C-c f B b: Annotate each line with the commit that added it."
        );
        assert_eq!(stacked[4], "  More.");
        assert_eq!(stacked[6], "- Key: q:");
    }

    #[test]
    fn hostile_pages_keep_their_lines_and_never_panic() {
        for page in [
            "",
            "*",
            "* ",
            "#+BEGIN_SRC",
            "#+BEGIN_SRC\n",
            "#+begin_src python\nx = 1",
            ":PROPERTIES:\n",
            "#+TITLE:\n* a",
            "[[\n]]",
            "|-",
            "- :: x",
            "é =ü= *ß*",
        ] {
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
                proptest::string::string_regex("[-*+=~:#|\\[\\] \ta-zé,]{0,12}").expect("pattern"),
                proptest::sample::select(vec![
                    "#+BEGIN_SRC sh".to_owned(), "#+END_SRC".to_owned(), "#+begin_comment".to_owned(),
                    ":PROPERTIES:".to_owned(), ":END:".to_owned(), ":NOTES:".to_owned(),
                    "* Headline".to_owned(), "- term ::".to_owned(), "  text".to_owned(),
                    "".to_owned(), "#+TITLE: T".to_owned(), "|-+-|".to_owned(),
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
