//! Web and news: a self-hosted SearXNG, Brave Search, and the user's RSS 2.0 / Atom feeds
//! (fetched with conditional GET, entries kept when they mention the question's words).

use futures::future::BoxFuture;
use reqwest::Url;
use reqwest::header::{ACCEPT, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::config::Secret;
use crate::model::http::secret_header;
use crate::research::config::SourceSettings;
use crate::research::dates::normalize_date;
use crate::research::sources::{
    Endpoint, Source, SourceContext, SourceError, SourceQuery, SourceResults, json, malformed,
    record, strip_tags, text,
};
use crate::store::{SourceRecord, now_rfc3339};

// ---------------------------------------------------------------------------------------------

/// A SearXNG instance: `GET /search?q=…&format=json` (JSON must be enabled in its settings).
pub struct Searxng {
    endpoint: Endpoint,
}

impl Searxng {
    pub fn new(settings: &SourceSettings) -> Searxng {
        Searxng {
            endpoint: Endpoint::new(settings),
        }
    }
}

impl Source for Searxng {
    fn name(&self) -> &str {
        &self.endpoint.name
    }

    fn timeout(&self) -> std::time::Duration {
        self.endpoint.timeout
    }

    fn search<'a>(
        &'a self,
        query: &'a SourceQuery,
        context: &'a SourceContext,
    ) -> BoxFuture<'a, Result<SourceResults, SourceError>> {
        Box::pin(async move {
            let mut url = self.endpoint.url("/search")?;
            url.query_pairs_mut()
                .append_pair("q", &query.text)
                .append_pair("format", "json");
            let fetched = self
                .endpoint
                .get(context, url, None, HeaderMap::new(), false)
                .await
                .map_err(|err| match err {
                    SourceError::Http { status: 403, .. } => SourceError::Http {
                        status: 403,
                        message: "SearXNG refused JSON output: enable it by adding `json` to `search.formats` in its settings.yml, then restart it".to_owned(),
                    },
                    other => other,
                })?;
            let mut records = parse_searxng(&fetched.body, &now_rfc3339())?;
            records.truncate(query.max_results);
            Ok(SourceResults {
                records,
                cached: fetched.cached,
            })
        })
    }
}

/// Parses SearXNG's JSON answer.
pub fn parse_searxng(body: &str, retrieved_at: &str) -> Result<Vec<SourceRecord>, SourceError> {
    let value = json(body, "SearXNG JSON (is `json` in its search.formats?)")?;
    let results = value["results"]
        .as_array()
        .ok_or_else(|| malformed("SearXNG JSON with `results`", "no `results` array"))?;
    let mut out = Vec::new();
    for item in results {
        let (Some(url), Some(title)) = (text(&item["url"]), text(&item["title"])) else {
            continue;
        };
        let mut r = record("searxng", "web", retrieved_at);
        r.provider_id = url.clone();
        r.url = Some(url);
        r.title = title;
        r.snippet = item["content"].as_str().map(strip_tags).unwrap_or_default();
        r.date = item["publishedDate"].as_str().and_then(normalize_date);
        if item["category"].as_str() == Some("news") {
            r.venue_type = "news".to_owned();
        } else if item["category"].as_str() == Some("science") {
            r.venue_type = "unknown".to_owned();
        }
        out.push(r);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------

/// Brave Search `GET /res/v1/web/search?q=…` with `X-Subscription-Token`.
pub struct Brave {
    endpoint: Endpoint,
    key: Option<Secret>,
}

impl Brave {
    pub fn new(settings: &SourceSettings) -> Brave {
        Brave {
            endpoint: Endpoint::new(settings),
            key: settings.api_key(),
        }
    }
}

impl Source for Brave {
    fn name(&self) -> &str {
        &self.endpoint.name
    }

    fn timeout(&self) -> std::time::Duration {
        self.endpoint.timeout
    }

    fn search<'a>(
        &'a self,
        query: &'a SourceQuery,
        context: &'a SourceContext,
    ) -> BoxFuture<'a, Result<SourceResults, SourceError>> {
        Box::pin(async move {
            let mut url = self.endpoint.url("/res/v1/web/search")?;
            url.query_pairs_mut()
                .append_pair("q", &query.text)
                .append_pair("count", &query.max_results.clamp(1, 20).to_string());
            let mut headers = HeaderMap::new();
            headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
            if let Some(key) = &self.key {
                let value = secret_header(key.expose())
                    .map_err(|e| SourceError::Unavailable(e.to_string()))?;
                headers.insert(HeaderName::from_static("x-subscription-token"), value);
            }
            let fetched = self
                .endpoint
                .get(context, url, None, headers, false)
                .await?;
            Ok(SourceResults {
                records: parse_brave(&fetched.body, &now_rfc3339())?,
                cached: fetched.cached,
            })
        })
    }
}

