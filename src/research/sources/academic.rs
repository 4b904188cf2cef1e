//! The academic indexes: OpenAlex, arXiv, Crossref and Semantic Scholar. Each builds its
//! documented request and parses its documented answer into [`SourceRecord`]s; parsing is a pure
//! function tested on recorded answers (`fixtures/research/`).

use futures::future::BoxFuture;
use reqwest::header::{HeaderMap, HeaderName};
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

/// Query words for the providers whose syntax is fielded (arXiv): no stop words, no operators.
fn terms(query: &str) -> Vec<String> {
    const STOP: [&str; 20] = [
        "a", "an", "and", "are", "does", "for", "how", "in", "is", "of", "on", "or", "the", "to",
        "what", "which", "why", "with", "do", "can",
    ];
    query
        .split(|c: char| !c.is_alphanumeric() && c != '-')
        .map(|w| w.trim_matches('-').to_lowercase())
        .filter(|w| !w.is_empty() && !STOP.contains(&w.as_str()))
        .take(12)
        .collect()
}

// ---------------------------------------------------------------------------------------------

/// OpenAlex `GET /works?search=…` (keys required since 2026, sent as `api_key`).
pub struct OpenAlex {
    endpoint: Endpoint,
    key: Option<Secret>,
    mailto: Option<String>,
}

impl OpenAlex {
    pub fn new(settings: &SourceSettings) -> OpenAlex {
        OpenAlex {
            endpoint: Endpoint::new(settings),
            key: settings.api_key(),
            mailto: settings.mailto.clone(),
        }
    }
}

impl Source for OpenAlex {
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
            let mut url = self.endpoint.url("/works")?;
            url.query_pairs_mut()
                .append_pair("search", &query.text)
                .append_pair("per_page", &query.max_results.clamp(1, 100).to_string())
                .append_pair(
                    "select",
                    "id,doi,title,display_name,publication_date,type,cited_by_count,is_retracted,primary_location,abstract_inverted_index,authorships,ids",
                );
            if let Some(m) = &self.mailto {
                url.query_pairs_mut().append_pair("mailto", m);
            }
            let key = self.key.as_ref().map(|k| ("api_key", k.expose()));
            let fetched = self
                .endpoint
                .get(context, url, key, HeaderMap::new(), false)
                .await?;
            Ok(SourceResults {
                records: parse_openalex(&fetched.body, &now_rfc3339())?,
                cached: fetched.cached,
            })
        })
    }
}

/// Parses an OpenAlex `/works` page.
pub fn parse_openalex(body: &str, retrieved_at: &str) -> Result<Vec<SourceRecord>, SourceError> {
    let value = json(body, "an OpenAlex works page")?;
    let results = value
        .get("results")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            malformed(
                "an OpenAlex works page with `results`",
                "no `results` array",
            )
        })?;
    let mut out = Vec::new();
    for w in results {
        let mut r = record("openalex", "unknown", retrieved_at);
        r.provider_id = text(&w["id"]).unwrap_or_default();
        r.title = text(&w["display_name"])
            .or_else(|| text(&w["title"]))
            .unwrap_or_default();
        if r.title.is_empty() {
            continue;
        }
        r.doi = text(&w["doi"]);
        r.arxiv_id = text(&w["ids"]["arxiv"]);
        r.date = w["publication_date"]
            .as_str()
            .and_then(normalize_date)
            .or_else(|| w["publication_year"].as_i64().map(|y| y.to_string()));
        r.citations = w["cited_by_count"].as_u64();
        r.retracted = w["is_retracted"].as_bool().unwrap_or(false);
        let location = &w["primary_location"];
        r.url = text(&location["landing_page_url"]).or_else(|| r.doi.clone());
        r.venue = text(&location["source"]["display_name"]);
        let source_type = location["source"]["type"].as_str().unwrap_or("");
        let work_type = w["type"].as_str().unwrap_or("");
        r.venue_type = match (work_type, source_type) {
            ("preprint", _) | (_, "repository") => "preprint",
            (_, "journal") => "journal",
            (_, "conference") => "conference",
            (_, "ebook platform" | "book series") | ("book" | "book-chapter", _) => "book",
            _ => "unknown",
        }
        .to_owned();
        r.authors = w["authorships"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| text(&x["author"]["display_name"]))
                    .take(20)
                    .collect()
            })
            .unwrap_or_default();
        r.snippet = rebuild_abstract(&w["abstract_inverted_index"]);
        out.push(r);
    }
    Ok(out)
}

