//! The part of a file a model is shown: the whole file when it is small, otherwise its header,
//! an outline of every top-level item and method, the complete target item(s) and as many
//! neighbours as the token budget allows — every omitted span marked with its line range and
//! the `read_file` call that shows it.
//!
//! Why: models lose context in large files, and a prompt cut at an arbitrary byte (the old
//! design's 3,000 characters) hides the code the model must edit. Items are never cut in the
//! middle; the one exception is a single target item larger than the whole budget, which is
//! shown as a window around the target and labelled as partial. Line numbers are 1-based in
//! `cat -n` style. Pure: never does I/O, never panics; languages without a grammar get
//! line-based windows.

use std::collections::BTreeSet;
use std::ops::Range;

use crate::syntax::lines::{LineIndex, line_text, numbered};
use crate::syntax::size::{SizeThresholds, size_tag};
use crate::syntax::symbols::{Scope, Symbol, SymbolKind, find_all, symbols_with_index};
use crate::syntax::tree::SyntaxTree;
use crate::tokens::{Encoding, count_tokens};

/// What the region is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Nothing in particular: header, outline and the start of the file.
    None,
    /// A cursor: 1-based line and optional 1-based character column.
    Position { line: usize, column: Option<usize> },
    /// A selection of 1-based lines, both inclusive.
    Lines { start: usize, end: usize },
    /// A selection as byte offsets (what the language server has after converting positions).
    Bytes(Range<usize>),
    /// A symbol name, plain or qualified (`Type::method`, `Class.method`).
    Symbol(String),
    /// Free text (a task description), matched against the file's identifiers.
    Query(String),
}

/// How a region is built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionOptions {
    /// Tokens the whole output may use.
    pub budget: usize,
    /// Files up to this many bytes are shown whole (when they fit the budget).
    pub whole_file_bytes: usize,
    /// The tokenizer the budget is counted in.
    pub encoding: Encoding,
    /// Thresholds of the `[LARGE]` / `[MASSIVE]` tag in the first line.
    pub size: SizeThresholds,
    /// The file header (imports, module docs) is shown up to this many lines.
    pub max_header_lines: usize,
    /// The outline uses at most this share of the budget, in percent.
    pub outline_share: usize,
}

impl Default for RegionOptions {
    fn default() -> Self {
        RegionOptions {
            budget: 4000,
            whole_file_bytes: 8 * 1024,
            encoding: Encoding::default(),
            size: SizeThresholds::default(),
            max_header_lines: 40,
            outline_share: 30,
        }
    }
}

/// What the model is shown, and what went into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// Exactly the text a model is shown.
    pub text: String,
    /// Tokens of `text` in the options' encoding.
    pub tokens: usize,
    pub budget: usize,
    /// The file is shown whole.
    pub whole_file: bool,
    /// Items shown completely, targets first (`Parser::parse (lines 40-98)`).
    pub items: Vec<String>,
    /// The items the target resolved to.
    pub targets: Vec<String>,
    /// Omitted spans as 1-based inclusive line ranges.
    pub omitted: Vec<(usize, usize)>,
    /// Things the caller should know (a symbol not found, a target larger than the budget).
    pub notes: Vec<String>,
}

impl Region {
    /// One line: tokens used / budget, items included, spans omitted.
    pub fn summary(&self) -> String {
        let items = if self.items.is_empty() {
            "no items".to_string()
        } else {
            let shown: Vec<&str> = self.items.iter().take(6).map(String::as_str).collect();
            let more = self.items.len().saturating_sub(shown.len());
            let more = if more > 0 {
                format!(", +{more} more")
            } else {
                String::new()
            };
            format!(
                "{} item{} included ({}{more})",
                self.items.len(),
                plural(self.items.len()),
                shown.join(", ")
            )
        };
        let view = if self.whole_file {
            "whole file"
        } else {
            "partial view"
        };
        format!(
            "{} / {} tokens, {view}, {items}, {} span{} omitted",
            self.tokens,
            self.budget,
            self.omitted.len(),
            plural(self.omitted.len())
        )
    }
}

/// The region of `text` (parsed as `tree`, named `path` in the output) for `target`.
pub fn extract_region(
    text: &str,
    tree: &SyntaxTree,
    path: &str,
    target: &Target,
    options: &RegionOptions,
) -> Region {
    let outline = Outline::new(text, tree);
    extract_region_in(&outline, text, tree, path, target, options)
}

/// What region extraction needs from one version of a document besides its text: the line
/// index and the outline symbols. Computing it walks the tree (milliseconds on a 20k-line
/// file), so a server keeps it with the parse of the version and reuses it for every request.
#[derive(Debug, Clone)]
pub struct Outline {
    index: LineIndex,
    symbols: Vec<Symbol>,
    /// Per symbol: some other symbol has it as parent.
    has_members: Vec<bool>,
}

