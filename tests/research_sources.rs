//! Research sources against local servers replaying the providers' documented answers
//! (`fixtures/research/`): parsing, conditional GET, 429/500/timeouts/malformed bodies, the
//! cache fallback, and a whole run de-duplicating the same paper across four providers.

use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use patchwise::config::{Config, ValueSource};
use patchwise::model::replay::{ReplayServer, Reply};
use patchwise::research::config::{SourceKind, SourceSettings};
use patchwise::research::sources::{
    Source, SourceContext, SourceError, SourceQuery, SourceResults, academic, web,
};
use patchwise::research::{Phase, Research, RunOptions};
use patchwise::store::{Library, SourceRecord};

const KEY_ENV: &str = "PATCHWISE_TEST_RESEARCH_KEY";
const KEY: &str = "research-key-51c2";

fn set_key() {
    static ONCE: Once = Once::new();
    // SAFETY: set once before any source reads it; nothing else in this binary writes the
    // environment.
    ONCE.call_once(|| unsafe { std::env::set_var(KEY_ENV, KEY) });
}

fn fixture(name: &str) -> Reply {
    Reply::from_file(format!(
        "{}/fixtures/research/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn settings(kind: SourceKind, base: &str) -> SourceSettings {
    set_key();
    let mut s = SourceSettings::defaults(kind.name(), kind);
    s.base_url = base.to_owned();
    s.api_key_env = Some(KEY_ENV.to_owned());
    s.min_interval = Duration::ZERO;
    s.timeout = Duration::from_secs(5);
    s
}

fn context(library: Option<Arc<Library>>) -> SourceContext {
    SourceContext {
        client: patchwise::model::http::shared_client(Duration::from_secs(2)).unwrap(),
        library,
        cancel: CancellationToken::new(),
    }
}

fn query(text: &str) -> SourceQuery {
    SourceQuery {
        text: text.to_owned(),
        max_results: 10,
    }
}

async fn search(source: &dyn Source, text: &str) -> Result<SourceResults, SourceError> {
    source.search(&query(text), &context(None)).await
}

#[tokio::test]
async fn openalex_rebuilds_abstracts_and_sends_the_key() {
    let server = ReplayServer::start(vec![fixture("openalex_works.http")])
        .await
        .unwrap();
    let mut s = settings(SourceKind::OpenAlex, &server.url());
    s.mailto = Some("me@example.org".to_owned());
    let found = search(&academic::OpenAlex::new(&s), "attention transformer")
        .await
        .unwrap();
    let r = &found.records;
    assert_eq!(r.len(), 2, "the untitled work is skipped");
    assert_eq!(
        r[0].snippet,
        "The dominant sequence transduction models are based on complex recurrent networks. We propose the Transformer, based solely attention"
    );
    assert_eq!(r[0].venue_type, "preprint");
    assert_eq!(r[0].citations, Some(104_321));
    assert_eq!(r[0].authors, ["Ashish Vaswani", "Noam Shazeer"]);
    assert!(r[1].retracted);
    assert_eq!(r[1].venue_type, "journal");
    assert_eq!(r[1].venue.as_deref(), Some("The Lancet"));
    let request = &server.requests()[0];
    assert!(
        request
            .path
            .starts_with("/works?search=attention+transformer")
    );
    assert!(request.path.contains(&format!("api_key={KEY}")));
    assert!(request.path.contains("mailto=me%40example.org"));
}

#[tokio::test]
async fn arxiv_atom_and_its_error_feed() {
    let server = ReplayServer::start(vec![fixture("arxiv_query.http")])
        .await
        .unwrap();
    let source = academic::Arxiv::new(&settings(SourceKind::Arxiv, &server.url()));
    let found = search(&source, "What is attention in transformers?")
        .await
        .unwrap();
    let r = &found.records;
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].title, "Attention Is All You Need");
    assert_eq!(r[0].date.as_deref(), Some("2017-06-12"));
    assert_eq!(r[0].doi.as_deref(), Some("10.48550/arXiv.1706.03762"));
    assert_eq!(r[0].venue_type, "preprint");
    assert!(r[1].snippet.contains("long sequences & report"));
    assert_eq!(
        r[1].venue.as_deref(),
        Some("Proc. Long Sequences Workshop 2024")
    );
    let path = &server.requests()[0].path;
    assert!(
        path.contains("search_query=all%3Aattention+AND+all%3Atransformers"),
        "{path}"
    );

    let server = ReplayServer::start(vec![fixture("arxiv_error.http")])
        .await
        .unwrap();
    let source = academic::Arxiv::new(&settings(SourceKind::Arxiv, &server.url()));
    let err = search(&source, "x y").await.unwrap_err();
    assert!(
        err.to_string().contains("HTTP 400"),
        "a 400 answer is an HTTP error: {err}"
    );
    let body = match fixture("arxiv_error.http") {
        Reply::Http { body, .. } => body,
        other => panic!("{other:?}"),
    };
    let err = academic::parse_arxiv(&body, "now").unwrap_err();
    assert!(
        err.to_string()
            .contains("arXiv refused the query: incorrect id format for 1234.12345"),
        "{err}"
    );
}

