//! WebShop's action syntax: Python `re.match(r"(.+)\[(.+)\]", action)` (WEBSHOP.md §4.3).

/// A parsed action: the name (case kept) and the lowered argument, if the pattern matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedWebAction {
    /// Text before the bracket (`search`, `click`, or anything else).
    pub name: String,
    /// The bracketed argument, lowered; `None` when the pattern does not match.
    pub arg: Option<String>,
}

/// Parses like the reference: on the first line only, the last `[` (at position ≥ 1) that is
/// followed two or more characters later by a `]`, and the last such `]`.
pub fn parse_action(action: &str) -> ParsedWebAction {
    let line: Vec<char> = action.split('\n').next().unwrap_or("").chars().collect();
    let last_close = line.iter().rposition(|&c| c == ']');
    if let Some(k) = last_close {
        // Greedy `(.+)`: the largest i ≥ 1 with '[' such that a ']' exists at ≥ i + 2.
        if let Some(i) = (1..line.len())
            .rev()
            .find(|&i| line[i] == '[' && k >= i + 2)
        {
            return ParsedWebAction {
                name: line[..i].iter().collect(),
                arg: Some(line[i + 1..k].iter().collect::<String>().to_lowercase()),
            };
        }
    }
    ParsedWebAction {
        name: action.to_string(),
        arg: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> (String, Option<String>) {
        let a = parse_action(s);
        (a.name, a.arg)
    }

    #[test]
    fn the_regex_semantics_are_reproduced() {
        assert_eq!(
            p("search[Red Shoes]"),
            ("search".into(), Some("red shoes".into()))
        );
        assert_eq!(
            p("click[buy now] please"),
            ("click".into(), Some("buy now".into()))
        );
        assert_eq!(p("search[]"), ("search[]".into(), None));
        assert_eq!(p("[x]"), ("[x]".into(), None));
        assert_eq!(p("click[a[b]]"), ("click[a".into(), Some("b]".into())));
        assert_eq!(p("click[a\n]"), ("click[a\n]".into(), None));
        assert_eq!(p("CLICK[Next >]"), ("CLICK".into(), Some("next >".into())));
    }
}
