use std::path::Path;

/// The six ALFWorld task types, named by the prefix of the task folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TaskType {
    /// `pick_and_place_simple`.
    PickAndPlace,
    /// `look_at_obj_in_light`.
    LookAtObjInLight,
    /// `pick_clean_then_place_in_recep`.
    PickCleanThenPlace,
    /// `pick_heat_then_place_in_recep`.
    PickHeatThenPlace,
    /// `pick_cool_then_place_in_recep`.
    PickCoolThenPlace,
    /// `pick_two_obj_and_place`.
    PickTwoObjAndPlace,
}

impl TaskType {
    /// All six, in the paper's table order.
    pub const ALL: [TaskType; 6] = [
        TaskType::PickAndPlace,
        TaskType::PickCleanThenPlace,
        TaskType::PickHeatThenPlace,
        TaskType::PickCoolThenPlace,
        TaskType::LookAtObjInLight,
        TaskType::PickTwoObjAndPlace,
    ];

    /// The folder prefix, e.g. `pick_and_place_simple`.
    pub fn prefix(self) -> &'static str {
        match self {
            TaskType::PickAndPlace => "pick_and_place_simple",
            TaskType::LookAtObjInLight => "look_at_obj_in_light",
            TaskType::PickCleanThenPlace => "pick_clean_then_place_in_recep",
            TaskType::PickHeatThenPlace => "pick_heat_then_place_in_recep",
            TaskType::PickCoolThenPlace => "pick_cool_then_place_in_recep",
            TaskType::PickTwoObjAndPlace => "pick_two_obj_and_place",
        }
    }

    /// The short name used in tables (`pick`, `look`, `clean`, `heat`, `cool`, `pick2`).
    pub fn short_name(self) -> &'static str {
        match self {
            TaskType::PickAndPlace => "pick",
            TaskType::LookAtObjInLight => "look",
            TaskType::PickCleanThenPlace => "clean",
            TaskType::PickHeatThenPlace => "heat",
            TaskType::PickCoolThenPlace => "cool",
            TaskType::PickTwoObjAndPlace => "pick2",
        }
    }

    /// Parses a short name (`pick`, `look`, `clean`, `heat`, `cool`, `pick2`) or a folder prefix.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|t| t.short_name() == name || t.prefix() == name)
    }

    /// Parses a folder prefix.
    pub fn from_prefix(prefix: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.prefix() == prefix)
    }

    /// The task type named by the task folder in `path` (`<type>-<Object>-…`).
    pub fn from_path(path: &Path) -> Option<Self> {
        path.components().rev().find_map(|c| {
            let name = c.as_os_str().to_str()?;
            Self::from_prefix(name.split('-').next()?)
        })
    }
}