#[tokio::test]
async fn crossref_retraction_is_not_a_correction() {
    let server = ReplayServer::start(vec![fixture("crossref_works.http")])
        .await
        .unwrap();
    let mut s = settings(SourceKind::Crossref, &server.url());
    s.mailto = Some("you@example.org".to_owned());
    let found = search(&academic::Crossref::new(&s), "deep learning")
        .await
        .unwrap();
    let r = &found.records;
    assert_eq!(r.len(), 3);
    assert_eq!(r[0].venue_type, "preprint");
    assert!(r[1].retracted, "updated-by retraction");
    assert_eq!(r[1].date.as_deref(), Some("1998-02-28"));
    assert_eq!(
        r[1].snippet,
        "Background: we investigated a consecutive series of children."
    );
    assert!(!r[2].retracted, "a correction is not a retraction");
    assert_eq!(r[2].authors, ["Yann LeCun", "Yoshua Bengio"]);
    assert!(
        server.requests()[0]
            .path
            .contains("query.bibliographic=deep+learning")
    );
}

#[tokio::test]
async fn semantic_scholar_searxng_and_brave() {
    let s2 = ReplayServer::start(vec![fixture("semantic_scholar_search.http")])
        .await
        .unwrap();
    let source = academic::SemanticScholar::new(&settings(SourceKind::SemanticScholar, &s2.url()));
    let r = search(&source, "attention").await.unwrap().records;
    assert_eq!(r.len(), 2);
    assert_eq!(
        r[0].url.as_deref(),
        Some("https://arxiv.org/abs/1706.03762")
    );
    assert_eq!(r[0].citations, Some(120_000));
    assert_eq!(r[1].url.as_deref(), Some("https://doi.org/10.1145/3505244"));
    assert_eq!(r[1].snippet, "");
    assert_eq!(s2.requests()[0].header("x-api-key"), Some(KEY));

    let searx = ReplayServer::start(vec![fixture("searxng_search.http")])
        .await
        .unwrap();
    let source = web::Searxng::new(&settings(SourceKind::Searxng, &searx.url()));
    let r = search(&source, "transformer attention")
        .await
        .unwrap()
        .records;
    assert_eq!(r.len(), 2);
    assert_eq!(
        r[0].snippet,
        "A transformer is a deep learning architecture based on the multi-head attention mechanism."
    );
    assert_eq!(r[1].date.as_deref(), Some("2025-03-01"));
    assert!(searx.requests()[0].path.ends_with("format=json"));

    let forbidden = ReplayServer::start(vec![fixture("searxng_403.http")])
        .await
        .unwrap();
    let source = web::Searxng::new(&settings(SourceKind::Searxng, &forbidden.url()));
    let err = search(&source, "x").await.unwrap_err().to_string();
    assert!(
        err.contains("HTTP 403") && err.contains("search.formats"),
        "{err}"
    );

    let brave = ReplayServer::start(vec![fixture("brave_search.http")])
        .await
        .unwrap();
    let source = web::Brave::new(&settings(SourceKind::Brave, &brave.url()));
    let r = search(&source, "transformer attention")
        .await
        .unwrap()
        .records;
    assert_eq!(r.len(), 3);
    assert_eq!(r[0].title, "The Illustrated Transformer");
    assert_eq!(r[0].date.as_deref(), Some("2018-06-27"));
    let request = &brave.requests()[0];
    assert_eq!(request.header("x-subscription-token"), Some(KEY));
    assert!(
        request
            .path
            .starts_with("/res/v1/web/search?q=transformer+attention")
    );
}