/// OpenAlex ships abstracts as an inverted index (`{"word": [positions]}`): put every word back
/// at its positions. Positions beyond 20,000 words are ignored (hostile input).
pub fn rebuild_abstract(index: &Value) -> String {
    let Some(map) = index.as_object() else {
        return String::new();
    };
    let mut slots: Vec<Option<&str>> = Vec::new();
    for (word, positions) in map {
        for p in positions.as_array().into_iter().flatten() {
            let Some(p) = p.as_u64().filter(|p| *p < 20_000) else {
                continue;
            };
            let p = p as usize;
            if slots.len() <= p {
                slots.resize(p + 1, None);
            }
            slots[p] = Some(word);
        }
    }
    slots.into_iter().flatten().collect::<Vec<_>>().join(" ")
}

// ---------------------------------------------------------------------------------------------

/// arXiv `GET /api/query?search_query=all:…` (Atom), at most one request every 3 s.
pub struct Arxiv {
    endpoint: Endpoint,
}

impl Arxiv {
    pub fn new(settings: &SourceSettings) -> Arxiv {
        Arxiv {
            endpoint: Endpoint::new(settings),
        }
    }
}

impl Source for Arxiv {
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
            let words = terms(&query.text);
            if words.is_empty() {
                return Ok(SourceResults::default());
            }
            let search = words
                .iter()
                .map(|w| format!("all:{w}"))
                .collect::<Vec<_>>()
                .join(" AND ");
            let mut url = self.endpoint.url("/query")?;
            url.query_pairs_mut()
                .append_pair("search_query", &search)
                .append_pair("start", "0")
                .append_pair("max_results", &query.max_results.clamp(1, 100).to_string());
            let fetched = self
                .endpoint
                .get(context, url, None, HeaderMap::new(), false)
                .await?;
            Ok(SourceResults {
                records: parse_arxiv(&fetched.body, &now_rfc3339())?,
                cached: fetched.cached,
            })
        })
    }
}

/// Parses an arXiv Atom feed. arXiv reports errors as an entry whose id is under `/api/errors`.
pub fn parse_arxiv(body: &str, retrieved_at: &str) -> Result<Vec<SourceRecord>, SourceError> {
    let doc = roxmltree::Document::parse(body)
        .map_err(|e| malformed("an arXiv Atom feed", format!("invalid XML ({e})")))?;
    let root = doc.root_element();
    if root.tag_name().name() != "feed" {
        return Err(malformed(
            "an arXiv Atom feed",
            format!("<{}>", root.tag_name().name()),
        ));
    }
    let child_text = |node: roxmltree::Node<'_, '_>, name: &str| -> Option<String> {
        node.children()
            .find(|c| c.is_element() && c.tag_name().name() == name)
            .and_then(|c| c.text())
            .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|t| !t.is_empty())
    };
    let mut out = Vec::new();
    for entry in root
        .children()
        .filter(|n| n.is_element() && n.tag_name().name() == "entry")
    {
        let id = child_text(entry, "id").unwrap_or_default();
        if id.contains("/api/errors") {
            return Err(SourceError::Http {
                status: 400,
                message: format!(
                    "arXiv refused the query: {}",
                    child_text(entry, "summary").unwrap_or(id)
                ),
            });
        }
        let mut r = record("arxiv", "unknown", retrieved_at);
        r.provider_id = id.clone();
        r.url = Some(id.clone());
        r.arxiv_id = Some(id);
        r.title = child_text(entry, "title").unwrap_or_default();
        if r.title.is_empty() {
            continue;
        }
        r.snippet = child_text(entry, "summary").unwrap_or_default();
        r.date = child_text(entry, "published").and_then(|d| normalize_date(&d));
        r.doi = child_text(entry, "doi");
        r.venue = child_text(entry, "journal_ref").or_else(|| Some("arXiv".to_owned()));
        r.venue_type = "preprint".to_owned();
        r.authors = entry
            .children()
            .filter(|c| c.is_element() && c.tag_name().name() == "author")
            .filter_map(|a| child_text(a, "name"))
            .take(20)
            .collect();
        out.push(r);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------

/// Crossref `GET /works?query.bibliographic=…` (polite pool with `mailto`).
pub struct Crossref {
    endpoint: Endpoint,
    mailto: Option<String>,
}

impl Crossref {
    pub fn new(settings: &SourceSettings) -> Crossref {
        Crossref {
            endpoint: Endpoint::new(settings),
            mailto: settings.mailto.clone(),
        }
    }
}

impl Source for Crossref {
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
            let mut url = self.endpoint.url("/works")?;
            url.query_pairs_mut()
                .append_pair("query.bibliographic", &query.text)
                .append_pair("rows", &query.max_results.clamp(1, 100).to_string());
            if let Some(m) = &self.mailto {
                url.query_pairs_mut().append_pair("mailto", m);
            }
            let fetched = self
                .endpoint
                .get(context, url, None, HeaderMap::new(), false)
                .await?;
            Ok(SourceResults {
                records: parse_crossref(&fetched.body, &now_rfc3339())?,
                cached: fetched.cached,
            })
        })
    }
}

