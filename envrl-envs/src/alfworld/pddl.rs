use std::collections::HashSet;
use std::path::Path;

use crate::alfworld::{SExpr, parse_sexprs};
use crate::error::{Error, Result};

/// The predicates of the ALFRED domain that may occur in a problem's `:init` (ALFWORLD.md §1.3).
pub const INIT_PREDICATES: [&str; 17] = [
    "receptacleatlocation",
    "objecttype",
    "receptacletype",
    "cancontain",
    "openable",
    "pickupable",
    "cleanable",
    "heatable",
    "coolable",
    "toggleable",
    "sliceable",
    "isreceptacleobject",
    "inreceptacleobject",
    "atlocation",
    "objectatlocation",
    "inreceptacle",
    "iscool",
];

/// A ground atom `(predicate arg…)`, lowercased.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fact {
    /// The predicate.
    pub predicate: String,
    /// The arguments.
    pub args: Vec<String>,
}

/// A goal formula.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Formula {
    /// `(pred ?x y …)`.
    Atom(Fact),
    /// `(and …)`.
    And(Vec<Formula>),
    /// `(or …)`.
    Or(Vec<Formula>),
    /// `(not f)`.
    Not(Box<Formula>),
    /// `(exists (?x - type …) f)`.
    Exists(Vec<(String, String)>, Box<Formula>),
    /// `(forall (?x - type …) f)`.
    Forall(Vec<(String, String)>, Box<Formula>),
}

/// A PDDL problem: declared objects, the initial facts and the goal, all lowercased.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// `(name, type)` in declaration order.
    pub objects: Vec<(String, String)>,
    /// The `:init` atoms in file order.
    pub init: Vec<Fact>,
    /// The `:goal` formula.
    pub goal: Formula,
}

impl Problem {
    /// Parses a problem text; `path` names the file in errors.
    ///
    /// # Errors
    /// [`Error::PddlSyntax`] on malformed PDDL or a missing section, [`Error::UnknownPredicate`]
    /// for an `:init` predicate outside [`INIT_PREDICATES`], [`Error::UnknownObject`] for a fact
    /// argument that `:objects` does not declare.
    pub fn parse(text: &str, path: &Path) -> Result<Self> {
        let syntax = |offset: usize, reason: String| Error::PddlSyntax {
            path: path.to_path_buf(),
            offset,
            reason,
        };
        let exprs = parse_sexprs(text).map_err(|e| syntax(e.offset, e.reason))?;
        let define = exprs
            .iter()
            .find(|e| e.head().as_deref() == Some("define"))
            .and_then(SExpr::list)
            .ok_or_else(|| syntax(0, "no (define …) form".into()))?;
        let section = |name: &str| {
            define
                .iter()
                .find(|e| e.head().as_deref() == Some(name))
                .and_then(SExpr::list)
        };

        let objects = parse_objects(
            section(":objects").ok_or_else(|| syntax(0, "no :objects section".into()))?,
        );
        let declared: HashSet<&str> = objects.iter().map(|(n, _)| n.as_str()).collect();
        let mut init = Vec::new();
        for item in section(":init")
            .ok_or_else(|| syntax(0, "no :init section".into()))?
            .iter()
            .skip(1)
        {
            let fact = ground_atom(item)
                .ok_or_else(|| syntax(0, format!("`{item}` in :init is not a ground atom")))?;
            if !INIT_PREDICATES.contains(&fact.predicate.as_str()) {
                return Err(Error::UnknownPredicate {
                    path: path.to_path_buf(),
                    predicate: fact.predicate,
                });
            }
            if let Some(name) = fact.args.iter().find(|a| !declared.contains(a.as_str())) {
                return Err(Error::UnknownObject {
                    path: path.to_path_buf(),
                    name: name.clone(),
                    fact: item.to_string(),
                });
            }
            init.push(fact);
        }
        let goal_section = section(":goal").ok_or_else(|| syntax(0, "no :goal section".into()))?;
        let goal_expr = goal_section
            .get(1)
            .ok_or_else(|| syntax(0, "empty :goal".into()))?;
        let goal = parse_formula(goal_expr)
            .ok_or_else(|| syntax(0, format!("unsupported goal `{goal_expr}`")))?;
        Ok(Problem {
            objects,
            init,
            goal,
        })
    }
}

