//! The vocabulary of a from-scratch word tokenizer: every text the expert's episodes would
//! encode (prompts and responses), plus the auxiliary objectives' prompt wording.

use std::sync::Mutex;

use envrl::Tokenizer;
use envrl_algos::{WordTokenizer, inverse_dynamics_prompt, state_prediction_prompt};

/// A [`Tokenizer`] that only records the texts it is asked to encode.
#[derive(Debug, Default)]
pub struct TextCollector {
    texts: Mutex<Vec<String>>,
}

impl TextCollector {
    /// The recorded texts.
    pub fn into_texts(self) -> Vec<String> {
        self.texts.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

impl Tokenizer for TextCollector {
    fn encode(&self, text: &str) -> Vec<u32> {
        self.texts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(text.to_string());
        Vec::new()
    }

    fn decode(&self, _ids: &[u32]) -> String {
        String::new()
    }

    fn vocab_size(&self) -> usize {
        0
    }

    fn eos_id(&self) -> u32 {
        0
    }

    fn pad_id(&self) -> u32 {
        0
    }
}

/// A word tokenizer over `texts` plus the auxiliary prompts' wording for `environment`.
pub fn word_tokenizer(mut texts: Vec<String>, environment: &str, extra: &[&str]) -> WordTokenizer {
    texts.push(state_prediction_prompt(environment, "", "", ""));
    texts.push(inverse_dynamics_prompt(environment, "", "", "", None));
    texts.extend(extra.iter().map(|s| s.to_string()));
    WordTokenizer::from_corpus(texts.iter().map(String::as_str))
}
