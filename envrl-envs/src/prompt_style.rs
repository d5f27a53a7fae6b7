//! How a prompt is worded: the paper's templates or a compact form for small models.

/// The wording of a prompt (ALFWorld, WebShop) and of the expert's replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromptStyle {
    /// verl-agent's templates as of 2025-07, byte for byte, typo "observaitons" included (the
    /// paper's setting, and what every recorded run and golden transcript uses); the expert's
    /// reply gives a one-sentence rationale.
    #[default]
    VerlAgent,
    /// verl-agent's templates after its 2025-10-02 fix of "observaitons" to "observations"
    /// (`verl-agent-2025-10`), otherwise identical (WebShop's never had the typo); Sokoban's
    /// default.
    #[serde(rename = "verl-agent-2025-10")]
    VerlAgentOct2025,
    /// The same facts without the instructions, for small from-scratch models that cannot use
    /// them: `Task:`, the remembered steps, `Now:` and the admissible actions joined by ` | `;
    /// the expert's reply leaves `<think></think>` empty. About 40 % of the verl-agent prompt's
    /// tokens, which is most of a warm start's and a rollout's cost.
    Compact,
}

impl PromptStyle {
    /// Every style.
    pub const ALL: [PromptStyle; 3] = [Self::VerlAgent, Self::VerlAgentOct2025, Self::Compact];

    /// The style's name in configs: `verl-agent`, `verl-agent-2025-10` or `compact`.
    pub fn name(self) -> &'static str {
        match self {
            Self::VerlAgent => "verl-agent",
            Self::VerlAgentOct2025 => "verl-agent-2025-10",
            Self::Compact => "compact",
        }
    }

    /// How a verl-agent template spells "observations" in its history sentence.
    pub fn observations_word(self) -> &'static str {
        match self {
            Self::VerlAgent => "observaitons",
            Self::VerlAgentOct2025 | Self::Compact => "observations",
        }
    }

    /// The style named `name` (see [`PromptStyle::name`]).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn style_names_round_trip() {
        for style in PromptStyle::ALL {
            assert_eq!(PromptStyle::from_name(style.name()), Some(style));
        }
        assert_eq!(PromptStyle::from_name("chatml"), None);
    }
}
