//! The rules of `ops/rewrites.rules` as e-graph rewrites: a rule's side
//! becomes a (multi-)pattern, and its applier unifies the matched classes'
//! shapes with the rule's declared ones before it adds the other side.
//!
//! Requires rules loaded by [`crate::rules::load`] (so proved by the tests
//! at their sample sizes) and an e-graph with the shape analysis.
//! Guarantees: an application adds only nodes that fit their operators'
//! signatures, and unites a new term with a matched class only when their
//! shapes are equal; a match whose shapes do not unify with the rule's
//! (a size symbol with two values, a dimension off its expression) adds
//! nothing.

use std::collections::HashMap;

use egg::{Applier, Id, MultiPattern, PatternAst, Rewrite, Subst, Symbol, Var};
use ir::SizeExpr;

use super::analysis::{Data, Graph, Shapes};
use super::lang::{float, Node};
use crate::rules::{Rule, Term, VarKind};

/// The rewrites of `rules`: one per rule and direction (`NAME` forward,
/// `NAME<=` backward for a rule that applies both ways).
pub fn rewrites(rules: &[Rule]) -> Result<Vec<Rewrite<Node, Shapes>>, String> {
    let mut out = Vec::new();
    for r in rules {
        out.push(one_way(r, &r.lhs, &r.rhs, r.name.clone())?);
        if r.both_ways {
            out.push(one_way(r, &r.rhs, &r.lhs, format!("{}<=", r.name))?);
        }
    }
    Ok(out)
}

/// The rewrite of `from` into `to`.
fn one_way(
    rule: &Rule,
    from: &[Term],
    to: &[Term],
    name: String,
) -> Result<Rewrite<Node, Shapes>, String> {
    let mut checks = Vec::new();
    let mut asts = Vec::new();
    for (k, t) in from.iter().enumerate() {
        let mut ast = PatternAst::default();
        pattern(t, &mut ast, &mut checks);
        asts.push((root(k), ast));
    }
    let applier = RuleApplier {
        rule: rule.clone(),
        symbols: crate::rules::instance::symbols(rule).into_iter().collect(),
        to: to.to_vec(),
        checks,
    };
    Rewrite::new(name, MultiPattern::new(asts), applier)
}

/// The pattern variable holding the class of side term `k`.
fn root(k: usize) -> Var {
    format!("?__term{k}")
        .parse()
        .expect("a valid variable name")
}

/// The pattern variable of rule variable or size symbol `name`.
fn var(name: &str) -> Var {
    format!("?{name}").parse().expect("a valid variable name")
}

/// Adds term `t` to pattern `ast` and returns its id; an integer that is
/// an expression (not a symbol or a literal) becomes a fresh variable whose
/// value `checks` records to compare once the symbols are bound.
fn pattern(t: &Term, ast: &mut PatternAst<Node>, checks: &mut Vec<(Var, SizeExpr)>) -> Id {
    use egg::ENodeOrVar::{ENode, Var as PVar};
    match t {
        Term::Var { name, .. } => ast.add(PVar(var(name))),
        Term::Float { value, .. } => ast.add(ENode(float(*value))),
        Term::Int { expr, .. } => {
            if let Some(v) = expr.as_const() {
                return ast.add(ENode(Node::Int(v)));
            }
            let symbols = expr.symbols();
            match symbols.iter().next() {
                Some(s) if symbols.len() == 1 && *expr == SizeExpr::sym(s) => ast.add(PVar(var(s))),
                _ => {
                    let v = var(&format!("__int{}", checks.len()));
                    checks.push((v, expr.clone()));
                    ast.add(PVar(v))
                }
            }
        }
        Term::Call { op, args, .. } => {
            let kids = args.iter().map(|a| pattern(a, ast, checks)).collect();
            ast.add(ENode(Node::Call(Symbol::from(op.as_str()), kids)))
        }
    }
}

/// Adds a rule's other side for a match, after checking its shapes.
#[derive(Clone, Debug)]
struct RuleApplier {
    rule: Rule,
    /// The rule's size symbols.
    symbols: Vec<String>,
    to: Vec<Term>,
    /// Matched integers that must equal their size expressions.
    checks: Vec<(Var, SizeExpr)>,
}

