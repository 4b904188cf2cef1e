//! Research benchmarks (fan-out latency and library search):
//! - `fanout`: a whole run over six providers answering after 100–600 ms (sum 2.1 s, slowest
//!   0.6 s), served on 127.0.0.1 from the recorded fixtures, with the extractive synthesis and
//!   with a scripted model that answers after 200 ms. Goal: ≤ 1.2 × slowest + synthesis.
//! - `library`: search over 10,000 saved research records (FTS5), against `list` as the baseline.
//!
//! `cargo bench --bench research -- --quick` (or `--sample-size 10`).

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use patchwise::config::{Config, ValueSource};
use patchwise::research::{Research, RunOptions};
use patchwise::store::{Claim, Credibility, Library, ResearchRecord, SourceRecord, id_from};

/// Serves the raw HTTP response in `fixture` after `delay`, to every connection.
async fn delayed_server(fixture: &str, delay: Duration) -> String {
    let text = std::fs::read_to_string(format!(
        "{}/fixtures/research/{fixture}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let text: String = text
        .lines()
        .skip_while(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let (head, body) = text.split_once("\n\n").unwrap();
    let response = format!(
        "{}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        head.lines().collect::<Vec<_>>().join("\r\n"),
        body.len()
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let response = Arc::new(response);
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                continue;
            };
            let response = response.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16384];
                let mut read = Vec::new();
                let head_end = loop {
                    if let Some(p) = read.windows(4).position(|w| w == b"\r\n\r\n") {
                        break p + 4;
                    }
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => read.extend_from_slice(&buf[..n]),
                    }
                };
                // A POST (the model request) has a body: read all of it before answering.
                let head = String::from_utf8_lossy(&read[..head_end]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                while read.len() < head_end + length {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => read.extend_from_slice(&buf[..n]),
                    }
                }
                tokio::time::sleep(delay).await;
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    url
}

fn fanout(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let latencies = [
        ("openalex", "openalex_works.http", 100),
        ("arxiv", "arxiv_query.http", 200),
        ("crossref", "crossref_works.http", 300),
        ("semantic_scholar", "semantic_scholar_search.http", 400),
        ("brave", "brave_search.http", 500),
        ("searxng", "searxng_search.http", 600),
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut toml = format!(
        "[research]\nlibrary = \"{}\"\n",
        dir.path().join("lib.sqlite3").display()
    );
    runtime.block_on(async {
        for (name, fixture, ms) in latencies {
            let url = delayed_server(fixture, Duration::from_millis(ms)).await;
            toml.push_str(&format!(
                "[research.sources.{name}]\nbase_url = \"{url}\"\nmin_interval_ms = 0\nenabled = true\n"
            ));
        }
        let model = delayed_server("model_synthesis.http", Duration::from_millis(200)).await;
        toml.push_str(&format!(
            "[providers.bench]\nbase_url = \"{model}/v1\"\n[roles]\ncoder = \"bench/scripted\"\n"
        ));
    });
    let (config, problems) = Config::from_toml_str(&toml, ValueSource::Default);
    assert!(problems.is_empty(), "{problems:?}");
    let names: Vec<String> = latencies.iter().map(|(n, _, _)| n.to_string()).collect();
    let options = RunOptions {
        sources: Some(names),
        depth: Some(1),
        ..RunOptions::default()
    };
    let sum: u64 = latencies.iter().map(|(_, _, ms)| ms).sum();
    eprintln!("six sources: sum of latencies {sum} ms, slowest 600 ms, model 200 ms");

    let mut group = c.benchmark_group("research_fanout");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(12));
    let mut extractive = Research::new(&config).unwrap();
    extractive.set_model(None);
    group.bench_function("six_sources_extractive", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let run = extractive
                    .run(
                        "attention transformer",
                        options.clone(),
                        &|_, _, _| {},
                        CancellationToken::new(),
                    )
                    .await
                    .unwrap();
                assert_eq!(run.record.status, "complete", "{:?}", run.record.outcomes);
            })
        })
    });
    let with_model = Research::new(&config).unwrap();
    group.bench_function("six_sources_with_model", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let run = with_model
                    .run(
                        "attention transformer",
                        options.clone(),
                        &|_, _, _| {},
                        CancellationToken::new(),
                    )
                    .await
                    .unwrap();
                assert_eq!(run.record.synthesis_kind, "model", "{:?}", run.record.notes);
            })
        })
    });
    group.finish();
}