#[tokio::test]
async fn feeds_use_conditional_get_and_both_date_formats() {
    let rss = ReplayServer::start(vec![
        fixture("feed_rss.http"),
        fixture("feed_not_modified.http"),
    ])
    .await
    .unwrap();
    let atom = ReplayServer::start(vec![fixture("feed_atom.http")])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let library = Arc::new(Library::open(&dir.path().join("lib.sqlite3")).unwrap());
    let mut s = settings(SourceKind::Feeds, "");
    s.urls = vec![
        format!("{}/feed.xml", rss.url()),
        format!("{}/atom", atom.url()),
    ];
    let feeds = web::Feeds::new(&s);
    let ctx = context(Some(library.clone()));
    let first = feeds
        .search(&query("transformer attention"), &ctx)
        .await
        .unwrap();
    let titles: Vec<&str> = first.records.iter().map(|r| r.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "Why attention scales",
            "Transformers now power most language models"
        ],
        "the duplicate guid and the unrelated item are gone; equal matches newest first"
    );
    // RFC 822 with an offset, and RFC 3339 with an offset, both to the UTC date.
    assert_eq!(first.records[1].date.as_deref(), Some("2026-11-21"));
    assert_eq!(first.records[0].date.as_deref(), Some("2026-11-22"));
    assert_eq!(first.records[1].venue.as_deref(), Some("ML Weekly"));
    assert_eq!(first.records[1].authors, ["Sam Writer"]);
    assert_eq!(
        first.records[0].url.as_deref(),
        Some("https://blog.example.com/attention-scales")
    );

    let second = feeds
        .search(&query("transformer attention"), &ctx)
        .await
        .unwrap();
    let requests = rss.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].header("if-none-match"), None);
    assert_eq!(requests[1].header("if-none-match"), Some("\"rss-v1\""));
    assert_eq!(
        requests[1].header("if-modified-since"),
        Some("Sat, 21 Nov 2026 10:00:00 GMT")
    );
    assert_eq!(second.records[1].title, first.records[1].title);
    // The Atom server only had one answer scripted; it repeats it (no ETag match needed).
    assert!(second.cached.is_none(), "{:?}", second.cached);
}

