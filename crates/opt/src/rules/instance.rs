//! A rule at concrete sizes: the values its size symbols take in the
//! proofs, the shapes of its terms, and each side written as a TC def.
//!
//! Requires a parsed rule and the program whose defs its operators name.
//! Guarantees: [`samples`] are deterministic and inside the rule's ranges;
//! a side's def computes its terms, in order, as its results, with the
//! rule's variables as parameters in declaration order.

use std::collections::{BTreeMap, BTreeSet};

use ir::Program;

use super::parse::{Rule, Term, VarKind};
use crate::signature::{call_shapes, ArgKind};

/// Values of a rule's size symbols.
pub type Sizes = BTreeMap<String, i64>;

/// The default range of a size symbol in the proofs (upper bound
/// excluded): small, but past 1 so that no axis is degenerate.
const DEFAULT_RANGE: (i64, i64) = (2, 6);

/// Every size symbol of the rule: in its variables' shapes and in its
/// integer terms.
pub fn symbols(rule: &Rule) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for v in &rule.vars {
        if let VarKind::Tensor(dims) = &v.kind {
            for d in dims {
                out.extend(d.symbols());
            }
        }
    }
    for t in rule.lhs.iter().chain(&rule.rhs) {
        term_symbols(t, &mut out);
    }
    out.extend(rule.ranges.iter().map(|r| r.0.clone()));
    out
}

fn term_symbols(t: &Term, out: &mut BTreeSet<String>) {
    match t {
        Term::Call { args, .. } => args.iter().for_each(|a| term_symbols(a, out)),
        Term::Int { expr, .. } => out.extend(expr.symbols()),
        Term::Var { .. } | Term::Float { .. } => {}
    }
}

/// `count` assignments of the rule's size symbols, each symbol varying
/// across them inside its range. A symbol's values across the samples are
/// a word over its range that is not constant, and the symbols of one
/// range get distinct words (as long as there are enough), so that every
/// symbol takes two values and two symbols of one range (a begin pad and
/// an end pad, a height and a width) differ in some sample: a rule that
/// confuses them fails its proof.
pub fn samples(rule: &Rule, count: usize) -> Vec<Sizes> {
    let range = |s: &str| {
        rule.ranges
            .iter()
            .find(|r| r.0 == s)
            .map(|r| (r.1, r.2))
            .unwrap_or(DEFAULT_RANGE)
    };
    let mut words: Vec<(String, i64, Vec<i64>)> = Vec::new();
    let mut taken: BTreeMap<(i64, i64), u64> = BTreeMap::new();
    for s in symbols(rule) {
        let (lo, hi) = range(&s);
        let span = (hi - lo).max(1);
        let j = taken.entry((lo, hi)).or_default();
        words.push((s, lo, word(span, count, *j)));
        *j += 1;
    }
    (0..count)
        .map(|t| {
            words
                .iter()
                .map(|(s, lo, w)| (s.clone(), lo + w[t]))
                .collect()
        })
        .collect()
}