impl Outline {
    pub fn new(text: &str, tree: &SyntaxTree) -> Outline {
        let index = LineIndex::new(text);
        let symbols = symbols_with_index(text, tree, Scope::Outline, &index);
        let mut has_members = vec![false; symbols.len()];
        for s in &symbols {
            if let Some(p) = s.parent {
                has_members[p] = true;
            }
        }
        Outline {
            index,
            symbols,
            has_members,
        }
    }

    /// The outline symbols (top-level items and the members of containers).
    pub fn symbols(&self) -> &[Symbol] {
        &self.symbols
    }
}

/// [`extract_region`] with the outline of this version of the text already computed. The
/// outline must come from the same `text` and `tree`.
pub fn extract_region_in(
    outline: &Outline,
    text: &str,
    tree: &SyntaxTree,
    path: &str,
    target: &Target,
    options: &RegionOptions,
) -> Region {
    let builder = Builder {
        text,
        tree,
        path,
        options,
        index: &outline.index,
        outline: &outline.symbols,
        has_members: &outline.has_members,
    };
    builder.build(target)
}

/// One contiguous run of lines that is shown, with why.
#[derive(Debug, Clone)]
struct Unit {
    /// 0-based inclusive lines.
    first: usize,
    last: usize,
    label: Option<String>,
    /// The outline symbol this unit is, if any.
    symbol: Option<usize>,
}

/// What a partial region shows so far, built up step by step in [`Builder::partial`].
struct Pick {
    /// Per 0-based line: shown.
    shown: Vec<bool>,
    /// Estimated tokens of everything chosen (see [`estimate`]).
    used: usize,
    /// Items named in the summary, in the order they were added.
    items: Vec<String>,
    notes: Vec<String>,
    /// Lines that may go one by one if the exact count is over budget: windows (farthest from
    /// their centre first), then the header (from its end).
    trimmable: Vec<usize>,
}

/// What [`Builder::fit`] needs besides the [`Pick`]: what it renders, what it may take away
/// again (neighbours, outline entries, header lines) and what rebuilds a smaller outline.
struct Fit {
    title: String,
    outline: String,
    outline_budget: usize,
    /// Lines the outline keeps entries nearest to.
    focus: Vec<usize>,
    targets: Vec<Unit>,
    target_labels: Vec<String>,
    /// Each neighbour's label and the lines showing it added.
    neighbours: Vec<(String, Vec<usize>)>,
    header_lines: Vec<usize>,
}

struct Builder<'a> {
    text: &'a str,
    tree: &'a SyntaxTree,
    path: &'a str,
    options: &'a RegionOptions,
    index: &'a LineIndex,
    outline: &'a [Symbol],
    has_members: &'a [bool],
}

impl<'a> Builder<'a> {
    fn tokens(&self, text: &str) -> usize {
        count_tokens(text, self.options.encoding)
    }

    fn line_count(&self) -> usize {
        if self.text.is_empty() {
            0
        } else {
            self.index.line_count()
        }
    }

    fn title(&self, whole: bool) -> String {
        let lines = self.line_count();
        let tag = size_tag(lines, &self.options.size)
            .map(|t| format!(" {t}"))
            .unwrap_or_default();
        let what = if whole {
            "whole file".to_string()
        } else {
            "partial view: header, outline, target and neighbours; `⋮` lines mark omitted spans"
                .to_string()
        };
        format!(
            "{} ({} line{}, {}){tag} — {what}. Line numbers are 1-based.\n",
            self.path,
            lines,
            plural(lines),
            self.tree.language()
        )
    }

    fn build(self, target: &Target) -> Region {
        let options = self.options;
        if self.text.len() <= options.whole_file_bytes {
            let (_, targets, notes) = self.resolve(target);
            let mut text = self.title(true);
            push_notes(&mut text, &notes);
            if self.line_count() > 0 {
                text.push_str(&crate::syntax::lines::number_all(self.text));
            }
            let tokens = self.tokens(&text);
            if tokens <= options.budget {
                return Region {
                    text,
                    tokens,
                    budget: options.budget,
                    whole_file: true,
                    items: vec![format!("whole file (lines 1-{})", self.line_count())],
                    targets: targets
                        .iter()
                        .map(|u| u.label.clone().unwrap_or_default())
                        .collect(),
                    omitted: Vec::new(),
                    notes,
                };
            }
        }
        self.partial(target)
    }

