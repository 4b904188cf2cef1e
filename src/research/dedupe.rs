//! One source per work: identifiers normalised (DOI, arXiv id, canonical URL, title + year) and
//! duplicates across providers merged — the arXiv abs page, the OpenAlex work and the Crossref
//! DOI of the same paper become one source that keeps the best of each field.
//!
//! Pure functions: no I/O, never panics on hostile identifiers.

use std::collections::HashMap;

use reqwest::Url;

use crate::store::SourceRecord;

/// `10.1038/nature12373` from `https://doi.org/10.1038/NATURE12373`, `doi:…`, `dx.doi.org/…`.
pub fn normalize_doi(text: &str) -> Option<String> {
    let mut t = text.trim().to_ascii_lowercase();
    for prefix in [
        "https://doi.org/",
        "http://doi.org/",
        "https://dx.doi.org/",
        "http://dx.doi.org/",
        "doi.org/",
        "doi:",
    ] {
        if let Some(rest) = t.strip_prefix(prefix) {
            t = rest.trim().to_owned();
        }
    }
    let ok = t.starts_with("10.") && t.contains('/') && !t.contains(char::is_whitespace);
    ok.then_some(t)
}

/// `2301.01234` from `http://arxiv.org/abs/2301.01234v2`, `arXiv:2301.01234v1`, the arXiv DOI
/// `10.48550/arXiv.2301.01234`, or old-style `hep-th/9901001v3`.
pub fn normalize_arxiv(text: &str) -> Option<String> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let mut id = lower.as_str();
    for marker in [
        "arxiv.org/abs/",
        "arxiv.org/pdf/",
        "10.48550/arxiv.",
        "arxiv:",
    ] {
        if let Some(pos) = id.find(marker) {
            id = &id[pos + marker.len()..];
        }
    }
    let id = id
        .trim_end_matches(".pdf")
        .trim_end_matches('/')
        .split(['?', '#'])
        .next()
        .unwrap_or("");
    let id = strip_version(id);
    let new_style = {
        let (a, b) = id.split_once('.').unwrap_or(("", ""));
        a.len() == 4
            && a.bytes().all(|c| c.is_ascii_digit())
            && (4..=5).contains(&b.len())
            && b.bytes().all(|c| c.is_ascii_digit())
    };
    let old_style = {
        let (a, b) = id.split_once('/').unwrap_or(("", ""));
        !a.is_empty()
            && a.bytes()
                .all(|c| c.is_ascii_lowercase() || c == b'-' || c == b'.')
            && b.len() == 7
            && b.bytes().all(|c| c.is_ascii_digit())
    };
    (new_style || old_style).then(|| id.to_owned())
}

fn strip_version(id: &str) -> &str {
    if let Some(pos) = id.rfind('v') {
        let digits = &id[pos + 1..];
        if pos > 0 && !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) {
            return &id[..pos];
        }
    }
    id
}

/// The URL with the host lower-cased and without `www.`, the fragment, tracking parameters
/// (`utm_*`, `fbclid`, `gclid`), a default port or a trailing slash. Only http(s).
pub fn canonical_url(text: &str) -> Option<String> {
    let mut url = Url::parse(text.trim()).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    let host = url.host_str()?.trim_end_matches('.').to_ascii_lowercase();
    let host = host.strip_prefix("www.").unwrap_or(&host).to_owned();
    url.set_host(Some(&host)).ok()?;
    url.set_fragment(None);
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| {
            let k = k.to_ascii_lowercase();
            !(k.starts_with("utm_") || k == "fbclid" || k == "gclid" || k == "mc_cid")
        })
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    if kept.is_empty() {
        url.set_query(None);
    } else {
        url.query_pairs_mut().clear().extend_pairs(kept);
    }
    let path = url.path().to_owned();
    if path.len() > 1 && path.ends_with('/') {
        url.set_path(path.trim_end_matches('/'));
    }
    let mut out = url.to_string();
    if url.path() == "/" && url.query().is_none() && out.ends_with('/') {
        out.pop();
    }
    Some(out)
}

/// The URL without its scheme: `http://` and `https://` copies are the same page.
fn url_identity(url: &str) -> &str {
    url.split_once("://").map(|(_, rest)| rest).unwrap_or(url)
}

