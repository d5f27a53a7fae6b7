/// An s-expression: an atom or a parenthesised list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SExpr {
    /// A bare token.
    Atom(String),
    /// `( … )`.
    List(Vec<SExpr>),
}

/// A syntax error with its byte offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// Byte offset of the problem.
    pub offset: usize,
    /// What is wrong.
    pub reason: String,
}

/// The most nested lists accepted; deeper input is rejected instead of overflowing the stack.
pub const MAX_DEPTH: usize = 256;

/// Parses all top-level s-expressions of `text`. `;` starts a comment to the end of the line.
///
/// # Errors
/// [`SyntaxError`] on an unbalanced parenthesis or nesting deeper than [`MAX_DEPTH`].
pub fn parse_sexprs(text: &str) -> Result<Vec<SExpr>, SyntaxError> {
    let bytes = text.as_bytes();
    let mut stack: Vec<(usize, Vec<SExpr>)> = vec![(0, Vec::new())];
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b';' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'(' => {
                if stack.len() > MAX_DEPTH {
                    return Err(SyntaxError {
                        offset: i,
                        reason: format!("nesting deeper than {MAX_DEPTH}"),
                    });
                }
                stack.push((i, Vec::new()));
            }
            b')' => {
                if stack.len() == 1 {
                    return Err(SyntaxError {
                        offset: i,
                        reason: "unmatched `)`".into(),
                    });
                }
                let (_, items) = stack.pop().unwrap_or_default();
                if let Some((_, parent)) = stack.last_mut() {
                    parent.push(SExpr::List(items));
                }
            }
            b if b.is_ascii_whitespace() => {}
            _ => {
                let start = i;
                while i < bytes.len()
                    && !matches!(bytes[i], b'(' | b')' | b';')
                    && !bytes[i].is_ascii_whitespace()
                {
                    i += 1;
                }
                if let Some((_, items)) = stack.last_mut() {
                    items.push(SExpr::Atom(text[start..i].to_string()));
                }
                continue;
            }
        }
        i += 1;
    }
    if stack.len() > 1 {
        let offset = stack.last().map_or(0, |(o, _)| *o);
        return Err(SyntaxError {
            offset,
            reason: "unclosed `(`".into(),
        });
    }
    Ok(stack.pop().map(|(_, items)| items).unwrap_or_default())
}

impl SExpr {
    /// The atom's text, if this is an atom.
    pub fn atom(&self) -> Option<&str> {
        match self {
            SExpr::Atom(a) => Some(a),
            SExpr::List(_) => None,
        }
    }

    /// The items, if this is a list.
    pub fn list(&self) -> Option<&[SExpr]> {
        match self {
            SExpr::List(items) => Some(items),
            SExpr::Atom(_) => None,
        }
    }

    /// The list's head atom, lowercased, if any.
    pub fn head(&self) -> Option<String> {
        self.list()?.first()?.atom().map(str::to_ascii_lowercase)
    }
}

impl std::fmt::Display for SExpr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SExpr::Atom(a) => f.write_str(a),
            SExpr::List(items) => {
                f.write_str("(")?;
                for (k, item) in items.iter().enumerate() {
                    if k > 0 {
                        f.write_str(" ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str(")")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nested_lists_and_skips_comments() {
        let e = parse_sexprs("(a (b c) ; note\n d)").unwrap();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].to_string(), "(a (b c) d)");
    }

    #[test]
    fn unbalanced_input_is_an_error_with_its_offset() {
        assert_eq!(parse_sexprs("(a (b)").unwrap_err().offset, 0);
        assert_eq!(parse_sexprs("a)").unwrap_err().offset, 1);
    }

    #[test]
    fn deep_nesting_is_rejected_not_overflowed() {
        let deep = "(".repeat(10_000);
        assert!(parse_sexprs(&deep).unwrap_err().reason.contains("nesting"));
    }
}
