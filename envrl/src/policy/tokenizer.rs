/// Turns text into token ids and back, and wraps prompts in the model's chat format.
///
/// Implementations: a word-level tokenizer for from-scratch models, and Hugging Face
/// tokenizers for pretrained ones (in `envrl-algos`).
pub trait Tokenizer: Send + Sync {
    /// Encodes plain text, without special tokens.
    fn encode(&self, text: &str) -> Vec<u32>;

    /// Decodes ids to text, skipping special tokens.
    fn decode(&self, ids: &[u32]) -> String;

    /// The size of the vocabulary (the model's output dimension must be at least this).
    fn vocab_size(&self) -> usize;

    /// The token that ends a response.
    fn eos_id(&self) -> u32;

    /// The token used to pad batches.
    fn pad_id(&self) -> u32;

    /// The token that stands for text the tokenizer cannot encode (a word tokenizer's
    /// `<unk>`), if it has one; the trainer reports how many of each objective's target tokens
    /// are this token (`aux/unk_rate/<name>`). Defaults to none.
    fn unk_id(&self) -> Option<u32> {
        None
    }

    /// Tokens that stop generation. Defaults to the EOS token alone.
    fn stop_ids(&self) -> Vec<u32> {
        vec![self.eos_id()]
    }

    /// Encodes one user message as a prompt the model answers (the chat template with
    /// `add_generation_prompt`). Defaults to the plain encoding.
    fn encode_prompt(&self, user_message: &str) -> Vec<u32> {
        self.encode(user_message)
    }

    /// Encodes an assistant answer as a training target: the text followed by the EOS token.
    fn encode_response(&self, text: &str) -> Vec<u32> {
        let mut ids = self.encode(text);
        ids.push(self.eos_id());
        ids
    }
}
