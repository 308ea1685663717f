//! Extraction: one node per e-class, chosen by cost, for the classes the
//! outputs reach.
//!
//! Costs are per node (what the node's own computation costs, given its
//! operands' and its result's shapes) and a program's cost is the sum over
//! the distinct classes it computes: a value used twice is computed once.
//! That is what makes merges pay (two products of one operand become one
//! product and two slices), and what a tree cost (egg's `Extractor`) gets
//! wrong. The choice starts from the cheapest tree per class and then
//! improves by changing one class, or two at once (a multi-pattern's two
//! terms), while the total falls.
//!
//! A call whose operands are all known at load (the search's constants,
//! and what is computed from them alone) costs nothing: it runs once,
//! when the program is loaded, not on every run.
//!
//! Guarantees: the choice is cycle-free, picks only nodes that fit their
//! signatures, and costs no more than the cheapest tree choice.

use std::collections::{HashMap, HashSet};

use egg::{Id, Language};

use super::analysis::{Data, Graph};
use super::lang::{self, Node};
use super::Search;

/// What a node costs on its own.
pub trait NodeCost {
    /// The cost of computing `node` from operands with `kids`' data into a
    /// result with `out`'s; integers and leaves cost nothing.
    fn cost(&mut self, node: &Node, kids: &[&Data], out: &Data) -> f64;
}

/// The chosen node of each class the outputs reach.
#[derive(Clone, Debug)]
pub struct Choice {
    nodes: HashMap<Id, Node>,
    /// The total cost: the chosen nodes' costs, each class once.
    pub cost: f64,
}

impl Choice {
    /// The node chosen for class `id`; an error when the outputs do not
    /// reach it (no valid choice was found for them).
    pub fn node(&self, id: Id) -> Result<&Node, String> {
        self.nodes
            .get(&id)
            .ok_or_else(|| format!("internal error: e-class {id} has no chosen node"))
    }

    /// Every chosen class and its node.
    pub fn iter(&self) -> impl Iterator<Item = (Id, &Node)> {
        self.nodes.iter().map(|(id, n)| (*id, n))
    }
}

/// The most evaluations of a total cost the improvement makes.
const BUDGET: usize = 4000;

/// Chooses a node per class of `search` by `costs`: the cheapest choice
/// found.
pub fn extract(search: &Search, costs: &mut impl NodeCost) -> Choice {
    extract_top(search, costs, 1)
        .into_iter()
        .next()
        .unwrap_or(Choice {
            nodes: HashMap::new(),
            cost: f64::INFINITY,
        })
}

/// The `k` cheapest distinct choices the search meets (a beam for the
/// measurements to decide among), cheapest first; empty when the outputs
/// have no valid choice.
pub fn extract_top(search: &Search, costs: &mut impl NodeCost, k: usize) -> Vec<Choice> {
    let g = &search.egraph;
    let own = node_costs(g, costs, &constant_classes(g, &search.constants));
    let mut pick = cheapest_trees(g, &own);
    let roots: Vec<Id> = search.outputs.iter().map(|o| g.find(o.1)).collect();
    let mut beam = Beam {
        k: k.max(1),
        kept: Vec::new(),
    };
    let mut best = f64::INFINITY;
    if let Some(cost) = total(g, &own, &pick, &roots) {
        best = cost;
        beam.offer(g, &pick, &roots, cost);
    }
    let mut evaluations = 0;
    loop {
        let mut improved = false;
        let options = alternatives(g, &own, &pick, &roots);
        // Single changes, then pairs.
        let singles = options.iter().map(|o| vec![*o]);
        let pairs = options.iter().enumerate().flat_map(|(i, a)| {
            options[i + 1..]
                .iter()
                .filter(move |b| b.0 != a.0)
                .map(move |b| vec![*a, *b])
        });
        for change in singles.chain(pairs) {
            if evaluations >= BUDGET {
                break;
            }
            evaluations += 1;
            let mut trial = pick.clone();
            for (class, k) in &change {
                trial.insert(*class, *k);
            }
            if let Some(cost) = total(g, &own, &trial, &roots) {
                beam.offer(g, &trial, &roots, cost);
                if cost < best - 1e-12 * best.abs() {
                    best = cost;
                    pick = trial;
                    improved = true;
                    break;
                }
            }
        }
        if !improved || evaluations >= BUDGET {
            break;
        }
    }
    beam.kept
        .into_iter()
        .map(|(cost, chosen)| Choice {
            nodes: chosen
                .into_iter()
                .map(|(id, k)| (id, g[id].nodes[k].clone()))
                .collect(),
            cost,
        })
        .collect()
}

/// The cheapest distinct choices offered so far, by the nodes they reach.
struct Beam {
    k: usize,
    kept: Vec<(f64, Vec<(Id, usize)>)>,
}

impl Beam {
    fn offer(&mut self, g: &Graph, pick: &HashMap<Id, usize>, roots: &[Id], cost: f64) {
        if self.kept.len() == self.k && self.kept.last().is_some_and(|w| w.0 <= cost) {
            return;
        }
        let Some(order) = reachable(g, pick, roots) else {
            return;
        };
        let mut chosen: Vec<(Id, usize)> = order.iter().map(|id| (*id, pick[id])).collect();
        chosen.sort();
        if self.kept.iter().any(|(_, c)| *c == chosen) {
            return;
        }
        let at = self.kept.partition_point(|w| w.0 <= cost);
        self.kept.insert(at, (cost, chosen));
        self.kept.truncate(self.k);
    }
}

