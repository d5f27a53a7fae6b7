use envrl::{ActionParser, ParsedAction};

/// The key-and-door projection: the trimmed response is the action; it is valid when it is
/// one of the admissible actions (this small world has no `<think>` format to check).
#[derive(Debug, Clone, Copy, Default)]
pub struct KeyDoorProjection;

impl ActionParser for KeyDoorProjection {
    fn parse(&self, response: &str, admissible: &[String]) -> ParsedAction {
        let action = response.trim().to_string();
        let valid = admissible.contains(&action);
        ParsedAction { action, valid }
    }
}
