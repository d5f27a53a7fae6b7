//! WebShop (Yao et al., 2022) as verl-agent trains on it: the 1000-product catalog, synthetic
//! goals and their seeded order, the Lucene-exact analyzer and BM25 search (WEBSHOP.md). In
//! progress: pages, actions and reward.

mod action;
mod analyzer;
mod catalog;
mod engine;
mod env;
mod expert;
mod fuzzy;
mod generator;
mod goals;
mod page;
mod prompt;
mod py;
mod pyrandom;
mod reward;
mod search;
pub use action::{ParsedWebAction, parse_action};
pub use analyzer::{STOP_WORDS, analyze};
pub use catalog::*;
pub use engine::{
    AvailableActions, ObservationMode, RESULTS_PER_PAGE, WebShopData, WebShopEngine, WebStepResult,
};
pub use env::{WIN_REWARD, WebShop, split_webshop_task, webshop_task};
pub use expert::{expert_demonstrations, expert_plan, expert_response};
pub use fuzzy::{full_process, ratio, token_set_ratio};
pub use generator::CatalogGenerator;
pub use goals::*;
pub use page::{Clickable, Node, NodeKind, Page, py_dict_repr, py_json_dumps};
pub use prompt::{
    MAX_HISTORY_PROMPT_CHARS, WEBSHOP_TEMPLATE, WEBSHOP_TEMPLATE_NO_HIS, WebShopProjection,
    WebShopPrompt, admissible_actions, format_observation,
};
pub use py::py_repr;
pub use pyrandom::{Mt19937, NumpyRandomState, PyRandom};
pub use reward::{COLOR_SET, RewardBreakdown, normalize_color, py_str_repr, reward};
pub use search::{SearchIndex, TOP_K};