    /// Target units (0-based lines) and notes for the caller.
    fn resolve(&self, target: &Target) -> (Option<Range<usize>>, Vec<Unit>, Vec<String>) {
        let mut notes = Vec::new();
        let bytes = match target {
            Target::None => None,
            Target::Position { line, column } => Some(self.position(*line, *column)),
            Target::Lines { start, end } => {
                let first = start.saturating_sub(1);
                let last = end.saturating_sub(1).max(first);
                if first >= self.index.line_count() {
                    notes.push(format!(
                        "line {start} is past the end of the file ({} lines)",
                        self.line_count()
                    ));
                }
                let range = self.index.lines_range(first, last);
                Some(range.start..range.end.saturating_sub(1).max(range.start))
            }
            Target::Bytes(range) => {
                let start = range.start.min(self.text.len());
                Some(start..range.end.clamp(start, self.text.len()))
            }
            Target::Symbol(name) => {
                // The outline is at hand; items nested in function bodies need a full walk.
                let mut found: Vec<Symbol> =
                    find_all(self.outline, name).into_iter().cloned().collect();
                let all = if found.is_empty() {
                    symbols_with_index(self.text, self.tree, Scope::All, self.index)
                } else {
                    Vec::new()
                };
                if found.is_empty() {
                    found = find_all(&all, name).into_iter().cloned().collect();
                }
                if found.is_empty() {
                    let message = match crate::syntax::symbols::find_symbol(&all, name) {
                        Err(err) => err.to_string(),
                        Ok(_) => format!("no symbol named `{name}`"),
                    };
                    let message = if self.tree.root().is_none() {
                        format!(
                            "no symbol named `{name}`: {} files have no grammar",
                            self.tree.language()
                        )
                    } else {
                        message
                    };
                    notes.push(message);
                }
                let units = found.iter().take(5).map(|s| self.unit_for(s)).collect();
                return (None, units, notes);
            }
            Target::Query(query) => {
                let units = self.query_targets(query);
                if units.is_empty() {
                    notes.push(format!(
                        "no identifier in the file matches the query {query:?}"
                    ));
                }
                return (None, units, notes);
            }
        };
        let Some(bytes) = bytes else {
            return (None, Vec::new(), notes);
        };
        (Some(bytes.clone()), self.units_for_bytes(&bytes), notes)
    }

    fn position(&self, line: usize, column: Option<usize>) -> Range<usize> {
        let line0 = line.saturating_sub(1).min(self.index.line_count() - 1);
        let range = self.index.line_range(line0);
        let content = line_text(self.text, self.index, line0);
        let offset = match column {
            Some(col) => {
                let skip = col.saturating_sub(1);
                range.start
                    + content
                        .char_indices()
                        .nth(skip)
                        .map_or(content.len(), |(i, _)| i)
            }
            // Without a column, the first non-blank character of the line.
            None => range.start + (content.len() - content.trim_start().len()),
        };
        offset..offset
    }

