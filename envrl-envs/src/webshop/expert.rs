//! Scripted WebShop experts. [`expert_plan`] is the reference's (as in the golden episodes):
//! search the instruction, page to the goal product (up to five pages), open it, choose the goal
//! options, buy. [`fitting_plan`] buys the first search result that scores 1.0 instead, which
//! is what the demonstrations for an SFT warm start use.

use std::sync::Arc;

use envrl::{Demonstration, Observation, Tokenizer, record_demonstration};

use crate::webshop::engine::{RESULTS_PER_PAGE, WebShopData};
use crate::webshop::env::{WebShop, split_webshop_task};
use crate::webshop::goals::{Goal, GoalSet};
use crate::webshop::prompt::WebShopPrompt;
use crate::webshop::reward::reward;

/// The reference expert's actions for `goal`: the goal product is looked up in the
/// instruction's search results; when it is not among them the expert buys the first result.
pub fn expert_plan(data: &WebShopData, goal: &Goal) -> Vec<String> {
    let query = search_query(goal);
    let ranked = data.index.ranked(&query);
    let position = ranked
        .iter()
        .position(|&(doc, _)| data.catalog.products[doc].asin == goal.asin);
    match position {
        Some(p) => purchase(data, &query, p, ranked[p].0, goal_options(goal)),
        None => match ranked.first() {
            Some(&(doc, _)) => purchase(data, &query, 0, doc, Vec::new()),
            None => vec![format!("search[{query}]")],
        },
    }
}

/// A demonstrator's actions for goal `goal` of `goals`: search the instruction, open the first
/// result that scores exactly 1.0 when bought with the goal's options it offers (at the
/// environment's price), choose those options, buy. Any such product wins the episode, and the
/// first one is usually on the first page (on the generated catalog the first result fits in
/// 43 % of the goals, the goal product is the first result in 21 %), so a small model learns a
/// policy it can follow. Falls back to [`expert_plan`] when no result fits.
pub fn fitting_plan(data: &WebShopData, goals: &GoalSet, goal: usize) -> Vec<String> {
    let Some(g) = goals.goals.get(goal) else {
        return Vec::new();
    };
    let query = search_query(g);
    let ranked = data.index.ranked(&query);
    for (position, &(doc, _)) in ranked.iter().enumerate() {
        let product = &data.catalog.products[doc];
        let options: Vec<(String, String)> = g
            .goal_options
            .iter()
            .filter_map(|(_, value)| {
                product
                    .options
                    .iter()
                    .find(|(_, values)| values.contains(value))
                    .map(|(group, _)| (group.clone(), value.clone()))
            })
            .collect();
        let price = goals.price(&product.asin);
        if reward(g, product, &options, price, &data.catalog.title_nouns).reward == 1.0 {
            let values = options.into_iter().map(|(_, value)| value).collect();
            return purchase(data, &query, position, doc, values);
        }
    }
    expert_plan(data, g)
}

/// The query both experts search: the instruction, lowercased.
fn search_query(goal: &Goal) -> String {
    goal.instruction_text.to_lowercase()
}

/// The goal's option values, in the goal's order.
fn goal_options(goal: &Goal) -> Vec<String> {
    goal.goal_options.iter().map(|(_, v)| v.clone()).collect()
}

/// Search `query`, page to result `position`, open product `doc`, click each option, buy.
fn purchase(
    data: &WebShopData,
    query: &str,
    position: usize,
    doc: usize,
    options: Vec<String>,
) -> Vec<String> {
    let mut plan = vec![format!("search[{query}]")];
    plan.extend(std::iter::repeat_n(
        "click[next >]".to_string(),
        position / RESULTS_PER_PAGE,
    ));
    plan.push(format!(
        "click[{}]",
        data.catalog.products[doc].asin.to_lowercase()
    ));
    plan.extend(options.into_iter().map(|value| format!("click[{value}]")));
    plan.push("click[buy now]".into());
    plan
}

/// Records [`fitting_plan`] on each task (see [`crate::webshop::webshop_task`]) in `prompt`'s
/// format and with its expert replies, for behaviour cloning.
pub fn expert_demonstrations(
    data: &Arc<WebShopData>,
    tasks: impl IntoIterator<Item = u64>,
    prompt: &WebShopPrompt,
    tokenizer: &dyn Tokenizer,
    max_steps: usize,
) -> Vec<Demonstration> {
    let mut env = WebShop::new(data.clone());
    tasks
        .into_iter()
        .map(|task| {
            let (seed, goal) = split_webshop_task(task);
            let goals = data.goals(seed as i64);
            let plan = fitting_plan(data, &goals, goal as usize);
            let mut expert = |_: &Observation, t: usize| plan.get(t).cloned();
            record_demonstration(
                &mut env,
                task,
                max_steps,
                prompt,
                tokenizer,
                &mut expert,
                &|_, action| prompt.expert_response(action),
            )
        })
        .collect()
}
