//! A part's passages ranked by meaning as well as by words: with an embedding model configured
//! (`[research] embeddings`), the order the words give a part's passages
//! ([`crate::research::parts::asked_over`]) is fused with their order by the cosine of the part
//! and the passage, by reciprocal ranks (each order gives a passage `1 / (K + place)`; the
//! largest sum first).
//!
//! Why: a user asks in the words of a problem ("open under my prompt instead of taking over the
//! whole terminal") and the documentation answers in the words of a feature (`--height`); the
//! words the part and the passages share do not tell the answer apart. Over the 178 located
//! parts of eleven corpora, with all-MiniLM-L6-v2, the three passages each part was asked over
//! held a located sentence for 133 parts against 120 by the words alone, and Qwen2.5-Coder-1.5B
//! picked a located sentence for 97 against 89 (docs/research.md, "Searched by meaning"). The
//! words' order stays one of the two: the cosine alone put fewer answers in the first three.
//! Comparing the part with each sentence too found a few more, for ten times the texts to
//! embed; a passage is embedded once a run, whichever parts it is ranked for.
//!
//! The sentences a model picked for a part are taken nearest the part first
//! ([`Meaning::nearest_first`]): the report prints the first and the others of its passage, and
//! the model's first was a located sentence for 90 of 178 parts, the nearest of its picks for 95.
//!
//! An embedding that fails (the server down, an answer of the wrong shape, the time gone) leaves
//! the words' order as it was, with a note; nothing else changes.

use std::time::Instant;

use crate::model::embeddings::Embedder;
use crate::store::SourceRecord;

/// The constant of the reciprocal ranks: small, so the first places weigh most (measured: 10
/// put more answers among the first three than 5 or 30).
const K: f64 = 10.0;

/// A passage's text as it is embedded: its heading and its text, cut at a length an encoder of
/// a few hundred tokens reads whole.
fn passage_text(s: &SourceRecord) -> String {
    let heading = s.title.split_once(" \u{2014} ").map_or("", |(_, h)| h);
    format!("{heading}\n{}", s.snippet)
        .chars()
        .take(2000)
        .collect()
}

/// `ranked` (indices into the passages, best first) fused with the order of `cos` (one score
/// per entry of `ranked`, larger is nearer) by reciprocal ranks; ties keep the order of
/// `ranked`.
pub fn fused(ranked: &[usize], cos: &[f64]) -> Vec<usize> {
    let n = ranked.len();
    let mut score: Vec<f64> = (0..n).map(|place| 1.0 / (K + place as f64)).collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|a, b| cos[*b].total_cmp(&cos[*a]).then(a.cmp(b)));
    for (place, i) in order.into_iter().enumerate() {
        score[i] += 1.0 / (K + place as f64);
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|a, b| score[*b].total_cmp(&score[*a]).then(a.cmp(b)));
    order.into_iter().map(|i| ranked[i]).collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        dot += f64::from(*x) * f64::from(*y);
        na += f64::from(*x) * f64::from(*x);
        nb += f64::from(*y) * f64::from(*y);
    }
    if na <= 0.0 || nb <= 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// The passages of a run by meaning: their vectors, made once, and the embedder for the parts'.
pub struct Meaning<'a> {
    embedder: &'a dyn Embedder,
    passages: Vec<Vec<f32>>,
}