    /// The innermost outline item containing `bytes`, or the items it overlaps, or the lines
    /// themselves with a little context.
    fn units_for_bytes(&self, bytes: &Range<usize>) -> Vec<Unit> {
        let containing = self
            .outline
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                s.full_range.start <= bytes.start
                    && bytes.end <= s.full_range.end.max(s.full_range.start + 1)
            })
            .max_by_key(|(_, s)| (s.depth, s.full_range.start));
        if let Some((index, _)) = containing {
            return vec![self.symbol_unit(index)];
        }
        let overlapping: Vec<Unit> = self
            .outline
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                s.depth == 0 && s.full_range.start < bytes.end && bytes.start < s.full_range.end
            })
            .map(|(index, _)| self.symbol_unit(index))
            .collect();
        if !overlapping.is_empty() {
            return overlapping;
        }
        let (first, last) = self.index.lines_of(bytes);
        vec![Unit {
            first: first.saturating_sub(3),
            last: (last + 3).min(self.index.line_count() - 1),
            label: Some(format!("lines {}-{}", first + 1, last + 1)),
            symbol: None,
        }]
    }

    /// The unit of outline symbol `index`.
    fn symbol_unit(&self, index: usize) -> Unit {
        let mut unit = self.unit_for(&self.outline[index]);
        unit.symbol = Some(index);
        unit
    }

    /// The unit of any symbol (nested ones are not in the outline).
    fn unit_for(&self, symbol: &Symbol) -> Unit {
        let index = self
            .outline
            .iter()
            .position(|s| s.full_range == symbol.full_range && s.kind == symbol.kind);
        Unit {
            first: symbol.lines.0 - 1,
            last: symbol.lines.1 - 1,
            label: Some(format!(
                "{} (lines {}-{})",
                symbol.display_name(),
                symbol.lines.0,
                symbol.lines.1
            )),
            symbol: index,
        }
    }

    /// The best-matching items for free text: names that appear in the query first, then
    /// items whose code mentions the query's words.
    fn query_targets(&self, query: &str) -> Vec<Unit> {
        let words = query_words(query);
        if words.is_empty() || self.outline.is_empty() {
            return Vec::new();
        }
        let identifiers: BTreeSet<String> = query
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| w.len() >= 2)
            .map(str::to_lowercase)
            .collect();
        let leaves: Vec<(usize, &Symbol)> = self
            .outline
            .iter()
            .enumerate()
            .filter(|&(i, s)| !s.nested && !self.has_members[i])
            .collect();
        // ASCII lower case keeps byte offsets, so symbol ranges slice it.
        let lower = self.text.to_ascii_lowercase();
        let mut scored: Vec<(usize, usize, &Symbol)> = leaves
            .iter()
            .map(|&(index, s)| {
                let mut score = 0;
                if identifiers.contains(&s.name.to_lowercase()) {
                    score += 6;
                }
                let parts = split_identifier(&s.name);
                score += 3 * parts.iter().filter(|p| matches_word(&words, p)).count();
                if let Some(parent) = s.parent.and_then(|p| self.outline.get(p)) {
                    let parent_parts = split_identifier(&parent.name);
                    score += 3 * parent_parts
                        .iter()
                        .filter(|p| matches_word(&words, p))
                        .count()
                        .min(1);
                }
                if let Some(body) = lower.get(s.full_range.clone()) {
                    score += words
                        .iter()
                        .filter(|w| body.contains(w.as_str()))
                        .count()
                        .min(4);
                }
                (score, index, s)
            })
            .filter(|&(score, _, _)| score >= 2)
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.2.range.start.cmp(&b.2.range.start)));
        let best = scored.first().map_or(0, |&(score, _, _)| score);
        scored
            .into_iter()
            .filter(|&(score, _, _)| score * 2 >= best)
            .take(3)
            .map(|(_, index, _)| self.symbol_unit(index))
            .collect()
    }

    fn header_unit(&self) -> Option<Unit> {
        if self.line_count() == 0 {
            return None;
        }
        let end = match self.outline.first() {
            Some(first) => first.lines.0 - 1, // exclusive, 0-based
            None => self.options.max_header_lines.min(self.index.line_count()),
        };
        let mut last = end.min(self.options.max_header_lines);
        while last > 0 && line_text(self.text, self.index, last - 1).trim().is_empty() {
            last -= 1;
        }
        (last > 0).then(|| Unit {
            first: 0,
            last: last - 1,
            label: None,
            symbol: None,
        })
    }

    /// Cost estimate of one numbered line (see [`estimate`]).
    fn line_cost(&self, line: usize) -> usize {
        estimate(line_text(self.text, self.index, line)) + 4
    }

    /// Outline lines (and the items left out of them), about `budget` tokens at most, items
    /// nearest to the targets kept first.
    fn outline_text(&self, focus: &[usize], targets: &[Unit], budget: usize) -> String {
        let visible: Vec<(usize, &Symbol)> = self
            .outline
            .iter()
            .enumerate()
            .filter(|(_, s)| s.kind != SymbolKind::Field && !s.nested)
            .collect();
        if visible.is_empty() || budget == 0 {
            return String::new();
        }
        let target_symbols: BTreeSet<usize> = targets.iter().filter_map(|t| t.symbol).collect();
        let head = "Outline (line range, signature):\n";
        // Estimated without formatting: only the entries kept are formatted.
        let entry_cost = |s: &Symbol| (s.signature.len() + 2 * s.depth + 28) * 2 / 7 + 1;
        let full_cost: usize =
            estimate(head) + visible.iter().map(|(_, s)| entry_cost(s)).sum::<usize>();
        if full_cost <= budget {
            let kept = vec![true; visible.len()];
            return render_outline(head, &visible, &kept, &target_symbols);
        }
        // Too long: targets, their containers and their siblings first; then top-level items
        // before members; nearest first. Every kept entry may open a gap marker.
        const GAP: usize = 12;
        let mut close: BTreeSet<usize> = BTreeSet::new();
        for &t in &target_symbols {
            let mut current = Some(t);
            while let Some(i) = current {
                close.insert(i);
                current = self.outline[i].parent;
            }
        }
        let distance = |s: &Symbol| -> usize {
            let (a, b) = (s.lines.0 - 1, s.lines.1 - 1);
            focus
                .iter()
                .map(|&f| if f < a { a - f } else { f.saturating_sub(b) })
                .min()
                .unwrap_or(a)
        };
        let mut order: Vec<usize> = (0..visible.len()).collect();
        order.sort_by_cached_key(|&i| {
            let (index, s) = visible[i];
            let near = close.contains(&index) || s.parent.is_some_and(|p| close.contains(&p));
            (!near, s.depth.min(1), distance(s), i)
        });
        let mut kept = vec![false; visible.len()];
        let mut used = estimate(head) + GAP;
        for i in order {
            let cost = entry_cost(visible[i].1) + GAP;
            if used + cost > budget {
                continue;
            }
            used += cost;
            kept[i] = true;
        }
        render_outline(head, &visible, &kept, &target_symbols)
    }

    /// Estimated cost of showing lines `first..=last` that are not shown yet, plus a marker.
    fn cost_of(&self, first: usize, last: usize, shown: &[bool]) -> usize {
        let last = last.min(shown.len().saturating_sub(1));
        (first..=last)
            .filter(|&l| !shown[l])
            .map(|l| self.line_cost(l))
            .sum::<usize>()
            + MARKER
    }

    /// A file larger than the budget: the header, the targets (whole, or a window around the
    /// cursor), neighbours nearest first and an outline, chosen with estimates and then fitted
    /// to the exact count.
    fn partial(self, target: &Target) -> Region {
        let (anchor, targets, notes) = self.resolve(target);
        let title = self.title(false);
        let used = estimate(&title) + notes.iter().map(|n| estimate(n) + 2).sum::<usize>() + 8;
        let mut pick = Pick {
            shown: vec![false; self.index.line_count()],
            used,
            items: Vec::new(),
            notes,
            trimmable: Vec::new(),
        };
        let header_lines = self.pick_header(&mut pick);
        let focus: Vec<usize> = if targets.is_empty() {
            vec![0]
        } else {
            targets.iter().map(|u| u.first).collect()
        };
        let outline_budget = self.outline_budget(&pick, &targets);
        let outline = self.outline_text(&focus, &targets, outline_budget);
        pick.used += estimate(&outline);
        let center = anchor.as_ref().map(|a| self.index.line_of(a.start));
        let target_labels = self.pick_targets(&mut pick, &targets, center);
        let neighbours = self.pick_neighbours(&mut pick, &targets);
        if self.outline.is_empty() {
            self.pick_lines_around(&mut pick, center.unwrap_or(0), targets.is_empty());
        }
        let fit = Fit {
            title,
            outline,
            outline_budget,
            focus,
            targets,
            target_labels,
            neighbours,
            header_lines,
        };
        self.fit(pick, fit)
    }

    /// Shows `first..=last` (the lines not shown yet), counting their cost; returns them.
    fn reveal(&self, pick: &mut Pick, first: usize, last: usize) -> Vec<usize> {
        let total = pick.shown.len();
        pick.used += self.cost_of(first, last, &pick.shown);
        let mut new = Vec::new();
        for (line, flag) in pick
            .shown
            .iter_mut()
            .enumerate()
            .take(last.min(total - 1) + 1)
            .skip(first)
        {
            if !*flag {
                *flag = true;
                new.push(line);
            }
        }
        new
    }

    /// The header (imports, module docs): at most a quarter of the budget. Returns its lines.
    fn pick_header(&self, pick: &mut Pick) -> Vec<usize> {
        let budget = self.options.budget;
        let mut header_lines = Vec::new();
        let Some(header) = self.header_unit() else {
            return header_lines;
        };
        let mut cost = 0;
        for (line, flag) in pick
            .shown
            .iter_mut()
            .enumerate()
            .take(header.last + 1)
            .skip(header.first)
        {
            let c = self.line_cost(line);
            if cost + c > budget / 4 {
                break;
            }
            cost += c;
            *flag = true;
            header_lines.push(line);
        }
        pick.used += cost;
        header_lines
    }

    /// The outline gives way to the targets: it gets its share of the budget, or what the
    /// title, header and targets leave, but never less than a tenth.
    fn outline_budget(&self, pick: &Pick, targets: &[Unit]) -> usize {
        let budget = self.options.budget;
        let target_cost: usize = targets
            .iter()
            .map(|u| self.cost_of(u.first, u.last, &pick.shown))
            .sum();
        let left = budget.saturating_sub(pick.used + target_cost + 32);
        (budget * self.options.outline_share / 100)
            .min(left)
            .max(budget / 10)
    }

    /// Targets, whole, with the first lines of their containers; a target larger than what is
    /// left becomes a window around `center`, labelled partial. Returns the targets' labels.
    fn pick_targets(
        &self,
        pick: &mut Pick,
        targets: &[Unit],
        center: Option<usize>,
    ) -> Vec<String> {
        let budget = self.options.budget;
        let mut target_labels = Vec::new();
        for unit in targets {
            let label = unit.label.clone().unwrap_or_default();
            target_labels.push(label.clone());
            let containers = self.containers_of(unit);
            let container_cost: usize = containers
                .iter()
                .map(|&c| self.cost_of(c, c, &pick.shown))
                .sum();
            if pick.used + container_cost + self.cost_of(unit.first, unit.last, &pick.shown)
                <= budget
            {
                for c in containers {
                    self.reveal(pick, c, c);
                }
                self.reveal(pick, unit.first, unit.last);
                pick.items.push(label);
                continue;
            }
            // Larger than what is left: a window around the target, labelled partial.
            let center = center
                .filter(|&c| c >= unit.first && c <= unit.last)
                .unwrap_or(unit.first);
            match self.window(center, unit, pick.used, budget, &pick.shown) {
                Some((first, last)) => {
                    let mut new = self.reveal(pick, first, last);
                    new.sort_by_key(|&l| std::cmp::Reverse(l.abs_diff(center)));
                    pick.trimmable.extend(new);
                    pick.notes.push(format!(
                        "{label} does not fit the budget of {budget} tokens; showing lines {}-{} of it",
                        first + 1,
                        last + 1
                    ));
                    pick.items.push(format!("part of {label}"));
                }
                None => pick.notes.push(format!(
                    "{label} does not fit the budget of {budget} tokens"
                )),
            }
        }
        target_labels
    }

    /// Neighbours, nearest first (siblings of a target before the rest), while the budget
    /// lasts; each shown whole or not at all. Returns each with the lines it added.
    fn pick_neighbours(&self, pick: &mut Pick, targets: &[Unit]) -> Vec<(String, Vec<usize>)> {
        let budget = self.options.budget;
        let total = pick.shown.len();
        let focus_lines: Vec<usize> = if targets.is_empty() {
            vec![0]
        } else {
            targets.iter().flat_map(|u| [u.first, u.last]).collect()
        };
        let target_parents: Vec<Option<usize>> = targets
            .iter()
            .map(|u| u.symbol.and_then(|s| self.outline[s].parent))
            .collect();
        let mut candidates: Vec<(usize, usize, usize)> = self
            .outline
            .iter()
            .enumerate()
            .filter(|&(i, s)| !s.nested && s.kind != SymbolKind::Field && !self.has_members[i])
            .map(|(i, s)| {
                let (a, b) = (s.lines.0 - 1, s.lines.1 - 1);
                let distance = focus_lines
                    .iter()
                    .map(|&f| if f < a { a - f } else { f.saturating_sub(b) })
                    .min()
                    .unwrap_or(a);
                let sibling = usize::from(!target_parents.contains(&s.parent));
                (sibling, distance, i)
            })
            .collect();
        candidates.sort_unstable();
        let mut neighbours: Vec<(String, Vec<usize>)> = Vec::new();
        let mut misses = 0;
        for (_, _, index) in candidates {
            let symbol = &self.outline[index];
            let unit = self.symbol_unit(index);
            if (unit.first..=unit.last.min(total - 1)).all(|l| pick.shown[l]) {
                continue;
            }
            let containers = self.containers_of(&unit);
            let cost: usize = containers
                .iter()
                .map(|&c| self.cost_of(c, c, &pick.shown))
                .sum::<usize>()
                + self.cost_of(unit.first, unit.last, &pick.shown);
            if pick.used + cost > budget {
                misses += 1;
                if misses >= 8 {
                    break;
                }
                continue;
            }
            misses = 0;
            let mut new = Vec::new();
            for c in containers {
                new.extend(self.reveal(pick, c, c));
            }
            new.extend(self.reveal(pick, unit.first, unit.last));
            let label = format!(
                "{} (lines {}-{})",
                symbol.display_name(),
                symbol.lines.0,
                symbol.lines.1
            );
            pick.items.push(label.clone());
            neighbours.push((label, new));
        }
        neighbours
    }

    /// Languages without items (text, or no outline): lines around the focus.
    fn pick_lines_around(&self, pick: &mut Pick, center: usize, no_targets: bool) {
        let whole = Unit {
            first: 0,
            last: pick.shown.len() - 1,
            label: None,
            symbol: None,
        };
        let budget = self.options.budget;
        if let Some((first, last)) = self.window(center, &whole, pick.used, budget, &pick.shown) {
            let mut new = self.reveal(pick, first, last);
            new.sort_by_key(|&l| std::cmp::Reverse(l.abs_diff(center)));
            pick.trimmable.extend(new);
            if no_targets {
                pick.items.push(format!("lines {}-{}", first + 1, last + 1));
            }
        }
    }

    /// The choice was made with estimates; the text is counted exactly. When the estimate was
    /// short, whole neighbours go (last added first), then outline entries, then window and
    /// header lines.
    fn fit(&self, mut pick: Pick, fit: Fit) -> Region {
        let budget = self.options.budget;
        let Fit {
            title,
            mut outline,
            mut outline_budget,
            focus,
            targets,
            target_labels,
            mut neighbours,
            mut header_lines,
        } = fit;
        header_lines.reverse();
        pick.trimmable.extend(header_lines);
        pick.trimmable.reverse(); // popped from the end: farthest window lines first
        loop {
            let (text, omitted) = self.render(&title, &pick.notes, &outline, &pick.shown);
            let tokens = self.tokens(&text);
            if tokens <= budget {
                return self.region(text, tokens, pick.items, target_labels, omitted, pick.notes);
            }
            let over = tokens - budget;
            if let Some((label, lines)) = neighbours.pop() {
                for line in lines {
                    pick.shown[line] = false;
                }
                pick.items.retain(|i| *i != label);
            } else if !outline.is_empty() {
                outline_budget /= 2;
                outline = if outline_budget < 16 {
                    String::new()
                } else {
                    self.outline_text(&focus, &targets, outline_budget)
                };
            } else if !pick.trimmable.is_empty() {
                let mut freed = 0;
                while freed < over + MARKER {
                    let Some(line) = pick.trimmable.pop() else {
                        break;
                    };
                    pick.shown[line] = false;
                    freed += self.line_cost(line);
                }
            } else {
                pick.notes.push(format!(
                    "the targets alone take {tokens} tokens, over the budget of {budget}"
                ));
                let (text, omitted) = self.render(&title, &pick.notes, &outline, &pick.shown);
                let tokens = self.tokens(&text);
                return self.region(text, tokens, pick.items, target_labels, omitted, pick.notes);
            }
        }
    }

    fn region(
        &self,
        text: String,
        tokens: usize,
        items: Vec<String>,
        targets: Vec<String>,
        omitted: Vec<(usize, usize)>,
        notes: Vec<String>,
    ) -> Region {
        Region {
            text,
            tokens,
            budget: self.options.budget,
            whole_file: false,
            items,
            targets,
            omitted,
            notes,
        }
    }

    /// The 0-based lines of the containers (impl, class, module) around `unit`: the lines
    /// their declarations start on, which tell the model where the unit lives.
    fn containers_of(&self, unit: &Unit) -> Vec<usize> {
        match unit.symbol {
            Some(index) => {
                let mut out = Vec::new();
                let mut current = self.outline[index].parent;
                while let Some(p) = current {
                    out.push(self.index.line_of(self.outline[p].range.start));
                    current = self.outline[p].parent;
                }
                out.reverse();
                out
            }
            None => self
                .outline
                .iter()
                .filter(|s| s.container && s.lines.0 <= unit.first && unit.last < s.lines.1)
                .map(|s| self.index.line_of(s.range.start))
                .collect(),
        }
    }

    /// The widest window of lines of `unit` around `center` that fits what is left of the
    /// budget.
    fn window(
        &self,
        center: usize,
        unit: &Unit,
        used: usize,
        budget: usize,
        shown: &[bool],
    ) -> Option<(usize, usize)> {
        let mut left = budget.saturating_sub(used + MARKER * 2);
        let cost = |l: usize| if shown[l] { 0 } else { self.line_cost(l) };
        let c = cost(center);
        if c > left {
            return None;
        }
        left -= c;
        let (mut first, mut last) = (center, center);
        loop {
            let mut grew = false;
            if last < unit.last {
                let c = cost(last + 1);
                if c <= left {
                    left -= c;
                    last += 1;
                    grew = true;
                }
            }
            if first > unit.first {
                let c = cost(first - 1);
                if c <= left {
                    left -= c;
                    first -= 1;
                    grew = true;
                }
            }
            if !grew {
                break;
            }
        }
        Some((first, last))
    }

    /// The final text and the omitted spans (1-based). Gaps of one or two blank lines are
    /// not worth a marker and are shown as they are.
    fn render(
        &self,
        title: &str,
        notes: &[String],
        outline: &str,
        shown: &[bool],
    ) -> (String, Vec<(usize, usize)>) {
        let total = shown.len();
        let mut out = String::with_capacity(title.len() + outline.len() + 4096);
        out.push_str(title);
        push_notes(&mut out, notes);
        if !outline.is_empty() {
            out.push('\n');
            out.push_str(outline);
        }
        out.push_str("\nCode:\n");
        let mut omitted = Vec::new();
        let mut line = 0;
        while line < total {
            if shown[line] {
                out.push_str(&numbered(line + 1, line_text(self.text, self.index, line)));
                out.push('\n');
                line += 1;
                continue;
            }
            let start = line;
            while line < total && !shown[line] {
                line += 1;
            }
            let blank =
                (start..line).all(|l| line_text(self.text, self.index, l).trim().is_empty());
            if line - start <= 2 && start > 0 && line < total && blank {
                for l in start..line {
                    out.push_str(&numbered(l + 1, line_text(self.text, self.index, l)));
                    out.push('\n');
                }
                continue;
            }
            let (first, last) = (start + 1, line);
            omitted.push((first, last));
            out.push_str(&format!(
                "     ⋮\t[lines {first}-{last} omitted: read_file with offset={first} limit={} shows them]\n",
                last - first + 1
            ));
        }
        (out, omitted)
    }
}

