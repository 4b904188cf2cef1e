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
    Endpoint, Found, Source, SourceContext, SourceError, SourceQuery, strip_tags, text,
};
use crate::store::{SourceRecord, now_rfc3339};

fn malformed(expected: &str, found: impl std::fmt::Display) -> SourceError {
    SourceError::Malformed {
        expected: expected.to_owned(),
        found: found.to_string().chars().take(160).collect(),
    }
}

fn record(provider: &str, venue_type: &str, retrieved_at: &str) -> SourceRecord {
    SourceRecord {
        provider: provider.to_owned(),
        providers: vec![provider.to_owned()],
        venue_type: venue_type.to_owned(),
        retrieved_at: retrieved_at.to_owned(),
        ..SourceRecord::default()
    }
}

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
    ) -> BoxFuture<'a, Result<Found, SourceError>> {
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
            Ok(Found {
                records,
                cached: fetched.cached,
            })
        })
    }
}

/// Parses SearXNG's JSON answer.
pub fn parse_searxng(body: &str, retrieved_at: &str) -> Result<Vec<SourceRecord>, SourceError> {
    let value: Value = serde_json::from_str(body).map_err(|e| {
        malformed(
            "SearXNG JSON (is `json` in its search.formats?)",
            format!("invalid JSON ({e})"),
        )
    })?;
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
    ) -> BoxFuture<'a, Result<Found, SourceError>> {
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
            Ok(Found {
                records: parse_brave(&fetched.body, &now_rfc3339())?,
                cached: fetched.cached,
            })
        })
    }
}

/// Parses a Brave web search page (`web.results[]`; no `web` means no web results).
pub fn parse_brave(body: &str, retrieved_at: &str) -> Result<Vec<SourceRecord>, SourceError> {
    let value: Value = serde_json::from_str(body)
        .map_err(|e| malformed("a Brave search page", format!("invalid JSON ({e})")))?;
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
    ) -> BoxFuture<'a, Result<Found, SourceError>> {
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
            Ok(Found {
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

fn child<'a, 'i>(node: roxmltree::Node<'a, 'i>, name: &str) -> Option<roxmltree::Node<'a, 'i>> {
    node.children()
        .find(|c| c.is_element() && c.tag_name().name() == name)
}

/// Parses an RSS 2.0 or Atom feed; entries with the same guid/id appear once.
pub fn parse_feed(body: &str, retrieved_at: &str) -> Result<Vec<SourceRecord>, SourceError> {
    // Entities are allowed (real feeds declare them); the node limit bounds expansion bombs.
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        nodes_limit: 500_000,
        ..roxmltree::ParsingOptions::default()
    };
    let doc = roxmltree::Document::parse_with_options(body, options)
        .map_err(|e| malformed("an RSS or Atom feed", format!("invalid XML ({e})")))?;
    let root = doc.root_element();
    let child_text = |node: roxmltree::Node<'_, '_>, name: &str| -> Option<String> {
        let n = child(node, name)?;
        let t: String = n
            .descendants()
            .filter(|d| d.is_text())
            .filter_map(|d| d.text())
            .collect();
        let t = strip_tags(&t);
        (!t.is_empty()).then_some(t)
    };
    let mut out: Vec<SourceRecord> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    match root.tag_name().name() {
        "rss" | "RDF" => {
            let channel = child(root, "channel");
            let feed_title = channel.and_then(|c| child_text(c, "title"));
            let items = root
                .descendants()
                .filter(|n| n.is_element() && n.tag_name().name() == "item");
            for item in items {
                let mut r = record("feeds", "news", retrieved_at);
                r.title = child_text(item, "title").unwrap_or_default();
                r.url = child_text(item, "link");
                r.provider_id = child_text(item, "guid")
                    .or_else(|| r.url.clone())
                    .unwrap_or_else(|| r.title.clone());
                r.snippet = child_text(item, "description")
                    .or_else(|| child_text(item, "encoded"))
                    .unwrap_or_default();
                r.date = child_text(item, "pubDate")
                    .or_else(|| child_text(item, "date"))
                    .and_then(|d| normalize_date(&d));
                r.authors = child_text(item, "creator")
                    .or_else(|| child_text(item, "author"))
                    .into_iter()
                    .collect();
                r.venue = feed_title.clone();
                if !r.title.is_empty() && seen.insert(r.provider_id.clone()) {
                    out.push(r);
                }
            }
        }
        "feed" => {
            let feed_title = child_text(root, "title");
            for entry in root
                .children()
                .filter(|n| n.is_element() && n.tag_name().name() == "entry")
            {
                let mut r = record("feeds", "news", retrieved_at);
                r.title = child_text(entry, "title").unwrap_or_default();
                let links: Vec<_> = entry
                    .children()
                    .filter(|c| c.is_element() && c.tag_name().name() == "link")
                    .collect();
                r.url = links
                    .iter()
                    .find(|l| l.attribute("rel").is_none_or(|rel| rel == "alternate"))
                    .or(links.first())
                    .and_then(|l| l.attribute("href"))
                    .map(str::to_owned);
                r.provider_id = child_text(entry, "id")
                    .or_else(|| r.url.clone())
                    .unwrap_or_else(|| r.title.clone());
                r.snippet = child_text(entry, "summary")
                    .or_else(|| child_text(entry, "content"))
                    .unwrap_or_default();
                r.date = child_text(entry, "published")
                    .or_else(|| child_text(entry, "updated"))
                    .and_then(|d| normalize_date(&d));
                r.authors = entry
                    .children()
                    .filter(|c| c.is_element() && c.tag_name().name() == "author")
                    .filter_map(|a| child_text(a, "name"))
                    .collect();
                r.venue = feed_title.clone();
                if !r.title.is_empty() && seen.insert(r.provider_id.clone()) {
                    out.push(r);
                }
            }
        }
        other => {
            return Err(malformed(
                "an RSS (<rss>) or Atom (<feed>) document",
                format!("<{other}>"),
            ));
        }
    }
    Ok(out)
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
        let started = std::time::Instant::now();
        let result = parse_feed(bomb, "now");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        if let Ok(items) = result {
            assert!(items.iter().all(|i| i.title.len() < 64 * 1024 * 1024));
        }
    }
}
