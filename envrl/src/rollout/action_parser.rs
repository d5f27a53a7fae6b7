/// The action a response projects to, with its format validity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedAction {
    /// The command sent to the environment.
    pub action: String,
    /// Whether the response followed the required format (ENVRL.md §1.3). Invalid rows are
    /// penalised; the command is sent to the environment either way.
    pub valid: bool,
}

/// Projects a decoded response to an environment command. A pure function of its inputs.
pub trait ActionParser: Send + Sync {
    /// Projects `response` given the admissible actions of the current observation.
    fn parse(&self, response: &str, admissible: &[String]) -> ParsedAction;
}