/// Parses a Crossref `/works` answer. A work is retracted when an `updated-by` entry has type
/// `retraction` (a correction or erratum is not a retraction).
pub fn parse_crossref(body: &str, retrieved_at: &str) -> Result<Vec<SourceRecord>, SourceError> {
    let value = json(body, "a Crossref works answer")?;
    let items = value["message"]["items"].as_array().ok_or_else(|| {
        malformed(
            "a Crossref works answer with `message.items`",
            "no `message.items` array",
        )
    })?;
    let mut out = Vec::new();
    for w in items {
        let mut r = record("crossref", "unknown", retrieved_at);
        r.doi = text(&w["DOI"]);
        r.provider_id = r.doi.clone().unwrap_or_default();
        r.title = w["title"]
            .as_array()
            .and_then(|t| t.first())
            .and_then(text)
            .unwrap_or_default();
        if r.title.is_empty() {
            continue;
        }
        r.url = text(&w["URL"]);
        r.venue = w["container-title"]
            .as_array()
            .and_then(|t| t.first())
            .and_then(text);
        r.venue_type = match w["type"].as_str().unwrap_or("") {
            "journal-article" => "journal",
            "proceedings-article" => "conference",
            "posted-content" => "preprint",
            "book" | "book-chapter" | "monograph" | "edited-book" | "reference-book" => "book",
            _ => "unknown",
        }
        .to_owned();
        r.citations = w["is-referenced-by-count"].as_u64();
        r.date = date_parts(&w["published"])
            .or_else(|| date_parts(&w["issued"]))
            .or_else(|| date_parts(&w["created"]));
        r.authors = w["author"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| {
                        let given = x["given"].as_str().unwrap_or("");
                        let family = x["family"].as_str().or(x["name"].as_str())?;
                        Some(format!("{given} {family}").trim().to_owned())
                    })
                    .take(20)
                    .collect()
            })
            .unwrap_or_default();
        r.retracted = w["updated-by"].as_array().is_some_and(|u| {
            u.iter().any(|x| {
                x["type"]
                    .as_str()
                    .is_some_and(|t| t.eq_ignore_ascii_case("retraction"))
            })
        });
        r.snippet = w["abstract"].as_str().map(strip_tags).unwrap_or_default();
        out.push(r);
    }
    Ok(out)
}

fn date_parts(value: &Value) -> Option<String> {
    let parts = value["date-parts"].as_array()?.first()?.as_array()?;
    let nums: Vec<i64> = parts.iter().filter_map(Value::as_i64).collect();
    let text = match nums.as_slice() {
        [y, m, d, ..] => format!("{y:04}-{m:02}-{d:02}"),
        [y, m] => format!("{y:04}-{m:02}"),
        [y] => format!("{y:04}"),
        [] => return None,
    };
    normalize_date(&text)
}

