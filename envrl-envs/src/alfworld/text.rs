//! Text helpers shared by the renderer: lists and Python's `str.strip`.

/// Renders a list as the reference does: `nothing`, `X`, `X, and Y`, `X, Y, and Z`.
pub fn render_list(items: &[String]) -> String {
    match items {
        [] => "nothing".to_string(),
        [one] => one.clone(),
        [init @ .., last] => format!("{}, and {last}", init.join(", ")),
    }
}

/// Strips like Python's `str.strip()`: Unicode White_Space plus U+001C–U+001F.
pub fn python_strip(s: &str) -> &str {
    let is_space = |c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c);
    s.trim_matches(is_space)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_use_the_oxford_comma_even_for_two() {
        let s = |v: &[&str]| render_list(&v.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        assert_eq!(s(&[]), "nothing");
        assert_eq!(s(&["a x"]), "a x");
        assert_eq!(s(&["a x", "a y"]), "a x, and a y");
        assert_eq!(s(&["a", "b", "c"]), "a, b, and c");
    }

    #[test]
    fn strip_matches_python_including_separators() {
        assert_eq!(python_strip(" \u{1c}look\u{1f}\t"), "look");
        assert_eq!(python_strip("\u{a0}go to  x\u{3000}"), "go to  x");
    }
}
