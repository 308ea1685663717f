//! The e-graph's term language: a tensor program's values as operator
//! applications over inputs and constants.
//!
//! A node is an application of a def of the program (an operator of the
//! prelude, or a def of the user's) to its arguments in parameter order
//! (tensors and scalars alike are children) or of an opaque statement
//! (`@k`, a comprehension kept whole) to the tensors it reads, an integer (a size or an
//! integer attribute), or a leaf: a def's input tensor (`%name`) or a
//! float literal (its shortest round-trip text). Guarantees: equal
//! programs at equal sizes give equal terms, so hash-consing shares them.

use egg::{define_language, Id, Symbol};

define_language! {
    /// A term of a tensor program.
    pub enum Node {
        Int(i64),
        Call(Symbol, Vec<Id>),
        Leaf(Symbol),
    }
}

/// The leaf of input tensor `name`.
pub fn input(name: &str) -> Node {
    Node::Leaf(Symbol::from(format!("%{name}")))
}

/// The input tensor's name of leaf `s`; `None` for a float's leaf.
pub fn input_name(s: Symbol) -> Option<&'static str> {
    s.as_str().strip_prefix('%')
}

/// The leaf of float `v`.
pub fn float(v: f64) -> Node {
    Node::Leaf(Symbol::from(format!("{v:?}")))
}

/// The operator of opaque statement `k` (see `analysis::Opaque`).
pub fn opaque(k: usize) -> Symbol {
    Symbol::from(format!("@{k}"))
}

/// The index of opaque statement operator `op`; `None` for a def's name.
pub fn opaque_index(op: &Symbol) -> Option<usize> {
    op.as_str().strip_prefix('@')?.parse().ok()
}

/// What a leaf is: an input's name, or a float.
#[derive(Debug)]
pub enum LeafKind<'a> {
    Input(&'a str),
    Float(f64),
}

/// The kind of leaf `s`; `None` for a symbol no leaf is made of.
pub fn leaf_kind(s: &Symbol) -> Option<LeafKind<'_>> {
    let text = s.as_str();
    match text.strip_prefix('%') {
        Some(name) => Some(LeafKind::Input(name)),
        None => text.parse().ok().map(LeafKind::Float),
    }
}