/// Lower-case letters and digits, single spaces: `"The  Rust Book!"` → `the rust book`.
pub fn normalize_title(title: &str) -> String {
    title
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The year of a `YYYY…` date.
pub fn year_of(date: Option<&str>) -> Option<i32> {
    let d = date?;
    d.get(..4)?.parse().ok()
}

/// Fills the identifiers a record implies (a DOI that is an arXiv DOI, a URL that is a DOI or
/// arXiv page), canonicalises them, and sets the record's key.
pub fn normalize(record: &mut SourceRecord) {
    record.doi = record.doi.as_deref().and_then(normalize_doi);
    record.arxiv_id = record.arxiv_id.as_deref().and_then(normalize_arxiv);
    record.url = record.url.as_deref().and_then(canonical_url);
    if let Some(doi) = &record.doi
        && record.arxiv_id.is_none()
        && doi.starts_with("10.48550/arxiv.")
    {
        record.arxiv_id = normalize_arxiv(doi);
    }
    if let Some(url) = record.url.clone() {
        if record.doi.is_none() && url.contains("doi.org/") {
            record.doi = url.split("doi.org/").nth(1).and_then(normalize_doi);
        }
        if record.arxiv_id.is_none() && url.contains("arxiv.org/") {
            record.arxiv_id = normalize_arxiv(&url);
        }
    }
    record.title = record
        .title
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if !record.key.starts_with("file:") && !record.key.starts_with("research:") {
        record.key = key_of(record);
    }
    if !record.providers.contains(&record.provider) {
        record.providers.insert(0, record.provider.clone());
    }
}

fn key_of(r: &SourceRecord) -> String {
    if let Some(doi) = &r.doi {
        // An arXiv DOI names the preprint: key it by the arXiv id so it meets the abs page.
        if !doi.starts_with("10.48550/arxiv.") {
            return format!("doi:{doi}");
        }
    }
    if let Some(id) = &r.arxiv_id {
        return format!("arxiv:{id}");
    }
    if let Some(url) = &r.url {
        return format!("url:{}", url_identity(url));
    }
    let year = year_of(r.date.as_deref())
        .map(|y| y.to_string())
        .unwrap_or_default();
    format!("title:{}|{year}", normalize_title(&r.title))
}

/// Merges duplicates (same DOI, arXiv id, canonical URL, or normalised title and year), keeping
/// the order of first appearance. Records are normalised first.
pub fn dedupe(records: Vec<SourceRecord>) -> Vec<SourceRecord> {
    let mut records: Vec<SourceRecord> = records
        .into_iter()
        .map(|mut r| {
            normalize(&mut r);
            r
        })
        .collect();
    let mut parent: Vec<usize> = (0..records.len()).collect();
    fn find(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        for id in identities(r) {
            match seen.get(&id) {
                Some(&j) => {
                    let (a, b) = (find(&mut parent, i), find(&mut parent, j));
                    if a != b {
                        let (low, high) = (a.min(b), a.max(b));
                        parent[high] = low;
                    }
                }
                None => {
                    seen.insert(id, i);
                }
            }
        }
    }
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut index_of_root: HashMap<usize, usize> = HashMap::new();
    for i in 0..records.len() {
        let root = find(&mut parent, i);
        match index_of_root.get(&root) {
            Some(&g) => groups[g].1.push(i),
            None => {
                index_of_root.insert(root, groups.len());
                groups.push((root, vec![i]));
            }
        }
    }
    let mut taken: Vec<Option<SourceRecord>> = records.drain(..).map(Some).collect();
    groups
        .into_iter()
        .map(|(_, members)| {
            let mut iter = members.into_iter().filter_map(|i| taken[i].take());
            let mut merged = iter.next().unwrap_or_default();
            for other in iter {
                merge(&mut merged, other);
            }
            if !merged.key.starts_with("file:") && !merged.key.starts_with("research:") {
                merged.key = key_of(&merged);
            }
            merged
        })
        .collect()
}

fn identities(r: &SourceRecord) -> Vec<String> {
    let mut ids = Vec::new();
    if r.key.starts_with("file:") || r.key.starts_with("research:") {
        ids.push(r.key.clone());
        return ids;
    }
    if let Some(doi) = &r.doi {
        ids.push(format!("doi:{doi}"));
    }
    if let Some(id) = &r.arxiv_id {
        ids.push(format!("arxiv:{id}"));
    }
    if let Some(url) = &r.url {
        ids.push(format!("url:{}", url_identity(url)));
    }
    let title = normalize_title(&r.title);
    // Very short titles ("Introduction", "News") are not identities.
    if title.len() >= 12 {
        let year = year_of(r.date.as_deref())
            .map(|y| y.to_string())
            .unwrap_or_default();
        ids.push(format!("title:{title}|{year}"));
    }
    ids
}

/// Peer-reviewed first: the merged record takes the venue of the best-reviewed copy.
fn venue_rank(kind: &str) -> u8 {
    match kind {
        "journal" => 0,
        "conference" => 1,
        "book" => 2,
        "preprint" => 3,
        "repository" => 4,
        "news" => 5,
        "web" => 6,
        _ => 7,
    }
}

fn merge(into: &mut SourceRecord, other: SourceRecord) {
    for p in &other.providers {
        if !into.providers.contains(p) {
            into.providers.push(p.clone());
        }
    }
    let better_venue = venue_rank(&other.venue_type) < venue_rank(&into.venue_type);
    if better_venue {
        into.venue_type = other.venue_type.clone();
        if other.venue.is_some() {
            into.venue = other.venue.clone();
        }
        if other.date.is_some() {
            into.date = other.date.clone();
        }
    }
    fill(&mut into.doi, other.doi);
    fill(&mut into.arxiv_id, other.arxiv_id);
    fill(&mut into.url, other.url);
    fill(&mut into.date, other.date);
    fill(&mut into.venue, other.venue);
    if into.title.trim().is_empty() {
        into.title = other.title;
    }
    if into.authors.is_empty() {
        into.authors = other.authors;
    }
    into.citations = match (into.citations, other.citations) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    into.retracted |= other.retracted;
    if other.snippet.len() > into.snippet.len() {
        into.snippet = other.snippet;
    }
}

fn fill<T>(slot: &mut Option<T>, value: Option<T>) {
    if slot.is_none() {
        *slot = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_normalise() {
        assert_eq!(
            normalize_doi("https://doi.org/10.1038/NATURE12373").as_deref(),
            Some("10.1038/nature12373")
        );
        assert_eq!(normalize_doi("doi: 10.1/x").as_deref(), Some("10.1/x"));
        assert_eq!(normalize_doi("not a doi"), None);
        assert_eq!(
            normalize_arxiv("http://arxiv.org/abs/2301.01234v2").as_deref(),
            Some("2301.01234")
        );
        assert_eq!(
            normalize_arxiv("arXiv:1706.03762v7").as_deref(),
            Some("1706.03762")
        );
        assert_eq!(
            normalize_arxiv("10.48550/arXiv.1706.03762").as_deref(),
            Some("1706.03762")
        );
        assert_eq!(
            normalize_arxiv("hep-th/9901001v3").as_deref(),
            Some("hep-th/9901001")
        );
        assert_eq!(normalize_arxiv("version2"), None);
        assert_eq!(normalize_arxiv("v"), None);
        assert_eq!(
            canonical_url("https://WWW.Example.org/a/b/?utm_source=x&id=3#frag").as_deref(),
            Some("https://example.org/a/b?id=3")
        );
        assert_eq!(
            canonical_url("http://www.example.org/").as_deref(),
            Some("http://example.org")
        );
        assert_eq!(
            canonical_url("https://example.org/page/").as_deref(),
            Some("https://example.org/page")
        );
        assert_eq!(canonical_url("javascript:alert(1)"), None);
        assert_eq!(canonical_url("ftp://example.org/x"), None);
        assert_eq!(normalize_title("  The  Rust Book!"), "the rust book");
    }

    fn rec(provider: &str, f: impl FnOnce(&mut SourceRecord)) -> SourceRecord {
        let mut r = SourceRecord {
            provider: provider.to_owned(),
            venue_type: "unknown".to_owned(),
            ..SourceRecord::default()
        };
        f(&mut r);
        r
    }

    #[test]
    fn the_same_paper_from_three_providers_is_one_source() {
        let openalex = rec("openalex", |r| {
            r.title = "Attention Is All You Need".into();
            r.doi = Some("https://doi.org/10.48550/arXiv.1706.03762".into());
            r.citations = Some(100_000);
            r.venue_type = "preprint".into();
        });
        let arxiv = rec("arxiv", |r| {
            r.title = "Attention is all you need".into();
            r.url = Some("http://arxiv.org/abs/1706.03762v7".into());
            r.snippet = "The dominant sequence transduction models are based on complex recurrent or convolutional neural networks.".into();
            r.venue_type = "preprint".into();
        });
        let crossref = rec("crossref", |r| {
            r.title = "Attention Is All You Need".into();
            r.arxiv_id = Some("arXiv:1706.03762".into());
            r.citations = Some(90_000);
        });
        let other = rec("searxng", |r| {
            r.title = "Something else entirely".into();
            r.url = Some("https://www.example.org/x?utm_campaign=1".into());
        });
        let same_page = rec("brave", |r| {
            r.title = "Something else".into();
            r.url = Some("http://example.org/x#top".into());
        });
        let merged = dedupe(vec![openalex, arxiv, other, crossref, same_page]);
        assert_eq!(merged.len(), 2, "{merged:#?}");
        let paper = &merged[0];
        assert_eq!(paper.key, "arxiv:1706.03762");
        assert_eq!(paper.providers, ["openalex", "arxiv", "crossref"]);
        assert_eq!(paper.citations, Some(100_000));
        assert!(paper.snippet.starts_with("The dominant"));
        assert_eq!(merged[1].providers, ["searxng", "brave"]);
        assert_eq!(merged[1].key, "url:example.org/x");
    }

    #[test]
    fn title_and_year_join_copies_without_identifiers_and_bridges_merge_groups() {
        let a = rec("crossref", |r| {
            r.title = "Deep Residual Learning for Image Recognition".into();
            r.date = Some("2016-06-27".into());
            r.doi = Some("10.1109/CVPR.2016.90".into());
            r.venue_type = "conference".into();
        });
        let b = rec("semantic_scholar", |r| {
            r.title = "Deep residual learning for image recognition.".into();
            r.date = Some("2016".into());
        });
        let c = rec("openalex", |r| {
            r.title = "Deep Residual Learning for Image Recognition".into();
            r.date = Some("2015-12-10".into());
        });
        let merged = dedupe(vec![a, b, c]);
        // Same title, different year: kept apart (a preprint and its later version can differ).
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].key, "doi:10.1109/cvpr.2016.90");
        assert_eq!(merged[0].venue_type, "conference");
    }
}
