//! Python string and float semantics the reference relies on.

pub use crate::alfworld::python_strip;

/// Python's `repr(float)`: the shortest round-trip form, with `.0` for integral values and
/// `1e+16`-style exponents (WEBSHOP.md §1.4).
pub fn py_repr(x: f64) -> String {
    let s = format!("{x:?}");
    match s.split_once('e') {
        Some((mantissa, exp)) => {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_matches_python() {
        assert_eq!(py_repr(100.0), "100.0");
        assert_eq!(py_repr(59.5), "59.5");
        assert_eq!(py_repr(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(py_repr(1e16), "1e+16");
        assert_eq!(py_repr(1.5e-7), "1.5e-07");
    }
}