/// Cost of an omission marker line, about.
const MARKER: usize = 24;

/// A cheap upper-side estimate of the tokens in `text` (about 3.5 bytes per token, where code
/// measures 4 with cl100k and o200k), used while choosing lines; the chosen text is then
/// counted exactly.
fn estimate(text: &str) -> usize {
    text.len() * 2 / 7 + 1
}

/// The outline with the entries not `kept` folded into `⋮ N more items in lines A-B` lines.
fn render_outline(
    head: &str,
    visible: &[(usize, &Symbol)],
    kept: &[bool],
    targets: &BTreeSet<usize>,
) -> String {
    use std::fmt::Write as _;
    let mut out = String::from(head);
    let mut skipped: Option<(usize, usize, usize)> = None; // count, first line, last line
    let flush = |out: &mut String, skipped: &mut Option<(usize, usize, usize)>| {
        if let Some((count, first, last)) = skipped.take() {
            let _ = writeln!(
                out,
                "     ⋮ {count} more item{} in lines {first}-{last}",
                plural(count)
            );
        }
    };
    for (i, &(index, s)) in visible.iter().enumerate() {
        if kept[i] {
            flush(&mut out, &mut skipped);
            let _ = write!(out, "{:>6}-{:<6} ", s.lines.0, s.lines.1);
            for _ in 0..s.depth {
                out.push_str("  ");
            }
            out.push_str(&s.signature);
            if targets.contains(&index) {
                out.push_str("   ← target");
            }
            out.push('\n');
        } else {
            let entry = skipped.get_or_insert((0, s.lines.0, s.lines.1));
            entry.0 += 1;
            entry.2 = entry.2.max(s.lines.1);
        }
    }
    flush(&mut out, &mut skipped);
    out
}

