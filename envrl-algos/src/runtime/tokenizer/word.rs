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
pub(crate) const SPECIALS: [&str; 3] = ["<pad>", "<eos>", "<unk>"];

/// A word-level tokenizer built from a corpus, for from-scratch models.
///
/// Texts are split into words (runs of letters and digits), markup tags such as `<action>`,
/// and single punctuation characters; a piece that follows whitespace carries a leading `▁`,
/// as in SentencePiece (the start of a text counts as whitespace). So `drawer 1` reads as the same two tokens in `a drawer 1, a …` and in
/// `go to drawer 1</action>` — a small model can copy names from its prompt — and decoding
/// restores the text with single spaces. Unknown pieces become `<unk>`.
///
/// ```
/// use envrl::Tokenizer;
/// let tok = envrl_algos::WordTokenizer::from_corpus(["<action>take key</action>", "<action>go north."]);
/// let ids = tok.encode("<action>go north</action>");
/// assert_eq!(ids.len(), 4);
/// assert_eq!(tok.decode(&ids), "<action>go north</action>");
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
            .flat_map(pieces)
            .filter(|w| !SPECIALS.contains(&w.as_str()))
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

    /// The vocabulary, by id: `<pad>`, `<eos>`, `<unk>`, then the pieces (a leading `▁` marks
    /// a piece that follows whitespace).
    pub fn words(&self) -> &[String] {
        &self.words
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

/// Marks a piece that followed whitespace.
const SPACE: char = '\u{2581}';

/// Splits `text` into words, markup tags (`<action>`, `</think>`) and punctuation characters,
/// each prefixed with [`SPACE`] when whitespace preceded it.
fn pieces(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    // As SentencePiece's dummy prefix: a text's first word reads like any word after a space,
    // so an action at the start of a reply is the same tokens as in the prompt's action list.
    let mut spaced = true;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c.is_whitespace() {
            spaced = true;
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let len = if c.is_alphanumeric() {
            rest.find(|c: char| !c.is_alphanumeric())
                .unwrap_or(rest.len())
        } else {
            tag_len(rest).unwrap_or(c.len_utf8())
        };
        let mut piece = String::with_capacity(len + 3);
        if spaced {
            piece.push(SPACE);
        }
        piece.push_str(&rest[..len]);
        out.push(piece);
        spaced = false;
        rest = &rest[len..];
    }
    out
}

/// The length of a markup tag (`<name>` or `</name>`, ASCII letters and `_`) at the start of
/// `text`.
fn tag_len(text: &str) -> Option<usize> {
    let body = text.strip_prefix('<')?;
    let body = body.strip_prefix('/').unwrap_or(body);
    let name = body.find('>')?;
    (name > 0
        && body[..name]
            .chars()
            .all(|c| c.is_ascii_alphabetic() || c == '_'))
    .then(|| text.len() - body.len() + name + 1)
}

impl envrl::Tokenizer for WordTokenizer {
    fn encode(&self, text: &str) -> Vec<u32> {
        pieces(text)
            .into_iter()
            .map(|w| self.index.get(&w).copied().unwrap_or(UNK_TOKEN))
            .collect()
    }

    fn decode(&self, ids: &[u32]) -> String {
        let text: String = ids
            .iter()
            .filter(|&&id| id as usize >= SPECIALS.len())
            .filter_map(|&id| self.words.get(id as usize).map(String::as_str))
            .collect();
        text.replace(SPACE, " ").trim_start().to_string()
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

    fn unk_id(&self) -> Option<u32> {
        Some(UNK_TOKEN)
    }
}

impl WordTokenizer {
    /// The fraction of `text`'s tokens that are unknown words (`<unk>`): text the vocabulary
    /// cannot represent, which a model trained on it cannot learn.
    pub fn unknown_rate(&self, text: &str) -> f64 {
        let ids = envrl::Tokenizer::encode(self, text);
        ids.iter().filter(|&&id| id == UNK_TOKEN).count() as f64 / ids.len().max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use envrl::Tokenizer;

    #[test]
    fn the_unknown_rate_counts_words_outside_the_vocabulary() {
        let tok = WordTokenizer::from_corpus(["reward is 10"]);
        assert_eq!(tok.unknown_rate("reward is 10"), 0.0);
        assert_eq!(tok.unknown_rate("reward 0"), 0.5);
        assert_eq!(tok.unk_id(), Some(UNK_TOKEN));
    }

    #[test]
    fn unknown_words_map_to_unk_and_specials_are_skipped() {
        let tok = WordTokenizer::from_corpus(["a b"]);
        assert_eq!(tok.encode("a zz"), vec![3, UNK_TOKEN]);
        assert_eq!(tok.decode(&[3, EOS_TOKEN, 4]), "a b");
    }

    #[test]
    fn names_read_the_same_inside_tags_and_after_punctuation() {
        let text = "You see a drawer 1, a mug 2.\n<think>Next.</think><action>take mug 2 from drawer 1</action>";
        let tok = WordTokenizer::from_corpus([text]);
        let ids = tok.encode(text);
        assert!(!ids.contains(&UNK_TOKEN));
        assert_eq!(
            tok.decode(&ids),
            "You see a drawer 1, a mug 2. <think>Next.</think><action>take mug 2 from drawer 1</action>"
        );
        let mug = tok.encode(" mug 2");
        assert_eq!(mug.len(), 2);
        let in_list = ids.windows(2).position(|w| w == mug.as_slice());
        let in_action = ids.windows(2).rposition(|w| w == mug.as_slice());
        assert!(in_list.is_some() && in_action > in_list, "{ids:?}");
        let shop = WordTokenizer::from_corpus(["search[red shoes]"]);
        assert_eq!(
            shop.decode(&shop.encode("search[red shoes]")),
            "search[red shoes]"
        );
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