// ---------------------------------------------------------------------------------------------

/// Semantic Scholar `GET /graph/v1/paper/search` (`x-api-key` when a key is set).
pub struct SemanticScholar {
    endpoint: Endpoint,
    key: Option<Secret>,
}

impl SemanticScholar {
    pub fn new(settings: &SourceSettings) -> SemanticScholar {
        SemanticScholar {
            endpoint: Endpoint::new(settings),
            key: settings.api_key(),
        }
    }
}

impl Source for SemanticScholar {
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
            let mut url = self.endpoint.url("/graph/v1/paper/search")?;
            url.query_pairs_mut()
                .append_pair("query", &query.text)
                .append_pair("limit", &query.max_results.clamp(1, 100).to_string())
                .append_pair(
                    "fields",
                    "title,abstract,year,publicationDate,venue,citationCount,influentialCitationCount,externalIds,url,authors,publicationTypes,isOpenAccess",
                );
            let mut headers = HeaderMap::new();
            if let Some(key) = &self.key {
                let value = secret_header(key.expose())
                    .map_err(|e| SourceError::Unavailable(e.to_string()))?;
                headers.insert(HeaderName::from_static("x-api-key"), value);
            }
            let fetched = self
                .endpoint
                .get(context, url, None, headers, false)
                .await?;
            Ok(SourceResults {
                records: parse_semantic_scholar(&fetched.body, &now_rfc3339())?,
                cached: fetched.cached,
            })
        })
    }
}

/// Parses a Semantic Scholar paper search page.
pub fn parse_semantic_scholar(
    body: &str,
    retrieved_at: &str,
) -> Result<Vec<SourceRecord>, SourceError> {
    let value = json(body, "a Semantic Scholar search page")?;
    let data = match &value["data"] {
        Value::Array(items) => items.as_slice(),
        // A search without matches has `total: 0` and no `data`.
        Value::Null if value["total"].as_u64() == Some(0) => &[],
        _ => {
            return Err(malformed(
                "a Semantic Scholar search page with `data`",
                "no `data` array",
            ));
        }
    };
    let mut out = Vec::new();
    for p in data {
        let mut r = record("semantic_scholar", "unknown", retrieved_at);
        r.provider_id = text(&p["paperId"]).unwrap_or_default();
        r.title = text(&p["title"]).unwrap_or_default();
        if r.title.is_empty() {
            continue;
        }
        r.doi = text(&p["externalIds"]["DOI"]);
        r.arxiv_id = text(&p["externalIds"]["ArXiv"]);
        r.url = match (&r.doi, &r.arxiv_id) {
            (Some(doi), _) => Some(format!("https://doi.org/{doi}")),
            (None, Some(id)) => Some(format!("https://arxiv.org/abs/{id}")),
            _ => text(&p["url"]),
        };
        r.snippet = text(&p["abstract"]).unwrap_or_default();
        r.date = p["publicationDate"]
            .as_str()
            .and_then(normalize_date)
            .or_else(|| p["year"].as_i64().map(|y| y.to_string()));
        r.venue = text(&p["venue"]);
        r.citations = p["citationCount"].as_u64();
        let types: Vec<&str> = p["publicationTypes"]
            .as_array()
            .map(|t| t.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        r.venue_type = if types.contains(&"JournalArticle") {
            "journal"
        } else if types.contains(&"Conference") {
            "conference"
        } else if types.contains(&"Book") || types.contains(&"BookSection") {
            "book"
        } else if r.arxiv_id.is_some() && r.doi.is_none() {
            "preprint"
        } else {
            "unknown"
        }
        .to_owned();
        r.authors = p["authors"]
            .as_array()
            .map(|a| a.iter().filter_map(|x| text(&x["name"])).take(20).collect())
            .unwrap_or_default();
        out.push(r);
    }
    Ok(out)
}