fn record(i: u64) -> ResearchRecord {
    const TOPICS: [&str; 8] = [
        "tidal locking of exoplanets",
        "rust borrow checker lifetimes",
        "transformer attention scaling",
        "sqlite write ahead logging",
        "coral reef bleaching",
        "quantum error correction codes",
        "urban heat islands",
        "protein folding prediction",
    ];
    let topic = TOPICS[(i % 8) as usize];
    let sources = (0..5)
        .map(|k| SourceRecord {
            key: format!("url:example{k}.org/{i}"),
            provider: "brave".to_owned(),
            providers: vec!["brave".to_owned()],
            provider_id: format!("{i}-{k}"),
            url: Some(format!("https://example{k}.org/{i}")),
            title: format!("{topic}: study {i} part {k}"),
            venue_type: "web".to_owned(),
            snippet: format!(
                "Record {i} source {k} discusses {topic} with measurements, methods and a discussion of limitations number {}.",
                i * 7 + k
            ),
            retrieved_at: "2026-11-22T00:00:00Z".to_owned(),
            n: Some(k as u32 + 1),
            credibility: Credibility {
                tier: "web page".to_owned(),
                base: 0.4,
                citation_factor: 1.0,
                corroboration_factor: 1.0,
                recency_factor: 1.0,
                score: 0.4,
                breakdown: "web page 0.40 = 0.40".to_owned(),
                ..Credibility::default()
            },
            ..SourceRecord::default()
        })
        .collect::<Vec<_>>();
    ResearchRecord {
        id: id_from(1_700_000_000_000 + i, i),
        query: format!("question {i} about {topic}"),
        created_at: "2026-11-22T00:00:00Z".to_owned(),
        status: "complete".to_owned(),
        synthesis: format!("Synthesis {i}: {topic} is well studied [1][2]. Unique token zq{i}x."),
        synthesis_kind: "model".to_owned(),
        claims: vec![Claim {
            n: 1,
            text: format!("{topic} is well studied"),
            sources: vec![sources[0].key.clone(), sources[1].key.clone()],
            independent_domains: 2,
            ..Claim::default()
        }],
        sources,
        ..ResearchRecord::default()
    }
}

fn library(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let library = Library::open(&dir.path().join("lib.sqlite3")).unwrap();
    let started = std::time::Instant::now();
    for i in 0..10_000 {
        library.save(&record(i)).unwrap();
    }
    eprintln!(
        "saved 10,000 records (5 sources, 1 claim each) in {:.1} s ({:.2} ms per save)",
        started.elapsed().as_secs_f64(),
        started.elapsed().as_secs_f64() * 1000.0 / 10_000.0
    );
    let mut group = c.benchmark_group("research_library_10k");
    group.bench_function("list_50_baseline", |b| b.iter(|| library.list(50).unwrap()));
    group.bench_function("search_common_phrase", |b| {
        b.iter(|| library.search("transformer attention", 50).unwrap())
    });
    group.bench_function("search_rare_token", |b| {
        b.iter(|| {
            let hits = library.search("zq4242x", 50).unwrap();
            assert_eq!(hits.len(), 1);
        })
    });
    group.bench_function("search_sources_for_a_question", |b| {
        b.iter(|| {
            library
                .search_sources("how does coral reef bleaching work", 10)
                .unwrap()
        })
    });
    group.bench_function("get_record", |b| {
        let id = id_from(1_700_000_000_000 + 4242, 4242);
        b.iter(|| library.get(&id).unwrap())
    });
    group.finish();
}

criterion_group!(benches, fanout, library);
criterion_main!(benches);
