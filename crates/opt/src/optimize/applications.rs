//! The operator applications of a saturated e-graph, and how a def that
//! computes one joins its e-class: what the mutation and derivation
//! phases share.
//!
//! Requires a saturated [`Search`]. Guarantees: each application (an
//! operator and its arguments' values) is listed once with every place it
//! occurs, the original statements' first; [`join`] adds a call of a
//! generated def to each place's class, so the extraction may choose it.

use std::collections::HashSet;

use egg::{Id, Symbol};

use crate::egraph::analysis::Data;
use crate::egraph::lang::Node;
use crate::egraph::Search;
use crate::mutant::Arg;

/// An operator application: the operator, its arguments' values, and
/// every (class, tensor children) it occurs at.
pub type Application = (String, Vec<Arg>, Vec<(Id, Vec<Id>)>);

/// The applications of the operators `keep` accepts, each once, the
/// original statements' first.
pub fn applications(search: &Search, keep: &dyn Fn(&str) -> bool) -> Vec<Application> {
    let mut order: Vec<Id> = search.statements.iter().map(|s| s.class).collect();
    let mut seen: HashSet<Id> = order.iter().copied().collect();
    for c in search.egraph.classes() {
        if seen.insert(c.id) {
            order.push(c.id);
        }
    }
    let mut out: Vec<Application> = Vec::new();
    for class in order {
        for node in &search.egraph[class].nodes {
            let Node::Call(op, kids) = node else { continue };
            if !keep(op.as_str()) {
                continue;
            }
            let args: Option<Vec<Arg>> = kids
                .iter()
                .map(|k| match &search.egraph[*k].data {
                    Data::Tensor(s) => Some(Arg::Tensor(s.clone())),
                    Data::Int(v) => Some(Arg::Int(*v)),
                    Data::Float(v) => Some(Arg::Float(*v)),
                    Data::Invalid(_) => None,
                })
                .collect();
            let Some(args) = args else { continue };
            let tensors: Vec<Id> = kids
                .iter()
                .zip(&args)
                .filter(|(_, a)| matches!(a, Arg::Tensor(_)))
                .map(|(k, _)| *k)
                .collect();
            let place = (class, tensors);
            match out
                .iter_mut()
                .find(|(o, a, _)| o == op.as_str() && *a == args)
            {
                Some((_, _, places)) => places.push(place),
                None => out.push((op.as_str().to_string(), args, vec![place])),
            }
        }
    }
    out
}

/// Adds each `(class, def, tensor children)` of `joins` to the e-graph as
/// a call of the def joined to the class, recorded as added by `kind`
/// (the program must hold the defs already), and restores the e-graph's
/// invariants.
pub fn join(
    search: &mut Search,
    joins: &[(Id, String, Vec<Id>)],
    kind: &str,
) -> Result<(), String> {
    for (class, name, kids) in joins {
        let node = Node::Call(Symbol::from(name.as_str()), kids.clone());
        let id = search.egraph.add(node.clone());
        if let Data::Invalid(why) = &search.egraph[id].data {
            return Err(format!("internal error: {kind} `{name}`: {why}"));
        }
        search
            .egraph
            .analysis
            .origins
            .push((node, Symbol::from(format!("{kind} {name}"))));
        search.egraph.union(*class, id);
    }
    search.egraph.rebuild();
    search.canonicalize();
    Ok(())
}