/// The classes whose value is known at load: an input among `constants`,
/// a literal, or a call of such classes only.
pub(crate) fn constant_classes(g: &Graph, constants: &HashSet<String>) -> HashSet<Id> {
    let mut known = HashSet::new();
    loop {
        let mut changed = false;
        for c in g.classes() {
            if known.contains(&c.id) {
                continue;
            }
            let constant = c.nodes.iter().any(|n| match n {
                Node::Int(_) => true,
                Node::Leaf(s) => lang::input_name(*s).is_none_or(|t| constants.contains(t)),
                Node::Call(_, kids) => kids.iter().all(|k| known.contains(&g.find(*k))),
            });
            if constant {
                known.insert(c.id);
                changed = true;
            }
        }
        if !changed {
            return known;
        }
    }
}

/// Each valid node's own cost, by class and index (a call of constant
/// classes only costs the least positive amount); `None` for a node that
/// does not fit its signature.
fn node_costs(
    g: &Graph,
    costs: &mut impl NodeCost,
    constant: &HashSet<Id>,
) -> HashMap<Id, Vec<Option<f64>>> {
    g.classes()
        .map(|c| {
            let own = c
                .nodes
                .iter()
                .map(|n| {
                    let kids: Vec<&Data> = n.children().iter().map(|k| &g[*k].data).collect();
                    let data = g.analysis.data_of(n, &kids);
                    if matches!(data, Data::Invalid(_)) {
                        return None;
                    }
                    Some(match n {
                        Node::Call(_, ks) if ks.iter().all(|k| constant.contains(&g.find(*k))) => {
                            f64::MIN_POSITIVE
                        }
                        Node::Call(..) => costs.cost(n, &kids, &data).max(f64::MIN_POSITIVE),
                        _ => 0.0,
                    })
                })
                .collect();
            (c.id, own)
        })
        .collect()
}

/// The index of each class's cheapest node by tree cost (a fixed point:
/// a node's cost plus its children's best).
fn cheapest_trees(g: &Graph, own: &HashMap<Id, Vec<Option<f64>>>) -> HashMap<Id, usize> {
    let mut best: HashMap<Id, (f64, usize)> = HashMap::new();
    loop {
        let mut changed = false;
        for c in g.classes() {
            for (k, n) in c.nodes.iter().enumerate() {
                let Some(cost) = own[&c.id][k] else { continue };
                let kids: Option<f64> = n
                    .children()
                    .iter()
                    .map(|kid| best.get(&g.find(*kid)).map(|b| b.0))
                    .sum();
                let Some(kids) = kids else { continue };
                let t = cost + kids;
                if best.get(&c.id).is_none_or(|b| t < b.0) {
                    best.insert(c.id, (t, k));
                    changed = true;
                }
            }
        }
        if !changed {
            return best.into_iter().map(|(id, (_, k))| (id, k)).collect();
        }
    }
}

/// The classes `pick` computes from `roots`, each once; `None` when the
/// choice has a cycle or a class without a choice.
fn reachable(g: &Graph, pick: &HashMap<Id, usize>, roots: &[Id]) -> Option<Vec<Id>> {
    let mut done: HashSet<Id> = HashSet::new();
    let mut order = Vec::new();
    let mut on_path: HashSet<Id> = HashSet::new();
    fn visit(
        g: &Graph,
        pick: &HashMap<Id, usize>,
        id: Id,
        done: &mut HashSet<Id>,
        on_path: &mut HashSet<Id>,
        order: &mut Vec<Id>,
    ) -> Option<()> {
        if done.contains(&id) {
            return Some(());
        }
        if !on_path.insert(id) {
            return None;
        }
        let node = g[id].nodes.get(*pick.get(&id)?)?;
        for kid in node.children() {
            visit(g, pick, g.find(*kid), done, on_path, order)?;
        }
        on_path.remove(&id);
        done.insert(id);
        order.push(id);
        Some(())
    }
    for r in roots {
        visit(g, pick, *r, &mut done, &mut on_path, &mut order)?;
    }
    Some(order)
}

/// The total cost of `pick` from `roots`; `None` when it is not a valid
/// choice.
fn total(
    g: &Graph,
    own: &HashMap<Id, Vec<Option<f64>>>,
    pick: &HashMap<Id, usize>,
    roots: &[Id],
) -> Option<f64> {
    reachable(g, pick, roots)?
        .iter()
        .map(|id| own[id][pick[id]])
        .sum()
}

/// The other valid nodes of the classes `pick` reaches: (class, index).
fn alternatives(
    g: &Graph,
    own: &HashMap<Id, Vec<Option<f64>>>,
    pick: &HashMap<Id, usize>,
    roots: &[Id],
) -> Vec<(Id, usize)> {
    let mut out = Vec::new();
    for id in reachable(g, pick, roots).unwrap_or_default() {
        for (k, cost) in own[&id].iter().enumerate() {
            if cost.is_some() && pick.get(&id) != Some(&k) {
                out.push((id, k));
            }
        }
    }
    out
}