impl Applier<Node, Shapes> for RuleApplier {
    fn apply_one(
        &self,
        egraph: &mut Graph,
        _eclass: Id,
        subst: &Subst,
        _searcher_ast: Option<&PatternAst<Node>>,
        rule_name: Symbol,
    ) -> Vec<Id> {
        // A multi-pattern matching one class twice merges a value with
        // itself: true, but never cheaper, and it grows the graph with
        // joined copies (on PET's Figure 10a, 11 classes became 2735).
        let roots: Vec<Id> = (0..self.to.len())
            .filter_map(|k| subst.get(root(k)).map(|id| egraph.find(*id)))
            .collect();
        if (1..roots.len()).any(|k| roots[..k].contains(&roots[k])) {
            return Vec::new();
        }
        let Some(sizes) = self.unify(egraph, subst) else {
            return Vec::new();
        };
        // Every new term must fit its signatures before anything is added.
        let mut planned = Vec::new();
        for (k, t) in self.to.iter().enumerate() {
            let Some(data) = plan(t, egraph, subst, &sizes) else {
                return Vec::new();
            };
            let Some(matched) = subst.get(root(k)) else {
                return Vec::new();
            };
            if egraph[*matched].data != data {
                return Vec::new();
            }
            planned.push(*matched);
        }
        let mut changed = Vec::new();
        for (t, matched) in self.to.iter().zip(planned) {
            let id = build(t, egraph, subst, &sizes, rule_name);
            if egraph.union(id, matched) {
                changed.push(matched);
            }
        }
        changed
    }
}

impl RuleApplier {
    /// The values of the rule's size symbols in this match: from the
    /// matched tensors' shapes and integers; `None` when they do not unify
    /// with the rule's declarations.
    fn unify(&self, egraph: &Graph, subst: &Subst) -> Option<HashMap<String, i64>> {
        let mut sizes: HashMap<String, i64> = HashMap::new();
        let bind = |s: &str, v: i64, sizes: &mut HashMap<String, i64>| match sizes.get(s) {
            Some(&w) => w == v,
            None => {
                sizes.insert(s.to_string(), v);
                true
            }
        };
        let mut later: Vec<(SizeExpr, i64)> = Vec::new();
        for v in &self.rule.vars {
            let Some(id) = subst.get(var(&v.name)) else {
                continue;
            };
            match (&v.kind, &egraph[*id].data) {
                (VarKind::Float, Data::Float(_)) => {}
                (VarKind::Tensor(dims), Data::Tensor(shape)) if dims.len() == shape.len() => {
                    for (d, &n) in dims.iter().zip(shape) {
                        let symbols = d.symbols();
                        match symbols.iter().next() {
                            Some(s) if symbols.len() == 1 && *d == SizeExpr::sym(s) => {
                                if !bind(s, n, &mut sizes) {
                                    return None;
                                }
                            }
                            _ => later.push((d.clone(), n)),
                        }
                    }
                }
                _ => return None,
            }
        }
        // Size symbols matched as integer arguments.
        for s in &self.symbols {
            if let Some(id) = subst.get(var(s)) {
                let Data::Int(v) = egraph[*id].data else {
                    return None;
                };
                if !bind(s, v, &mut sizes) {
                    return None;
                }
            }
        }
        for (v, e) in &self.checks {
            let Data::Int(n) = egraph[*subst.get(*v)?].data else {
                return None;
            };
            later.push((e.clone(), n));
        }
        later
            .iter()
            .all(|(e, n)| e.eval_map(&sizes).ok() == Some(*n))
            .then_some(sizes)
    }
}

/// The data term `t` would have in this match, without adding it; `None`
/// when it does not fit a signature.
fn plan(t: &Term, egraph: &Graph, subst: &Subst, sizes: &HashMap<String, i64>) -> Option<Data> {
    let data = match t {
        Term::Var { name, .. } => egraph[*subst.get(var(name))?].data.clone(),
        Term::Float { value, .. } => Data::Float(*value),
        Term::Int { expr, .. } => Data::Int(expr.eval_map(sizes).ok()?),
        Term::Call { op, args, .. } => {
            let kids = args
                .iter()
                .map(|a| plan(a, egraph, subst, sizes))
                .collect::<Option<Vec<Data>>>()?;
            let node = Node::Call(Symbol::from(op.as_str()), Vec::new());
            egraph
                .analysis
                .data_of(&node, &kids.iter().collect::<Vec<_>>())
        }
    };
    (!matches!(data, Data::Invalid(_))).then_some(data)
}

/// Adds term `t` for this match (checked by [`plan`] first), recording
/// `rule` as the origin of each call node it adds.
fn build(
    t: &Term,
    egraph: &mut Graph,
    subst: &Subst,
    sizes: &HashMap<String, i64>,
    rule: Symbol,
) -> Id {
    match t {
        Term::Var { name, .. } => subst[var(name)],
        Term::Float { value, .. } => egraph.add(float(*value)),
        Term::Int { expr, .. } => {
            let v = expr.eval_map(sizes).unwrap_or_default();
            egraph.add(Node::Int(v))
        }
        Term::Call { op, args, .. } => {
            let kids = args
                .iter()
                .map(|a| build(a, egraph, subst, sizes, rule))
                .collect();
            let node = Node::Call(Symbol::from(op.as_str()), kids);
            if egraph.lookup(node.clone()).is_none() {
                egraph.analysis.origins.push((node.clone(), rule));
            }
            egraph.add(node)
        }
    }
}
