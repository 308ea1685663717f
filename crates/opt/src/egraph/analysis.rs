//! The shape analysis of the e-graph: what each e-class is (a tensor of a
//! shape, an integer, a float), from its nodes' operators' signatures.
//!
//! Requires the program whose defs the nodes call and the shapes of the
//! inputs. Guarantees: every member of an e-class has the class's data
//! (rewrites union only classes of one shape: `rewrite.rs` checks before
//! it adds); a node that does not fit its operator's signature gets
//! `Data::Invalid` with the reason, and extraction never picks it.

use std::collections::HashMap;
use std::sync::Arc;

use egg::{Analysis, DidMerge, EGraph, Symbol};
use ir::{Comprehension, DType, Def, Program};

use super::lang::{self, leaf_kind, LeafKind, Node};
use crate::signature::{call_shapes, ArgKind};

/// What an e-class holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    Tensor(Vec<i64>),
    Int(i64),
    Float(f64),
    Invalid(String),
}

impl Data {
    /// The data as a call argument's kind, if it is valid.
    pub fn kind(&self) -> Option<ArgKind> {
        match self {
            Data::Tensor(s) => Some(ArgKind::Tensor(s.clone())),
            Data::Int(v) => Some(ArgKind::Int(*v)),
            Data::Float(_) => Some(ArgKind::Float),
            Data::Invalid(_) => None,
        }
    }
}

/// A statement no rule applies to (a comprehension), kept whole: a node
/// `@k` with the tensors it reads as children computes it.
#[derive(Clone, Debug)]
pub struct Opaque {
    pub comp: Comprehension,
    /// The tensors the statement reads, in its children's order.
    pub reads: Vec<String>,
    pub shape: Vec<i64>,
    pub dtype: DType,
    /// The statement alone at the search's sizes, as a def over its reads
    /// (`x0`, `x1`, ... in children's order) returning `y`: how the
    /// derivation phase sees it.
    pub alone: Def,
}

/// The analysis: the program's signatures, the inputs' shapes, the opaque
/// statements, and which rule first made each node.
#[derive(Clone, Debug)]
pub struct Shapes {
    pub program: Arc<Program>,
    pub inputs: HashMap<String, Vec<i64>>,
    pub opaque: Vec<Opaque>,
    /// The nodes rewrites added, as they were added (children canonical at
    /// that time), with the rule that added each first.
    pub origins: Vec<(Node, Symbol)>,
}

/// The e-graph of tensor terms with shapes.
pub type Graph = EGraph<Node, Shapes>;

impl Shapes {
    /// The data of a node whose children have `kids`' data.
    pub fn data_of(&self, node: &Node, kids: &[&Data]) -> Data {
        match node {
            Node::Int(v) => Data::Int(*v),
            Node::Leaf(s) => match leaf_kind(s) {
                Some(LeafKind::Input(name)) => match self.inputs.get(name) {
                    Some(shape) => Data::Tensor(shape.clone()),
                    None => Data::Invalid(format!("no input `{name}`")),
                },
                Some(LeafKind::Float(v)) => Data::Float(v),
                None => Data::Invalid(format!("`{s}` is no leaf")),
            },
            Node::Call(op, _) if lang::opaque_index(op).is_some() => {
                match lang::opaque_index(op).and_then(|k| self.opaque.get(k)) {
                    Some(o) if kids.len() == o.reads.len() => Data::Tensor(o.shape.clone()),
                    _ => Data::Invalid(format!("`{op}` is no statement of the def")),
                }
            }
            Node::Call(op, _) => {
                let Some(def) = self.program.def(op.as_str()) else {
                    return Data::Invalid(format!("unknown operator `{op}`"));
                };
                let args: Option<Vec<ArgKind>> = kids.iter().map(|d| d.kind()).collect();
                let Some(args) = args else {
                    return Data::Invalid("an invalid argument".to_string());
                };
                match call_shapes(def, &args) {
                    Ok(mut shapes) if shapes.len() == 1 => Data::Tensor(shapes.remove(0)),
                    Ok(shapes) => Data::Invalid(format!(
                        "`{op}` has {} results; a term has one",
                        shapes.len()
                    )),
                    Err(e) => Data::Invalid(e),
                }
            }
        }
    }
}

impl Analysis<Node> for Shapes {
    type Data = Data;

    fn make(egraph: &mut Graph, enode: &Node) -> Data {
        let kids: Vec<&Data> = match enode {
            Node::Call(_, kids) => kids.iter().map(|k| &egraph[*k].data).collect(),
            _ => Vec::new(),
        };
        egraph.analysis.data_of(enode, &kids)
    }

    fn merge(&mut self, to: &mut Data, from: Data) -> DidMerge {
        // Classes are united only at one shape; a valid member's data
        // stands for an invalid one's.
        match (&*to, &from) {
            (Data::Invalid(_), Data::Invalid(_)) => DidMerge(false, false),
            (Data::Invalid(_), _) => {
                *to = from;
                DidMerge(true, false)
            }
            (_, Data::Invalid(_)) => DidMerge(false, true),
            _ => DidMerge(false, false),
        }
    }
}
