//! The vocabulary of a from-scratch word tokenizer: every text the expert's episodes would
//! encode (prompts and responses); `envrl_algos::recipe::word_tokenizer` adds the auxiliary
//! objectives' prompt wording.

use std::sync::Mutex;

use envrl::{Demonstration, ScoreRow, Tokenizer};

/// A [`Tokenizer`] that records the texts it is asked to encode and encodes each as its index
/// in the record: the expert's episodes are played once through it, their texts build the word
/// tokenizer, and [`TextCollector::retokenize`] turns the recorded rows into that tokenizer's
/// ids (the experts search, which costs far more than the tokenizing).
#[derive(Debug, Default)]
pub struct TextCollector {
    texts: Mutex<Vec<String>>,
}

impl TextCollector {
    /// The recorded texts, in order.
    pub fn texts(&self) -> Vec<String> {
        self.texts.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Demonstrations recorded through this collector, encoded with `tokenizer` as if they had
    /// been recorded with it.
    pub fn retokenize(
        &self,
        demos: Vec<Demonstration>,
        tokenizer: &dyn Tokenizer,
    ) -> Vec<Demonstration> {
        let texts = self.texts.lock().unwrap_or_else(|e| e.into_inner());
        let text = |ids: &[u32]| {
            ids.first()
                .and_then(|&i| texts.get(i as usize))
                .map_or("", String::as_str)
        };
        demos
            .into_iter()
            .map(|demo| Demonstration {
                won: demo.won,
                rows: demo
                    .rows
                    .iter()
                    .map(|row| ScoreRow {
                        context: tokenizer.encode_prompt(text(&row.context)),
                        target: tokenizer.encode_response(text(&row.target)),
                    })
                    .collect(),
            })
            .collect()
    }
}

impl Tokenizer for TextCollector {
    fn encode(&self, text: &str) -> Vec<u32> {
        let mut texts = self.texts.lock().unwrap_or_else(|e| e.into_inner());
        texts.push(text.to_string());
        vec![(texts.len() - 1) as u32]
    }

    fn encode_prompt(&self, user_message: &str) -> Vec<u32> {
        self.encode(user_message)
    }

    fn encode_response(&self, text: &str) -> Vec<u32> {
        self.encode(text)
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