#[tokio::test]
async fn faults_are_errors_that_say_what_happened() {
    // 429 with a Retry-After longer than the time left: reported, not waited for.
    let server = ReplayServer::start(vec![fixture("rate_limited_429.http")])
        .await
        .unwrap();
    let source =
        academic::SemanticScholar::new(&settings(SourceKind::SemanticScholar, &server.url()));
    let err = search(&source, "x").await.unwrap_err();
    assert_eq!(
        err,
        SourceError::Http {
            status: 429,
            message: "rate limited (retry after 30s): Too Many Requests. Please wait and try again or apply for a key for higher rate limits.".to_owned()
        }
    );
    assert_eq!(server.requests().len(), 1);

    // 429 with Retry-After: 0 is retried and then succeeds.
    let server = ReplayServer::start(vec![
        Reply::Http {
            head: "HTTP/1.1 429 Too Many Requests\nretry-after: 0".to_owned(),
            body: String::new(),
        },
        fixture("crossref_works.http"),
    ])
    .await
    .unwrap();
    let source = academic::Crossref::new(&settings(SourceKind::Crossref, &server.url()));
    assert_eq!(search(&source, "x").await.unwrap().records.len(), 3);
    assert_eq!(server.requests().len(), 2);

    // 500s are retried twice, then reported.
    let server = ReplayServer::start(vec![fixture("server_error_500.http")])
        .await
        .unwrap();
    let source = academic::OpenAlex::new(&settings(SourceKind::OpenAlex, &server.url()));
    let err = search(&source, "x").await.unwrap_err();
    assert_eq!(err.to_string(), "HTTP 500: internal error");
    assert_eq!(server.requests().len(), 3);

    // A server that never answers: the source's timeout.
    let server = ReplayServer::start(vec![Reply::Hang]).await.unwrap();
    let mut s = settings(SourceKind::Crossref, &server.url());
    s.timeout = Duration::from_millis(300);
    let err = search(&academic::Crossref::new(&s), "x").await.unwrap_err();
    assert!(matches!(err, SourceError::Timeout(_)), "{err}");

    // A body cut mid-JSON.
    let server = ReplayServer::start(vec![fixture("malformed_json.http")])
        .await
        .unwrap();
    let source = academic::OpenAlex::new(&settings(SourceKind::OpenAlex, &server.url()));
    let err = search(&source, "x").await.unwrap_err().to_string();
    assert!(
        err.starts_with("expected an OpenAlex works page, found invalid JSON"),
        "{err}"
    );

    // An answer far larger than any search page: refused without reading it all.
    let server = ReplayServer::start(vec![Reply::Http {
        head: "HTTP/1.1 200 OK\ncontent-type: application/json".to_owned(),
        body: format!("{{\"results\": \"{}\"}}", "x".repeat(9 << 20)),
    }])
    .await
    .unwrap();
    let source = academic::OpenAlex::new(&settings(SourceKind::OpenAlex, &server.url()));
    let err = search(&source, "x").await.unwrap_err().to_string();
    assert!(
        err.starts_with("expected an answer of at most 8 MiB"),
        "{err}"
    );

    // Valid JSON of the wrong shape, and XML that is not a feed.
    let err = academic::parse_crossref("{\"message\":{}}", "now")
        .unwrap_err()
        .to_string();
    assert!(err.contains("message.items"), "{err}");
    let err = web::parse_feed("<html><body/></html>", "now")
        .unwrap_err()
        .to_string();
    assert!(err.contains("found <html>"), "{err}");
    assert!(web::parse_brave("[]", "now").is_err());
    assert!(web::parse_brave("{}", "now").unwrap().is_empty());

    // Nobody listening.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let source = academic::Crossref::new(&settings(
        SourceKind::Crossref,
        &format!("http://127.0.0.1:{port}"),
    ));
    let err = search(&source, "x").await.unwrap_err();
    assert_eq!(err, SourceError::Transport("connection refused".to_owned()));
}