impl<'a> Meaning<'a> {
    /// Embeds `candidates` (one call), or says why not, before `deadline`.
    pub async fn of(
        embedder: &'a dyn Embedder,
        candidates: &[SourceRecord],
        deadline: Instant,
    ) -> Result<Meaning<'a>, String> {
        let texts: Vec<String> = candidates.iter().map(passage_text).collect();
        let passages = embedded(embedder, &texts, deadline).await?;
        Ok(Meaning { embedder, passages })
    }

    /// `ranked` (indices into the candidates) re-ranked for `part` ([`fused`]), with one call
    /// for the part's vector; the order as it was, and why, when it fails.
    pub async fn reranked(
        &self,
        part: &str,
        ranked: Vec<usize>,
        deadline: Instant,
    ) -> (Vec<usize>, Option<String>) {
        if ranked.len() < 2 {
            return (ranked, None);
        }
        let part_vector = match embedded(self.embedder, &[part.to_owned()], deadline).await {
            Ok(mut v) => v.remove(0),
            Err(why) => return (ranked, Some(why)),
        };
        let cos: Vec<f64> = ranked
            .iter()
            .map(|i| {
                self.passages
                    .get(*i)
                    .map_or(0.0, |v| cosine(&part_vector, v))
            })
            .collect();
        (fused(&ranked, &cos), None)
    }

    /// The indices of `texts` (the sentences a part may be answered by, in the order of the
    /// words, [`crate::research::extractive::choices`]) in that order fused with their order
    /// by the cosine of the part and the sentence ([`fused`]). One call for the part and the
    /// texts together.
    pub async fn fused_order(
        &self,
        part: &str,
        texts: &[String],
        deadline: Instant,
    ) -> Result<Vec<usize>, String> {
        if texts.len() < 2 {
            return Ok((0..texts.len()).collect());
        }
        let cos = self.cosines(part, texts, deadline).await?;
        let words: Vec<usize> = (0..texts.len()).collect();
        Ok(fused(&words, &cos))
    }

    /// The indices of `texts` (sentences a model picked for `part`), nearest the part first;
    /// ties keep their order. One call for the part and the texts together.
    pub async fn nearest_first(
        &self,
        part: &str,
        texts: &[String],
        deadline: Instant,
    ) -> Result<Vec<usize>, String> {
        let cos = self.cosines(part, texts, deadline).await?;
        Ok(nearest_order(&cos))
    }

    /// The cosine of `part` and each of `texts`, from one call for them together.
    async fn cosines(
        &self,
        part: &str,
        texts: &[String],
        deadline: Instant,
    ) -> Result<Vec<f64>, String> {
        let mut all = vec![part.to_owned()];
        all.extend(texts.iter().cloned());
        let vectors = embedded(self.embedder, &all, deadline).await?;
        Ok(vectors[1..]
            .iter()
            .map(|v| cosine(&vectors[0], v))
            .collect())
    }
}

/// The indices of `cos`, the nearest (the larger cosine) first; ties keep their order.
fn nearest_order(cos: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..cos.len()).collect();
    order.sort_by(|a, b| cos[*b].total_cmp(&cos[*a]).then(a.cmp(b)));
    order
}

/// One call to `embedder`, before `deadline`.
async fn embedded(
    embedder: &dyn Embedder,
    texts: &[String],
    deadline: Instant,
) -> Result<Vec<Vec<f32>>, String> {
    let left = deadline.saturating_duration_since(Instant::now());
    match tokio::time::timeout(left, embedder.embed(texts)).await {
        Ok(Ok(v)) if v.len() == texts.len() => Ok(v),
        Ok(Ok(v)) => Err(format!(
            "{} gave {} vectors for {} texts",
            embedder.name(),
            v.len(),
            texts.len()
        )),
        Ok(Err(why)) => Err(format!("{} failed: {why}", embedder.name())),
        Err(_) => Err(format!("{} did not answer in time", embedder.name())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_order_is_one_of_two() {
        // Passage 7 is fourth by the words and nearest by meaning: it comes second, after 5,
        // second by both. Passage 3, first by the words and last by meaning, is third.
        let ranked = [3, 5, 1, 7, 2];
        let cos = [0.1, 0.4, 0.3, 0.9, 0.2];
        assert_eq!(fused(&ranked, &cos), vec![5, 7, 3, 1, 2]);
        // Meaning that does not tell them apart leaves the words' order.
        assert_eq!(fused(&ranked, &[0.5; 5]), ranked.to_vec());
    }

    #[test]
    fn the_nearest_pick_comes_first_and_ties_keep_their_order() {
        let part = [1.0, 0.0];
        let picks = [[0.0, 1.0], [1.0, 0.1], [1.0, 1.0], [0.0, 2.0]];
        let cos: Vec<f64> = picks.iter().map(|v| cosine(&part, v)).collect();
        assert_eq!(nearest_order(&cos), vec![1, 2, 0, 3]);
        assert_eq!(nearest_order(&[]), Vec::<usize>::new());
    }

    #[test]
    fn cosines_of_nothing_are_zero() {
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
        assert!((cosine(&[1.0, 1.0], &[2.0, 2.0]) - 1.0).abs() < 1e-9);
    }
}