/// The `j`-th word of `count` digits below `span` that is not constant
/// (taken with a stride, so that neighbours differ in many digits; words
/// repeat once there are no new ones).
fn word(span: i64, count: usize, j: u64) -> Vec<i64> {
    let span = span as u64;
    let total = span.saturating_pow(count as u32).max(1);
    let digits = |mut k: u64| -> Vec<i64> {
        (0..count)
            .map(|_| {
                let d = (k % span) as i64;
                k /= span;
                d
            })
            .collect()
    };
    if span < 2 || total < 3 {
        return digits(0);
    }
    // A stride coprime to the words' count visits every word once.
    let stride = (5..).find(|p| gcd(*p, total) == 1).unwrap_or(1);
    let mut k = (1 + j * stride) % total;
    loop {
        let w = digits(k);
        if w.iter().any(|d| *d != w[0]) {
            return w;
        }
        k = (k + stride) % total;
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The shape of variable `name` at `sizes`.
pub fn var_shape(rule: &Rule, name: &str, sizes: &Sizes) -> Result<Option<Vec<i64>>, String> {
    let v = rule
        .vars
        .iter()
        .find(|v| v.name == name)
        .ok_or_else(|| format!("`{name}` is not declared"))?;
    match &v.kind {
        VarKind::Float => Ok(None),
        VarKind::Tensor(dims) => dims
            .iter()
            .map(|d| d.eval(&|s| sizes.get(s).copied()))
            .collect::<Result<Vec<i64>, _>>()
            .map(Some)
            .map_err(|e| format!("the shape of `{name}`: {e}")),
    }
}

/// What term `t` is at `sizes`, for shapes: a tensor's shape, an integer
/// or a float.
pub fn kind(rule: &Rule, program: &Program, t: &Term, sizes: &Sizes) -> Result<ArgKind, String> {
    match t {
        Term::Var { name, .. } => Ok(match var_shape(rule, name, sizes)? {
            Some(shape) => ArgKind::Tensor(shape),
            None => ArgKind::Float,
        }),
        Term::Float { .. } => Ok(ArgKind::Float),
        Term::Int { expr, .. } => {
            let env = sizes.iter().map(|(k, v)| (k.clone(), *v)).collect();
            Ok(ArgKind::Int(
                expr.eval_map(&env).map_err(|e| e.to_string())?,
            ))
        }
        Term::Call { op, args, .. } => {
            let def = program
                .def(op)
                .ok_or_else(|| format!("unknown operator `{op}`"))?;
            let args = args
                .iter()
                .map(|a| kind(rule, program, a, sizes))
                .collect::<Result<Vec<_>, _>>()?;
            let mut shapes = call_shapes(def, &args)?;
            if shapes.len() != 1 {
                return Err(format!(
                    "`{op}` has {} results; a term has one",
                    shapes.len()
                ));
            }
            Ok(ArgKind::Tensor(shapes.remove(0)))
        }
    }
}

/// One side of the rule (`terms`) at `sizes` as a TC def named `name`:
/// the variables as parameters, each term computed into a result.
pub fn side_def(rule: &Rule, terms: &[Term], name: &str, sizes: &Sizes) -> Result<String, String> {
    let mut params = Vec::new();
    for v in &rule.vars {
        params.push(match var_shape(rule, &v.name, sizes)? {
            Some(shape) => format!("float({}) {}", join(&shape), v.name),
            None => format!("float {}", v.name),
        });
    }
    let mut body = Vec::new();
    let mut results = Vec::new();
    for (k, t) in terms.iter().enumerate() {
        let out = format!("_out{}", k + 1);
        match t {
            Term::Var { name: v, .. } => {
                let shape = var_shape(rule, v, sizes)?
                    .ok_or_else(|| format!("result {} is a scalar, not a tensor", k + 1))?;
                let ix: Vec<String> = (0..shape.len()).map(|d| format!("_i{d}")).collect();
                body.push(format!("{out}({0}) = {v}({0})", ix.join(", ")));
            }
            _ => {
                let value = flatten(t, sizes, &mut body)?;
                body.push(format!("{out} = {value}"));
            }
        }
        results.push(out);
    }
    Ok(format!(
        "def {name}({}) -> ({}) {{\n{}\n}}\n",
        params.join(", "),
        results.join(", "),
        body.iter()
            .map(|s| format!("  {s}"))
            .collect::<Vec<_>>()
            .join("\n")
    ))
}

/// Term `t` as a call expression whose tensor arguments are names, the
/// statements computing its nested calls added to `body` first.
fn flatten(t: &Term, sizes: &Sizes, body: &mut Vec<String>) -> Result<String, String> {
    match t {
        Term::Var { name, .. } => Ok(name.clone()),
        Term::Int { expr, .. } => Ok(expr
            .eval(&|s| sizes.get(s).copied())
            .map_err(|e| e.to_string())?
            .to_string()),
        Term::Float { value, .. } => Ok(float_literal(*value)),
        Term::Call { op, args, .. } => {
            let mut out = Vec::new();
            for a in args {
                let v = flatten(a, sizes, body)?;
                if matches!(a, Term::Call { .. }) {
                    let name = format!("_t{}", body.len() + 1);
                    body.push(format!("{name} = {v}"));
                    out.push(name);
                } else {
                    out.push(v);
                }
            }
            Ok(format!("{op}({})", out.join(", ")))
        }
    }
}

/// A float as TC reads it (always with a point or an exponent).
fn float_literal(v: f64) -> String {
    let s = format!("{v:?}");
    if s.contains(['.', 'e', 'E']) {
        s
    } else {
        format!("{s}.0")
    }
}

fn join(xs: &[i64]) -> String {
    xs.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
