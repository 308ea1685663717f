//! Fingerprints (OLLIE §5.3): a hash of a state that two derivations
//! reaching the same expression share, so the search prunes the second.
//!
//! The hash is canonical under iterator renaming (a traversal iterator is
//! its position on the left-hand side, a reduction iterator its range),
//! summation reordering (reduction iterators are hashed by range, not
//! order), operand reordering (the operands of commutative operations are
//! hashed as a sorted list) and tensor renaming (a temporary is the hash
//! of the statements that write it; an input is its name). Lets are
//! expanded first. A statement's status is part of its hash.
//!
//! Requires a state. Guarantees: states that differ only in those ways
//! have equal fingerprints; distinct states collide only as 64-bit hashes
//! do, or when two reduction iterators of equal ranges play different
//! roles (a collision OLLIE's design accepts: it can only prune a state
//! the search would also reach another way, or lose a derivation, never
//! make a wrong one).

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use ir::{BinOp, Expr, Value};

use super::rules::expand_lets;
use super::state::{range, State};

/// The fingerprint of a state: of its outputs' values.
pub fn fingerprint(state: &State) -> u64 {
    let mut memo: Memo = HashMap::new();
    let mut h = DefaultHasher::new();
    for o in &state.def.outputs {
        tensor(state, o, state.statements(), &mut memo).hash(&mut h);
    }
    h.finish()
}

/// Each tensor's hash as the statements before some index leave it, keyed
/// by its name and how many of its writers come before that index.
type Memo = HashMap<(String, usize), u64>;

/// The hash of tensor `name` as the statements before `before` leave it:
/// a statement that updates a tensor in place reads the values its
/// earlier writers made, never its own.
fn tensor(state: &State, name: &str, before: usize, memo: &mut Memo) -> u64 {
    let writers: Vec<usize> = state
        .writers(name)
        .into_iter()
        .filter(|&k| k < before)
        .collect();
    let key = (name.to_string(), writers.len());
    if let Some(&v) = memo.get(&key) {
        return v;
    }
    let mut h = DefaultHasher::new();
    if writers.is_empty()
        || state
            .def
            .tensor(name)
            .is_some_and(|t| t.role != ir::TensorRole::Temp)
    {
        ("tensor", name).hash(&mut h);
    }
    for k in writers {
        statement(state, k, memo).hash(&mut h);
    }
    let v = h.finish();
    memo.insert(key, v);
    v
}

fn statement(state: &State, k: usize, memo: &mut Memo) -> u64 {
    let c = state.comp(k);
    let mut h = DefaultHasher::new();
    (c.op, c.init, state.status[k]).hash(&mut h);
    let mut ids: HashMap<&str, u64> = HashMap::new();
    for (p, x) in c.indices.iter().enumerate() {
        range(c, x).hash(&mut h);
        ids.insert(x, hash(&("traversal", p)));
    }
    let mut sums: Vec<(i64, i64)> = c
        .reduction_iters()
        .filter_map(|r| range(c, &r.name))
        .collect();
    sums.sort();
    sums.hash(&mut h);
    for r in c.reduction_iters() {
        ids.insert(&r.name, hash(&("sum", range(c, &r.name))));
    }
    let body = expand_lets(&c.body, &c.lets);
    expr(state, &body, &ids, k, memo).hash(&mut h);
    h.finish()
}

/// The hash of expression `e` of statement `at`.
fn expr(state: &State, e: &Expr, ids: &HashMap<&str, u64>, at: usize, memo: &mut Memo) -> u64 {
    let mut h = DefaultHasher::new();
    match e {
        Expr::Lit(v, t) => {
            t.hash(&mut h);
            match v {
                Value::Int(i) => i.hash(&mut h),
                Value::Float(f) => f.to_bits().hash(&mut h),
                Value::Bool(b) => b.hash(&mut h),
            }
        }
        Expr::Iter(n) => ids.get(n.as_str()).copied().unwrap_or(0).hash(&mut h),
        Expr::Sym(n) | Expr::Local(n) => ("name", n).hash(&mut h),
        Expr::Read(t, ix) => {
            tensor(state, t, at, memo).hash(&mut h);
            for x in ix {
                expr(state, x, ids, at, memo).hash(&mut h);
            }
        }
        Expr::Binary(op, a, b) => {
            let mut parts = [expr(state, a, ids, at, memo), expr(state, b, ids, at, memo)];
            if commutative(*op) {
                parts.sort();
            }
            (op, parts).hash(&mut h);
        }
        Expr::Unary(op, a) => (op, expr(state, a, ids, at, memo)).hash(&mut h),
        Expr::Cast(t, a) => (t, expr(state, a, ids, at, memo)).hash(&mut h),
        Expr::Select(a, b, d) => {
            let parts = [a, b, d].map(|x| expr(state, x, ids, at, memo));
            ("select", parts).hash(&mut h);
        }
        Expr::Call(f, args) => {
            format!("{f:?}").hash(&mut h);
            for a in args {
                expr(state, a, ids, at, memo).hash(&mut h);
            }
        }
    }
    h.finish()
}

fn commutative(op: BinOp) -> bool {
    matches!(
        op,
        BinOp::Add | BinOp::Mul | BinOp::Eq | BinOp::Ne | BinOp::And | BinOp::Or
    )
}

fn hash<T: Hash>(v: &T) -> u64 {
    let mut h = DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}