/// Parses a Brave web search page (`web.results[]`; no `web` means no web results).
pub fn parse_brave(body: &str, retrieved_at: &str) -> Result<Vec<SourceRecord>, SourceError> {
    let value = json(body, "a Brave search page")?;
    if !value.is_object() {
        return Err(malformed(
            "a Brave search page (an object)",
            "another JSON value",
        ));
    }
    let results = match &value["web"]["results"] {
        Value::Array(items) => items.as_slice(),
        Value::Null => &[],
        _ => return Err(malformed("`web.results` as an array", "another value")),
    };
    let mut out = Vec::new();
    for item in results {
        let (Some(url), Some(title)) = (text(&item["url"]), item["title"].as_str().map(strip_tags))
        else {
            continue;
        };
        let mut r = record("brave", "web", retrieved_at);
        r.provider_id = url.clone();
        r.url = Some(url);
        r.title = title;
        r.snippet = item["description"]
            .as_str()
            .map(strip_tags)
            .unwrap_or_default();
        r.date = item["page_age"].as_str().and_then(normalize_date);
        out.push(r);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------

/// The configured RSS 2.0 / Atom feeds.
pub struct Feeds {
    endpoint: Endpoint,
    urls: Vec<String>,
}

impl Feeds {
    pub fn new(settings: &SourceSettings) -> Feeds {
        Feeds {
            endpoint: Endpoint::new(settings),
            urls: settings.urls.clone(),
        }
    }
}

impl Source for Feeds {
    fn name(&self) -> &str {
        &self.endpoint.name
    }

    fn timeout(&self) -> std::time::Duration {
        self.endpoint.timeout
    }

    fn search<'a>(
        &'a self,
        query: &'a SourceQuery,
        context: &'a SourceContext,
    ) -> BoxFuture<'a, Result<SourceResults, SourceError>> {
        Box::pin(async move {
            let fetches = self.urls.iter().map(|u| async move {
                let url = Url::parse(u)
                    .map_err(|e| SourceError::Unavailable(format!("bad feed URL {u:?}: {e}")))?;
                let fetched = self
                    .endpoint
                    .get(context, url, None, HeaderMap::new(), true)
                    .await?;
                let records = parse_feed(&fetched.body, &now_rfc3339())?;
                Ok::<_, SourceError>((records, fetched.cached))
            });
            let results = futures::future::join_all(fetches).await;
            let mut all = Vec::new();
            let mut problems = Vec::new();
            let mut ok = 0;
            for (url, result) in self.urls.iter().zip(results) {
                match result {
                    Ok((records, cached)) => {
                        ok += 1;
                        all.extend(records);
                        if let Some(c) = cached {
                            problems.push(format!("{url}: {c}"));
                        }
                    }
                    Err(SourceError::Cancelled) => return Err(SourceError::Cancelled),
                    Err(err) => problems.push(format!("{url}: {err}")),
                }
            }
            if ok == 0 {
                if let [only] = problems.as_slice() {
                    return Err(SourceError::Transport(only.clone()));
                }
                return Err(SourceError::Transport(problems.join("; ")));
            }
            Ok(SourceResults {
                records: matching(all, &query.text, query.max_results),
                cached: (!problems.is_empty()).then(|| problems.join("; ")),
            })
        })
    }
}

/// Entries that mention the question's words, most words first.
pub fn matching(records: Vec<SourceRecord>, query: &str, max: usize) -> Vec<SourceRecord> {
    let terms: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() > 2)
        .map(str::to_lowercase)
        .collect();
    let mut scored: Vec<(usize, SourceRecord)> = records
        .into_iter()
        .map(|r| {
            let hay = format!("{} {}", r.title, r.snippet).to_lowercase();
            (terms.iter().filter(|t| hay.contains(t.as_str())).count(), r)
        })
        .filter(|(hits, _)| *hits > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.date.cmp(&a.1.date)));
    scored.into_iter().take(max).map(|(_, r)| r).collect()
}

