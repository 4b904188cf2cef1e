//! Recent suggestions keyed by the text before the cursor, so typing into a shown suggestion
//! narrows it with no new request.

use std::collections::VecDeque;

/// Suggestions kept, at most.
pub const ENTRIES: usize = 32;
/// Bytes of the text before the cursor a key holds (its end; with the total length they tell
/// positions apart).
const KEY_BYTES: usize = 512;

#[derive(Debug, Clone)]
struct Entry {
    path: String,
    /// The length of the text before the cursor when the suggestion was made.
    before_len: usize,
    /// Its last bytes.
    key: String,
    /// The rest of the cursor's line then (typing does not change it).
    rest_of_line: String,
    text: String,
}

/// The suggestions, newest last.
#[derive(Debug, Default)]
pub struct SuggestionCache {
    entries: VecDeque<Entry>,
}

impl SuggestionCache {
    /// Keeps `text` as the suggestion for a cursor after `before` in `path`.
    pub fn insert(&mut self, path: &str, before: &str, rest_of_line: &str, text: &str) {
        let start = super::context::floor_boundary(before, before.len().saturating_sub(KEY_BYTES));
        self.entries.push_back(Entry {
            path: path.to_owned(),
            before_len: before.len(),
            key: before[start..].to_owned(),
            rest_of_line: rest_of_line.to_owned(),
            text: text.to_owned(),
        });
        while self.entries.len() > ENTRIES {
            self.entries.pop_front();
        }
    }

    /// The rest of a suggestion the user has typed the start of (or none of): what is left of
    /// it after the text typed since, when that text is how it began. Never an empty rest.
    pub fn lookup(&self, path: &str, before: &str, rest_of_line: &str) -> Option<String> {
        self.entries.iter().rev().find_map(|entry| {
            if entry.path != path
                || entry.rest_of_line != rest_of_line
                || before.len() < entry.before_len
            {
                return None;
            }
            let key_start = entry.before_len - entry.key.len();
            if before.get(key_start..entry.before_len)? != entry.key {
                return None;
            }
            let typed = before.get(entry.before_len..)?;
            let rest = entry.text.strip_prefix(typed)?;
            (!rest.trim().is_empty()).then(|| rest.to_owned())
        })
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typing_into_a_suggestion_narrows_it() {
        let mut cache = SuggestionCache::default();
        cache.insert("a.py", "def f(x):\n    return ", "", "x * 2 + 1");
        assert_eq!(
            cache
                .lookup("a.py", "def f(x):\n    return ", "")
                .as_deref(),
            Some("x * 2 + 1")
        );
        assert_eq!(
            cache
                .lookup("a.py", "def f(x):\n    return x * ", "")
                .as_deref(),
            Some("2 + 1")
        );
        // Typed something else, typed it all, another file, the line's rest changed.
        assert_eq!(cache.lookup("a.py", "def f(x):\n    return y", ""), None);
        assert_eq!(
            cache.lookup("a.py", "def f(x):\n    return x * 2 + 1", ""),
            None
        );
        assert_eq!(cache.lookup("b.py", "def f(x):\n    return x", ""), None);
        assert_eq!(cache.lookup("a.py", "def f(x):\n    return x", ")"), None);
        // Deleted back past where it was made.
        assert_eq!(cache.lookup("a.py", "def f(x):\n    return", ""), None);
    }

    #[test]
    fn the_oldest_go_first() {
        let mut cache = SuggestionCache::default();
        for i in 0..=ENTRIES {
            cache.insert("a", &format!("{i}:"), "", "more");
        }
        assert_eq!(cache.lookup("a", "0:", ""), None);
        assert_eq!(cache.lookup("a", "1:", "").as_deref(), Some("more"));
    }
}
