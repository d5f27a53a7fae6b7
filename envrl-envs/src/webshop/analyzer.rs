//! The search analyzer of WebShop's index (Anserini's `DefaultEnglishAnalyzer`, WEBSHOP.md §7.2):
//! UAX #29 word segmentation → possessive filter → lowercase → 33 stop words → Porter (1980,
//! Martin Porter's reference version).

use std::sync::OnceLock;

use nltk_porter::{Mode, PorterStemmer};
use unicode_properties::{
    GeneralCategory, GeneralCategoryGroup, UnicodeEmoji, UnicodeGeneralCategory,
};
use unicode_segmentation::UnicodeSegmentation;

/// Lucene's English stop words (`EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`).
pub const STOP_WORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

/// Lucene's `StandardTokenizer` maximum token length; longer tokens are cut into pieces.
const MAX_TOKEN_CHARS: usize = 255;

fn stemmer() -> &'static PorterStemmer {
    static STEMMER: OnceLock<PorterStemmer> = OnceLock::new();
    STEMMER.get_or_init(|| PorterStemmer::new(Mode::Martin))
}

/// Porter stems, memoised per thread (vocabularies repeat; the cache is bounded).
fn stem(word: &str) -> String {
    thread_local! {
        static CACHE: std::cell::RefCell<std::collections::HashMap<String, String>> =
            std::cell::RefCell::new(std::collections::HashMap::new());
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(stem) = cache.get(word) {
            return stem.clone();
        }
        if cache.len() >= 200_000 {
            cache.clear();
        }
        let stem = stemmer().stem(word);
        cache.insert(word.to_string(), stem.clone());
        stem
    })
}

/// The analysed terms of `text`, in order, with repetitions.
pub fn analyze(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for segment in text.split_word_bounds() {
        if !segment.chars().any(is_token_char) {
            continue;
        }
        let chars: Vec<char> = segment.chars().collect();
        for piece in chars.chunks(MAX_TOKEN_CHARS) {
            let token: String = piece.iter().collect();
            let token = strip_possessive(&token);
            let lower = java_lowercase(token);
            if lower.is_empty() || STOP_WORDS.contains(&lower.as_str()) {
                continue;
            }
            out.push(stem(&lower));
        }
    }
    out
}

/// Whether a segment holding `c` is a token: letters (other than the half-width sound marks
/// `ﾞ`/`ﾟ`, which are `Extend` in UAX #29 and attach to any preceding character), decimal
/// digits and pictographs. Other numbers (`¼`, `²`) and symbols (`✿`, `◕`) alone make no token, as in
/// Lucene.
fn is_token_char(c: char) -> bool {
    match c.general_category() {
        _ if matches!(c, '\u{FF9E}' | '\u{FF9F}') => false,
        GeneralCategory::DecimalNumber => true,
        _ if c.general_category_group() == GeneralCategoryGroup::Letter => true,
        _ => !c.is_ascii() && (c.is_emoji_char() || is_extended_pictographic(c)),
    }
}

/// `Extended_Pictographic` below U+1F000 (emoji-data 12; everything from U+1F000 to U+1FFFD is
/// pictographic or emoji).
fn is_extended_pictographic(c: char) -> bool {
    matches!(c as u32,
        0x00A9 | 0x00AE | 0x203C | 0x2049 | 0x2122 | 0x2139 | 0x2194..=0x2199 | 0x21A9..=0x21AA
        | 0x231A..=0x231B | 0x2328 | 0x2388 | 0x23CF | 0x23E9..=0x23F3 | 0x23F8..=0x23FA
        | 0x24C2 | 0x25AA..=0x25AB | 0x25B6 | 0x25C0 | 0x25FB..=0x25FE | 0x2600..=0x2605
        | 0x2607..=0x2612 | 0x2614..=0x2685 | 0x2690..=0x2705 | 0x2708..=0x2712 | 0x2714
        | 0x2716 | 0x271D | 0x2721 | 0x2728 | 0x2733..=0x2734 | 0x2744 | 0x2747 | 0x274C
        | 0x274E | 0x2753..=0x2755 | 0x2757 | 0x2763..=0x2767 | 0x2795..=0x2797 | 0x27A1
        | 0x27B0 | 0x27BF | 0x2934..=0x2935 | 0x2B05..=0x2B07 | 0x2B1B..=0x2B1C | 0x2B50
        | 0x2B55 | 0x3030 | 0x303D | 0x3297 | 0x3299 | 0x1F000..=0x1FFFD)
}

/// `EnglishPossessiveFilter`: drop a trailing `'s`/`'S` (apostrophe U+0027, U+2019 or U+FF07).
fn strip_possessive(token: &str) -> &str {
    let mut rev = token.char_indices().rev();
    match (rev.next(), rev.next()) {
        (Some((_, 's' | 'S')), Some((i, '\'' | '\u{2019}' | '\u{FF07}'))) => &token[..i],
        _ => token,
    }
}

/// Java's per-code-point `Character.toLowerCase` (simple mapping).
fn java_lowercase(token: &str) -> String {
    token
        .chars()
        .map(|c| {
            let mut lower = c.to_lowercase();
            match (lower.next(), lower.next()) {
                (Some(l), None) => l,
                // Multi-character full mappings (only `İ`): Java's simple mapping gives `i`.
                (Some(l), Some(_)) => l,
                _ => c,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_examples_analyse_as_lucene_does() {
        assert_eq!(analyze("men's jeans"), ["men", "jean"]);
        assert_eq!(analyze("it's"), Vec::<String>::new());
        assert_eq!(
            analyze("x-large 3.5oz $19.99"),
            ["x", "larg", "3.5oz", "19.99"]
        );
        assert_eq!(
            analyze("possibli analogi dying skies"),
            ["possibl", "analog", "dy", "ski"]
        );
    }
}