/// `name… - type name… - type` pairs (names without a type get `object`).
fn parse_objects(items: &[SExpr]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    let mut tokens = items
        .iter()
        .skip(1)
        .filter_map(SExpr::atom)
        .map(str::to_ascii_lowercase);
    while let Some(token) = tokens.next() {
        if token == "-" {
            let ty = tokens.next().unwrap_or_else(|| "object".into());
            out.extend(pending.drain(..).map(|n| (n, ty.clone())));
        } else {
            pending.push(token);
        }
    }
    out.extend(pending.into_iter().map(|n| (n, "object".to_string())));
    out
}

fn ground_atom(e: &SExpr) -> Option<Fact> {
    let items = e.list()?;
    let predicate = items.first()?.atom()?.to_ascii_lowercase();
    let args = items[1..]
        .iter()
        .map(|a| a.atom().map(str::to_ascii_lowercase))
        .collect::<Option<Vec<_>>>()?;
    Some(Fact { predicate, args })
}

fn parse_formula(e: &SExpr) -> Option<Formula> {
    let items = e.list()?;
    let head = e.head()?;
    let subs = || {
        items[1..]
            .iter()
            .map(parse_formula)
            .collect::<Option<Vec<_>>>()
    };
    Some(match head.as_str() {
        "and" => Formula::And(subs()?),
        "or" => Formula::Or(subs()?),
        "not" if items.len() == 2 => Formula::Not(Box::new(parse_formula(&items[1])?)),
        "exists" | "forall" if items.len() == 3 => {
            let vars = parse_objects(&[&[SExpr::Atom(String::new())], items[1].list()?].concat());
            let body = Box::new(parse_formula(&items[2])?);
            if head == "exists" {
                Formula::Exists(vars, body)
            } else {
                Formula::Forall(vars, body)
            }
        }
        _ => Formula::Atom(ground_atom(e)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROBLEM: &str = "(define (problem p) (:domain alfred)
        (:objects agent1 - agent Apple_bar_1 - object loc_bar_2 - location AppleType - otype)
        (:init (atLocation agent1 loc_bar_2) (objectType Apple_bar_1 AppleType))
        (:goal (exists (?o - object) (and (objectType ?o AppleType) (not (isHot ?o))))))";

    #[test]
    fn parses_objects_facts_and_goal_lowercased() {
        let p = Problem::parse(PROBLEM, Path::new("g.tw-pddl")).unwrap();
        assert_eq!(p.objects[1], ("apple_bar_1".into(), "object".into()));
        assert_eq!(
            p.init[1],
            Fact {
                predicate: "objecttype".into(),
                args: vec!["apple_bar_1".into(), "appletype".into()]
            }
        );
        let Formula::Exists(vars, body) = &p.goal else {
            panic!("{:?}", p.goal)
        };
        assert_eq!(vars, &[("?o".to_string(), "object".to_string())]);
        assert!(matches!(**body, Formula::And(ref fs) if fs.len() == 2));
    }

    #[test]
    fn unknown_predicate_is_named() {
        let bad = PROBLEM.replace("(atLocation agent1 loc_bar_2)", "(isFlying agent1)");
        let err = Problem::parse(&bad, Path::new("g.tw-pddl"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("g.tw-pddl") && err.contains("isflying"),
            "{err}"
        );
    }

    #[test]
    fn undeclared_object_is_named() {
        let bad = PROBLEM.replace(
            "(atLocation agent1 loc_bar_2)",
            "(atLocation agent1 loc_bar_9)",
        );
        let err = Problem::parse(&bad, Path::new("g.tw-pddl"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("loc_bar_9"), "{err}");
    }

    #[test]
    fn truncated_problem_is_a_syntax_error() {
        let err = Problem::parse(&PROBLEM[..100], Path::new("g.tw-pddl")).unwrap_err();
        assert!(matches!(err, Error::PddlSyntax { .. }), "{err}");
    }
}