#[tokio::test]
async fn a_failing_provider_falls_back_to_its_cached_answer() {
    let server = ReplayServer::start(vec![
        fixture("crossref_works.http"),
        fixture("server_error_500.http"),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let library = Arc::new(Library::open(&dir.path().join("lib.sqlite3")).unwrap());
    let source = academic::Crossref::new(&settings(SourceKind::Crossref, &server.url()));
    let ctx = context(Some(library));
    let fresh = source.search(&query("deep learning"), &ctx).await.unwrap();
    assert!(fresh.cached.is_none());
    let stale = source.search(&query("deep learning"), &ctx).await.unwrap();
    assert_eq!(
        stale.records,
        fresh
            .records
            .iter()
            .map(|r| SourceRecord {
                retrieved_at: stale.records[0].retrieved_at.clone(),
                ..r.clone()
            })
            .collect::<Vec<_>>()
    );
    let why = stale.cached.unwrap();
    assert!(
        why.starts_with("HTTP 500: internal error; used the answer cached at 20"),
        "{why}"
    );
}

#[tokio::test]
async fn one_paper_from_four_providers_is_one_source_and_failures_are_reported() {
    let openalex = ReplayServer::start(vec![fixture("openalex_works.http")])
        .await
        .unwrap();
    let arxiv = ReplayServer::start(vec![fixture("arxiv_query.http")])
        .await
        .unwrap();
    let crossref = ReplayServer::start(vec![fixture("crossref_works.http")])
        .await
        .unwrap();
    let s2 = ReplayServer::start(vec![fixture("semantic_scholar_search.http")])
        .await
        .unwrap();
    let brave = ReplayServer::start(vec![fixture("server_error_500.http")])
        .await
        .unwrap();
    let searx = ReplayServer::start(vec![Reply::Hang]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
[research]
library = "{lib}"
[research.sources.openalex]
base_url = "{openalex}"
min_interval_ms = 0
[research.sources.arxiv]
base_url = "{arxiv}"
min_interval_ms = 0
[research.sources.crossref]
base_url = "{crossref}"
[research.sources.semantic_scholar]
base_url = "{s2}"
[research.sources.brave]
base_url = "{brave}"
[research.sources.searxng]
enabled = true
base_url = "{searx}"
timeout_secs = 0.5
"#,
        lib = dir.path().join("lib.sqlite3").display(),
        openalex = openalex.url(),
        arxiv = arxiv.url(),
        crossref = crossref.url(),
        s2 = s2.url(),
        brave = brave.url(),
        searx = searx.url(),
    );
    let (config, problems) = Config::from_toml_str(&text, ValueSource::Default);
    assert!(problems.is_empty(), "{problems:?}");
    let mut research = Research::new(&config).unwrap();
    research.set_model(None);
    let phases = Mutex::new(Vec::<(Phase, u8)>::new());
    let run = research
        .run(
            "attention transformer",
            RunOptions {
                sources: Some(
                    [
                        "openalex",
                        "arxiv",
                        "crossref",
                        "semantic_scholar",
                        "brave",
                        "searxng",
                    ]
                    .map(String::from)
                    .to_vec(),
                ),
                ..RunOptions::default()
            },
            &|phase, percent, _| phases.lock().unwrap().push((phase, percent)),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let record = &run.record;
    let paper: Vec<_> = record
        .sources
        .iter()
        .filter(|s| s.arxiv_id.as_deref() == Some("1706.03762"))
        .collect();
    assert_eq!(paper.len(), 1, "{:#?}", record.sources);
    let mut providers = paper[0].providers.clone();
    providers.sort();
    assert_eq!(
        providers,
        ["arxiv", "crossref", "openalex", "semantic_scholar"]
    );
    assert_eq!(paper[0].citations, Some(120_000));
    let retracted: Vec<_> = record.sources.iter().filter(|s| s.retracted).collect();
    assert_eq!(retracted.len(), 1, "OpenAlex and Crossref copies merged");
    assert_eq!(retracted[0].credibility.score, 0.0);
    assert_eq!(retracted[0].n, None, "a retracted source is never cited");
    let status: Vec<(&str, &str)> = record
        .outcomes
        .iter()
        .map(|o| (o.provider.as_str(), o.status.as_str()))
        .collect();
    assert_eq!(
        status,
        [
            ("arxiv", "ok"),
            ("brave", "failed"),
            ("crossref", "ok"),
            ("openalex", "ok"),
            ("searxng", "timeout"),
            ("semantic_scholar", "ok")
        ]
    );
    assert_eq!(record.status, "partial");
    assert_eq!(record.synthesis_kind, "extractive");
    assert!(
        record
            .synthesis
            .starts_with("*Extractive synthesis — no model is configured for research.")
    );
    for s in &record.sources {
        let b = &s.credibility.breakdown;
        assert!(b.contains(" = ") || b.starts_with("retracted → 0"), "{b}");
    }
    // Phases in order, percentages never going back.
    let phases = phases.into_inner().unwrap();
    let order: Vec<Phase> = phases.iter().fold(Vec::new(), |mut acc, (p, _)| {
        if acc.last() != Some(p) {
            acc.push(*p);
        }
        acc
    });
    assert_eq!(order, Phase::ALL);
    assert!(phases.windows(2).all(|w| w[0].1 <= w[1].1), "{phases:?}");
    assert_eq!(phases.last(), Some(&(Phase::Saved, 100)));
    // Saved, and the report is on disk.
    let saved = research.library().get(&record.id).unwrap();
    assert_eq!(&saved, record);
    let report = std::fs::read_to_string(&run.report).unwrap();
    assert!(report.contains("## Sources"));
    assert!(report.contains("**RETRACTED**"));
}

#[tokio::test]
async fn cancelling_stops_outstanding_requests_and_saves_nothing() {
    let hang = ReplayServer::start(vec![Reply::Hang]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[research]\nlibrary = \"{}\"\n[research.sources.crossref]\nbase_url = \"{}\"\ntimeout_secs = 60\n",
        dir.path().join("lib.sqlite3").display(),
        hang.url()
    );
    let (config, _) = Config::from_toml_str(&text, ValueSource::Default);
    let mut research = Research::new(&config).unwrap();
    research.set_model(None);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let result = research
        .run(
            "anything at all",
            RunOptions {
                sources: Some(vec!["crossref".to_owned()]),
                ..RunOptions::default()
            },
            &|_, _, _| {},
            cancel,
        )
        .await;
    assert!(matches!(
        result,
        Err(patchwise::research::ResearchError::Cancelled)
    ));
    assert_eq!(research.library().count().unwrap(), 0);
    // The stalled request was abandoned.
    for _ in 0..250 {
        if hang.disconnects() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(hang.disconnects(), 1);
}

/// A model that thinks for a while, then cites one real source and one that does not exist.
struct SlowModel {
    delay: Duration,
}

impl patchwise::model::ChatModel for SlowModel {
    fn name(&self) -> &str {
        "double/slow"
    }

    fn context_window(&self) -> usize {
        8192
    }

    fn chat(
        &self,
        _request: patchwise::model::ChatRequest,
        _cancel: CancellationToken,
    ) -> patchwise::model::ChatStream {
        use futures::StreamExt;
        use patchwise::model::{FinishReason, StreamEvent, Usage};
        let events = vec![
            Ok(StreamEvent::TextDelta {
                text: "Deep learning learns layered representations [1]. Also [7].".to_owned(),
            }),
            Ok(StreamEvent::Done {
                finish: FinishReason::Stop,
                usage: Usage {
                    input_tokens: 100,
                    output_tokens: 12,
                },
            }),
        ];
        Box::pin(
            futures::stream::once(tokio::time::sleep(self.delay))
                .flat_map(move |_| futures::stream::iter(events.clone())),
        )
    }
}

#[tokio::test]
async fn a_heartbeat_is_reported_while_the_model_writes() {
    let crossref = ReplayServer::start(vec![fixture("crossref_works.http")])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[research]\nlibrary = \"{}\"\nheartbeat_secs = 1\n[research.sources.crossref]\nbase_url = \"{}\"\n",
        dir.path().join("lib.sqlite3").display(),
        crossref.url()
    );
    let (config, problems) = Config::from_toml_str(&text, ValueSource::Default);
    assert!(problems.is_empty(), "{problems:?}");
    let mut research = Research::new(&config).unwrap();
    research.set_model(Some(Arc::new(SlowModel {
        delay: Duration::from_millis(3500),
    })));
    let messages = Mutex::new(Vec::<(Phase, u8, String)>::new());
    let run = research
        .run(
            "deep learning representations",
            RunOptions {
                sources: Some(vec!["crossref".to_owned()]),
                ..RunOptions::default()
            },
            &|phase, percent, message| {
                messages
                    .lock()
                    .unwrap()
                    .push((phase, percent, message.to_owned()))
            },
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let messages = messages.into_inner().unwrap();
    let beats: Vec<&(Phase, u8, String)> = messages
        .iter()
        .filter(|(p, _, m)| *p == Phase::Synthesis && m.contains("characters so far"))
        .collect();
    assert!(beats.len() >= 2, "{messages:#?}");
    assert!(beats.windows(2).all(|w| w[0].1 <= w[1].1));
    let record = &run.record;
    assert_eq!(record.model.as_deref(), Some("double/slow"));
    assert_eq!(
        record.synthesis,
        "Deep learning learns layered representations [1]. Also."
    );
    assert!(
        record.notes[0].contains("removed citation marker [7]"),
        "{:?}",
        record.notes
    );
    // The synthesis alone (the model's check of its citations is off by default), 100 input
    // tokens.
    assert_eq!(record.input_tokens, 100);
    let cited: Vec<&SourceRecord> = record.sources.iter().filter(|s| s.n.is_some()).collect();
    assert_eq!(cited.len(), 1);
    assert_eq!(record.sources[0].n, Some(1));
    assert_eq!(record.claims.len(), 1);
    assert_eq!(record.claims[0].sources, [cited[0].key.clone()]);
    assert_eq!(record.claims[0].independent_domains, 1);
}

fn quiet(_: Phase, _: u8, _: &str) {}

/// The editor spawns runs on its runtime: the future must be `Send`.
#[allow(dead_code)]
fn a_run_can_be_spawned(research: &Research) -> impl std::future::Future + Send + '_ {
    research.run("q", RunOptions::default(), &quiet, CancellationToken::new())
}

/// The editor keeps one engine and shares it between requests.
#[allow(dead_code)]
fn the_engine_can_be_shared() {
    fn shared<T: Send + Sync>() {}
    shared::<Research>();
    shared::<Library>();
}
