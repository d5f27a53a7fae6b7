use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Id of the padding token.
pub const PAD_TOKEN: u32 = 0;
/// Id of the end-of-sequence token.
pub const EOS_TOKEN: u32 = 1;
/// Id of the unknown-word token.
pub const UNK_TOKEN: u32 = 2;
const SPECIALS: [&str; 3] = ["<pad>", "<eos>", "<unk>"];

/// A whitespace word-level tokenizer built from a corpus, for from-scratch models.
///
/// Texts are split on whitespace; unknown words become `<unk>`. Decoding joins words with one
/// space, so it round-trips texts whose words are separated by single spaces.
///
/// ```
/// use envrl::Tokenizer;
/// let tok = envrl_algos::WordTokenizer::from_corpus(["go north", "take key"]);
/// let ids = tok.encode("take key");
/// assert_eq!(tok.decode(&ids), "take key");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WordTokenizer {
    words: Vec<String>,
    #[serde(skip)]
    index: HashMap<String, u32>,
}

impl WordTokenizer {
    /// Builds the vocabulary: the special tokens, then every distinct word in sorted order.
    pub fn from_corpus<'a>(texts: impl IntoIterator<Item = &'a str>) -> Self {
        let mut words: Vec<String> = texts
            .into_iter()
            .flat_map(str::split_whitespace)
            .filter(|w| !SPECIALS.contains(w))
            .map(str::to_string)
            .collect();
        words.sort();
        words.dedup();
        let words: Vec<String> = SPECIALS
            .iter()
            .map(|s| s.to_string())
            .chain(words)
            .collect();
        Self::from_words(words)
    }

    fn from_words(words: Vec<String>) -> Self {
        let index = words
            .iter()
            .enumerate()
            .map(|(i, w)| (w.clone(), i as u32))
            .collect();
        Self { words, index }
    }

    /// Writes the vocabulary as JSON.
    ///
    /// # Errors
    /// [`Error::Tokenizer`] when the file cannot be written.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let json = serde_json::to_vec(self).map_err(|e| Error::Tokenizer {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        std::fs::write(path, json).map_err(|e| Error::Tokenizer {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
    }

    /// Reads a vocabulary written by [`WordTokenizer::save`].
    ///
    /// # Errors
    /// [`Error::Tokenizer`] when the file is unreadable, not JSON, or lacks the special tokens.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let fail = |reason: String| Error::Tokenizer {
            path: path.to_path_buf(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
        let raw: WordTokenizer = serde_json::from_str(&text).map_err(|e| fail(e.to_string()))?;
        if raw.words.len() < SPECIALS.len() || raw.words[..SPECIALS.len()] != SPECIALS {
            return Err(fail(
                "the vocabulary does not start with <pad> <eos> <unk>".into(),
            ));
        }
        Ok(Self::from_words(raw.words))
    }
}

impl envrl::Tokenizer for WordTokenizer {
    fn encode(&self, text: &str) -> Vec<u32> {
        text.split_whitespace()
            .map(|w| self.index.get(w).copied().unwrap_or(UNK_TOKEN))
            .collect()
    }

    fn decode(&self, ids: &[u32]) -> String {
        ids.iter()
            .filter(|&&id| id as usize >= SPECIALS.len())
            .filter_map(|&id| self.words.get(id as usize).map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn vocab_size(&self) -> usize {
        self.words.len()
    }

    fn eos_id(&self) -> u32 {
        EOS_TOKEN
    }

    fn pad_id(&self) -> u32 {
        PAD_TOKEN
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use envrl::Tokenizer;

    #[test]
    fn unknown_words_map_to_unk_and_specials_are_skipped() {
        let tok = WordTokenizer::from_corpus(["a b"]);
        assert_eq!(tok.encode("a zz"), vec![3, UNK_TOKEN]);
        assert_eq!(tok.decode(&[3, EOS_TOKEN, 4]), "a b");
    }

    #[test]
    fn save_load_round_trip_and_bad_file_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vocab.json");
        let tok = WordTokenizer::from_corpus(["x y z"]);
        tok.save(&path).unwrap();
        assert_eq!(WordTokenizer::load(&path).unwrap(), tok);
        std::fs::write(&path, "[1,2").unwrap();
        let err = WordTokenizer::load(&path).unwrap_err().to_string();
        assert!(err.contains("vocab.json"), "{err}");
    }
}
