//! WebShop's search engine: Lucene 8.3 `BM25Similarity` (k1 0.9, b 0.4, float32, one-byte
//! length norms) over the analysed product documents, top 50, ties by ASIN (WEBSHOP.md §7).

use std::collections::HashMap;

use rayon::prelude::*;

use crate::webshop::analyzer::analyze;
use crate::webshop::catalog::Catalog;

/// How many results a search returns.
pub const TOP_K: usize = 50;
const K1: f32 = 0.9;
const B: f32 = 0.4;

/// An inverted index of the catalog's search documents.
#[derive(Debug, Clone)]
pub struct SearchIndex {
    asins: Vec<String>,
    /// Term → postings `(document, term frequency)`.
    postings: HashMap<String, Vec<(u32, u32)>>,
    /// Per document: its quantised length code.
    norms: Vec<u8>,
    /// `1 / (k1·((1 − b) + b·length/avgdl))` per norm code.
    cache: [f32; 256],
}

impl SearchIndex {
    /// Indexes every product of the catalog (documents of WEBSHOP.md §1.6).
    pub fn new(catalog: &Catalog) -> Self {
        // Analyse the documents in parallel, then merge in document order.
        let analysed: Vec<(u64, Vec<(String, u32)>)> = catalog
            .products
            .par_iter()
            .map(|product| {
                let terms = analyze(&product.search_contents());
                let mut counts: HashMap<String, u32> = HashMap::new();
                for term in &terms {
                    *counts.entry(term.clone()).or_default() += 1;
                }
                let mut counts: Vec<(String, u32)> = counts.into_iter().collect();
                counts.sort_unstable();
                (terms.len() as u64, counts)
            })
            .collect();
        let mut postings: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        let mut lengths = Vec::with_capacity(analysed.len());
        for (doc, (length, counts)) in analysed.into_iter().enumerate() {
            lengths.push(length);
            for (term, tf) in counts {
                postings.entry(term).or_default().push((doc as u32, tf));
            }
        }
        let n = lengths.len().max(1);
        let avgdl = (lengths.iter().sum::<u64>() as f64 / n as f64) as f32;
        let mut cache = [0.0f32; 256];
        for (code, slot) in cache.iter_mut().enumerate() {
            let length = byte4_to_int(code as u8) as f32;
            *slot = 1.0 / (K1 * ((1.0 - B) + B * length / avgdl));
        }
        Self {
            asins: catalog.products.iter().map(|p| p.asin.clone()).collect(),
            postings,
            norms: lengths.iter().map(|&l| int_to_byte4(l as u32)).collect(),
            cache,
        }
    }

    /// The top-50 `(ASIN, score)` for a query, best first, ties by ASIN.
    pub fn search(&self, query: &str) -> Vec<(&str, f32)> {
        self.ranked(query)
            .into_iter()
            .map(|(doc, score)| (self.asins[doc].as_str(), score))
            .collect()
    }

    /// The top-50 `(product index, score)` for a query, best first, ties by ASIN.
    pub fn ranked(&self, query: &str) -> Vec<(usize, f32)> {
        let mut boosts: Vec<(String, u32)> = Vec::new();
        for term in analyze(query) {
            match boosts.iter_mut().find(|(t, _)| *t == term) {
                Some((_, q)) => *q += 1,
                None => boosts.push((term, 1)),
            }
        }
        let n = self.asins.len() as f64;
        let mut scores = vec![0.0f64; self.asins.len()];
        let mut hit = vec![false; self.asins.len()];
        for (term, boost) in &boosts {
            let Some(list) = self.postings.get(term) else {
                continue;
            };
            let df = list.len() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln() as f32;
            let w = *boost as f32 * idf;
            for &(doc, tf) in list {
                let norm = self.cache[self.norms[doc as usize] as usize];
                scores[doc as usize] += (w - w / (1.0 + tf as f32 * norm)) as f64;
                hit[doc as usize] = true;
            }
        }
        let mut results: Vec<(usize, f32)> = (0..self.asins.len())
            .filter(|&d| hit[d])
            .map(|d| (d, scores[d] as f32))
            .collect();
        let order = |a: &(usize, f32), b: &(usize, f32)| {
            b.1.total_cmp(&a.1)
                .then_with(|| self.asins[a.0].cmp(&self.asins[b.0]))
        };
        if results.len() > TOP_K {
            results.select_nth_unstable_by(TOP_K - 1, order);
            results.truncate(TOP_K);
        }
        results.sort_by(order);
        results
    }
}

/// Lucene `SmallFloat.intToByte4`.
fn int_to_byte4(i: u32) -> u8 {
    const NUM_FREE: u32 = 24;
    if i < NUM_FREE {
        return i as u8;
    }
    let x = i - NUM_FREE;
    let nb = 32 - x.leading_zeros();
    let encoded = if nb < 4 {
        x
    } else {
        ((x >> (nb - 4)) & 7) | ((nb - 3) << 3)
    };
    (NUM_FREE + encoded) as u8
}

/// Lucene `SmallFloat.byte4ToInt`.
fn byte4_to_int(b: u8) -> u32 {
    const NUM_FREE: u32 = 24;
    let b = b as u32;
    if b < NUM_FREE {
        return b;
    }
    let i = b - NUM_FREE;
    let bits = i & 7;
    let shift = (i >> 3) as i32 - 1;
    NUM_FREE
        + if shift == -1 {
            bits
        } else {
            (bits | 8) << shift
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lengths_are_exact_and_long_ones_share_codes() {
        for i in 0..24 {
            assert_eq!(byte4_to_int(int_to_byte4(i)), i);
        }
        assert_eq!(int_to_byte4(107), int_to_byte4(108));
        for i in [24, 100, 1919, 100_000] {
            assert!(byte4_to_int(int_to_byte4(i)) <= i);
        }
    }
}