/// Parses an RSS (0.9, 1.0, 2.0), Atom or JSON Feed document with feed-rs; entries with the
/// same id (guid) appear once.
///
/// The body is already size-capped by the endpoint. Entity declarations are never expanded: a
/// document type with an internal subset is refused before parsing (feed-rs' XML reader would
/// not expand it, but neither would it say so), so a "billion laughs" document costs nothing.
pub fn parse_feed(body: &str, retrieved_at: &str) -> Result<Vec<SourceRecord>, SourceError> {
    if declares_entities(body) {
        return Err(malformed(
            "an RSS, Atom or JSON feed",
            "a document type declaring entities (refused: entity expansion)",
        ));
    }
    if let Some(root) = xml_root(body)
        && !matches!(root.rsplit(':').next(), Some("rss" | "RDF" | "feed"))
    {
        return Err(malformed(
            "an RSS (<rss>, <rdf:RDF>) or Atom (<feed>) document",
            format!("<{root}>"),
        ));
    }
    let feed = feed_rs::parser::parse(body.as_bytes())
        .map_err(|e| malformed("an RSS, Atom or JSON feed", format!("{e}")))?;
    let feed_title = feed
        .title
        .as_ref()
        .map(|t| strip_tags(&t.content))
        .filter(|t| !t.is_empty());
    let mut out: Vec<SourceRecord> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for entry in feed.entries {
        let mut r = record("feeds", "news", retrieved_at);
        r.title = entry
            .title
            .as_ref()
            .map(|t| strip_tags(&t.content))
            .unwrap_or_default();
        r.url = entry
            .links
            .iter()
            .find(|l| l.rel.as_deref().is_none_or(|rel| rel == "alternate"))
            .or(entry.links.first())
            .map(|l| l.href.trim().to_owned())
            .filter(|h| !h.is_empty());
        r.provider_id = Some(entry.id.trim().to_owned())
            .filter(|id| !id.is_empty())
            .or_else(|| r.url.clone())
            .unwrap_or_else(|| r.title.clone());
        r.snippet = entry
            .summary
            .as_ref()
            .map(|t| strip_tags(&t.content))
            .filter(|t| !t.is_empty())
            .or_else(|| {
                entry
                    .content
                    .as_ref()
                    .and_then(|c| c.body.as_deref())
                    .map(strip_tags)
            })
            .unwrap_or_default();
        r.date = entry
            .published
            .or(entry.updated)
            .map(|d| d.format("%Y-%m-%d").to_string());
        r.authors = entry
            .authors
            .iter()
            .map(|a| a.name.trim().to_owned())
            .filter(|n| !n.is_empty())
            .collect();
        r.venue = feed_title.clone();
        if !r.title.is_empty() && seen.insert(r.provider_id.clone()) {
            out.push(r);
        }
    }
    Ok(out)
}

/// The name of an XML body's root element (`None` for a body that is not XML, such as JSON).
fn xml_root(body: &str) -> Option<&str> {
    let mut rest = body.trim_start_matches('\u{feff}').trim_start();
    while let Some(tag) = rest.strip_prefix('<') {
        if tag.starts_with(['?', '!']) {
            // A declaration, comment or document type: skip past its end.
            let end = if tag.starts_with("!--") {
                tag.find("-->").map(|i| i + 3)?
            } else {
                tag.find('>').map(|i| i + 1)?
            };
            rest = tag[end..].trim_start();
            continue;
        }
        let name_end = tag
            .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
            .unwrap_or(tag.len());
        return Some(&tag[..name_end]);
    }
    None
}

/// Whether an XML body declares entities in an internal DTD subset.
fn declares_entities(body: &str) -> bool {
    let head = &body[..body.len().min(64 * 1024)];
    head.find("<!DOCTYPE")
        .is_some_and(|at| head[at..].contains("<!ENTITY"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entity_expansion_bomb_is_refused_not_expanded() {
        let bomb = r#"<?xml version="1.0"?>
<!DOCTYPE rss [
 <!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">
 <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
 <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
 <!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
 <!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;">
 <!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">
 <!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;">
]>
<rss><channel><item><title>&g;</title></item></channel></rss>"#;
        let result = parse_feed(bomb, "now");
        let err = result.expect_err("entity declarations are refused");
        assert!(err.to_string().contains("entity expansion"), "{err}");
    }

    #[test]
    fn every_feed_format_reads_to_the_same_records() {
        let rss1 = r#"<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/">
<channel rdf:about="https://x.org/"><title>X news</title><link>https://x.org/</link><description>d</description></channel>
<item rdf:about="https://x.org/a"><title>Rust 2026 edition</title><link>https://x.org/a</link><description>What changes</description><dc:date>2026-01-02T10:00:00Z</dc:date></item>
</rdf:RDF>"#;
        let json = r#"{"version":"https://jsonfeed.org/version/1.1","title":"X news","items":[{"id":"a","url":"https://x.org/a","title":"Rust 2026 edition","summary":"What changes","date_published":"2026-01-02T10:00:00Z"}]}"#;
        for body in [rss1, json] {
            let records = parse_feed(body, "now").unwrap();
            assert_eq!(records.len(), 1, "{body}");
            let r = &records[0];
            assert_eq!(r.title, "Rust 2026 edition");
            assert_eq!(r.url.as_deref(), Some("https://x.org/a"));
            assert_eq!(r.date.as_deref(), Some("2026-01-02"));
            assert_eq!(r.venue.as_deref(), Some("X news"));
            assert_eq!(r.snippet, "What changes");
        }
        for junk in [
            "",
            "<html><body>not a feed</body></html>",
            "{\"items\": 3}",
            "\u{0}<rss",
        ] {
            assert!(parse_feed(junk, "now").is_err(), "{junk:?}");
        }
    }
}
