//! Entity display names (ALFWORLD.md §2): class from the mangled id, numbers counting down in
//! sorted-id order.

use std::collections::HashMap;

/// The display class of a lowercased id: the text before the first `_bar_`, plus `basin` when
/// the id contains `basin`. `None` for ids without `_bar_`.
pub fn display_class(id: &str) -> Option<String> {
    let head = &id[..id.find("_bar_")?];
    Some(if id.contains("basin") {
        format!("{head}basin")
    } else {
        head.to_string()
    })
}

/// Display names of `sorted_ids` (sorted in byte order): `"<class> <n>"`, where the smallest id
/// of a class gets the largest number; ids without `_bar_` get the id and one trailing space.
pub fn display_names(sorted_ids: &[String]) -> Vec<String> {
    let classes: Vec<Option<String>> = sorted_ids.iter().map(|id| display_class(id)).collect();
    let mut remaining: HashMap<&str, usize> = HashMap::new();
    for class in classes.iter().flatten() {
        *remaining.entry(class.as_str()).or_default() += 1;
    }
    sorted_ids
        .iter()
        .zip(&classes)
        .map(|(id, class)| match class {
            Some(class) => {
                let n = remaining.get_mut(class.as_str()).map(|n| {
                    let value = *n;
                    *n -= 1;
                    value
                });
                format!("{class} {}", n.unwrap_or(0))
            }
            None => format!("{id} "),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basin_rule_and_countdown_numbering() {
        let mut ids: Vec<String> = [
            "sink_bar__minus_01_bar_00_bar_sinkbasin",
            "sink_bar__minus_01_bar_00",
            "drawer_bar__minus_01",
            "drawer_bar__plus_01",
            "loc_bar_10_bar_1",
            "loc_bar_2_bar_1",
            "agent1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        ids.sort();
        let names: HashMap<String, String> = ids.iter().cloned().zip(display_names(&ids)).collect();
        assert_eq!(names["drawer_bar__minus_01"], "drawer 2");
        assert_eq!(names["drawer_bar__plus_01"], "drawer 1");
        assert_eq!(
            names["sink_bar__minus_01_bar_00_bar_sinkbasin"],
            "sinkbasin 1"
        );
        assert_eq!(names["sink_bar__minus_01_bar_00"], "sink 1");
        assert_eq!(names["loc_bar_10_bar_1"], "loc 2");
        assert_eq!(names["agent1"], "agent1 ");
    }
}