fn push_notes(out: &mut String, notes: &[String]) {
    for note in notes {
        out.push_str("Note: ");
        out.push_str(note);
        out.push('\n');
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Whether identifier part `part` matches a query word: equal, or one a prefix of the other
/// when both have four letters or more (`post` / `posting`).
fn matches_word(words: &BTreeSet<String>, part: &str) -> bool {
    words.contains(part)
        || (part.len() >= 4
            && words
                .iter()
                .any(|w| w.len() >= 4 && (w.starts_with(part) || part.starts_with(w.as_str()))))
}

/// Lower-case words of a query worth matching: identifiers split at `_` and case changes,
/// without stop words and words shorter than three letters.
fn query_words(query: &str) -> BTreeSet<String> {
    const STOP: &[&str] = &[
        "the", "and", "for", "with", "that", "this", "from", "into", "when", "then", "than",
        "should", "would", "could", "make", "add", "fix", "use", "all", "any", "not", "are", "but",
        "its", "it's", "was", "has", "have", "can", "new", "get", "set", "self", "file", "code",
        "function", "method", "class", "please", "also", "there", "which", "where", "what", "does",
        "each", "instead", "need", "needs", "change", "update",
    ];
    query
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .flat_map(split_identifier)
        .filter(|w| w.len() >= 3 && !STOP.contains(&w.as_str()))
        .collect()
}

/// `parseHTTPHeader_v2` → `parse`, `http`, `header`, `v2` (lower case).
fn split_identifier(name: &str) -> Vec<String> {
    let mut parts = Vec::new();
    for chunk in name.split(|c: char| !c.is_alphanumeric()) {
        let chars: Vec<char> = chunk.chars().collect();
        let mut current = String::new();
        for (i, &c) in chars.iter().enumerate() {
            let boundary = i > 0
                && c.is_uppercase()
                && (chars[i - 1].is_lowercase()
                    || chars.get(i + 1).is_some_and(|n| n.is_lowercase())
                        && chars[i - 1].is_uppercase());
            if boundary && !current.is_empty() {
                parts.push(std::mem::take(&mut current).to_lowercase());
            }
            current.push(c);
        }
        if !current.is_empty() {
            parts.push(current.to_lowercase());
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_identifiers() {
        assert_eq!(
            split_identifier("parseHTTPHeader_v2"),
            ["parse", "http", "header", "v2"]
        );
        assert_eq!(split_identifier("Foo::bar"), ["foo", "bar"]);
        assert!(query_words("Fix the parse_header function").contains("header"));
        assert!(!query_words("Fix the parse_header function").contains("the"));
    }
}
