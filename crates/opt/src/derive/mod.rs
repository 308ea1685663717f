//! Expression derivation (OLLIE): a def's comprehensions rewritten into
//! other expressions by derivation rules, the scopes matched to
//! predefined operators by the iterator mapping table, the rest generated
//! as eOperators, found by a hybrid explorative and guided search.
//!
//! In tessera an OLLIE expression is a comprehension and a scope is an
//! intermediate tensor, so a derivation state is a def of comprehensions
//! at bound sizes ([`state`]); the rules ([`rules`], one per file) rewrite
//! it, [`fingerprint`] prunes states reached twice, [`search`] and
//! [`guided`] are Algorithm 2, [`matching`] asks `ir::opmatch`,
//! [`identity`] drops the identity eOperators of complete programs, and
//! [`cost`] ranks what the search completes. [`derive`] is the whole:
//! the candidates, cheapest by estimate first, each with the steps that
//! made it; the caller measures and proves.
//!
//! Requires a def whose sizes are all bound. Guarantees: every candidate
//! was reached by rule applications alone, listed in its steps, and the
//! def itself (when every statement can be instantiated as it stands) is
//! among the candidates; nothing here panics on a verified def.

pub mod cost;
pub mod fingerprint;
pub mod guided;
pub mod identity;
pub mod inline;
pub mod matching;
pub mod rules;
pub mod scope;
pub mod search;
pub mod state;
pub mod subscript;

use std::time::{Duration, Instant};

use ir::Def;

pub use state::State;

/// One rule application.
#[derive(Clone, Debug)]
pub struct Step {
    /// The rule's name (OLLIE's Table 1).
    pub rule: &'static str,
    /// What it did.
    pub what: String,
    /// The state it made (shared: the search's paths share their steps).
    pub after: std::sync::Arc<State>,
}

/// What a derivation search may do.
#[derive(Clone, Debug)]
pub struct Options {
    /// The explorative depth (OLLIE's code: 8).
    pub depth: usize,
    /// The most states expanded.
    pub max_states: usize,
    pub deadline: Option<Instant>,
    /// Inputs known at load (weights): what only they feed costs nothing.
    pub constants: Vec<String>,
    pub rates: cost::Rates,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            depth: DEFAULT_DEPTH,
            max_states: 20_000,
            deadline: None,
            constants: Vec::new(),
            rates: cost::Rates::default(),
        }
    }
}

/// The default explorative depth: the normalizations make each step of
/// the search a step that opens a new form, so fewer are needed than
/// OLLIE's 8 (Figure 6's derivation takes 3).
pub const DEFAULT_DEPTH: usize = 4;

/// A complete derived program.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub state: State,
    pub steps: Vec<Step>,
    /// The analytic estimate, in seconds.
    pub estimate: f64,
}

/// The search's result.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Cheapest estimate first.
    pub candidates: Vec<Candidate>,
    pub stats: search::Stats,
    pub elapsed: Duration,
}

/// Derives `def` (at bound sizes, comprehensions only).
pub fn derive(
    def: &Def,
    options: &Options,
    progress: &dyn Fn(usize, usize),
) -> Result<Outcome, String> {
    if options.depth == 0 {
        return Err("a derivation depth of 0 derives nothing: ask for 1 or more".to_string());
    }
    let start = Instant::now();
    let state = State::new(def.clone())?;
    let limits = search::Limits {
        depth: options.depth,
        max_states: options.max_states,
        deadline: options.deadline,
    };
    let rank = |s: &State| cost::seconds(s, &options.constants, &options.rates);
    let (found, stats) = search::search(state, limits, &rank, progress);
    let mut candidates: Vec<Candidate> = found
        .into_iter()
        .map(|f| {
            let (state, identities) = identity::eliminate(&f.state);
            let mut steps = f.steps;
            steps.extend(identities);
            Candidate {
                estimate: cost::seconds(&state, &options.constants, &options.rates),
                state,
                steps,
            }
        })
        .collect();
    candidates.sort_by(|a, b| a.estimate.total_cmp(&b.estimate));
    // Completions that differ only in how a statement is instantiated, or
    // in the names of their iterators (a substitution and its inverse),
    // are one program: the cheapest estimate stands for it.
    let mut prints: std::collections::HashSet<u64> = std::collections::HashSet::new();
    let mut programs: Vec<Def> = Vec::new();
    candidates.retain(|c| {
        let print = fingerprint::fingerprint(&c.state);
        let fresh = !programs.contains(&c.state.def) && prints.insert(print);
        if fresh {
            programs.push(c.state.def.clone());
        }
        fresh
    });
    Ok(Outcome {
        candidates,
        stats,
        elapsed: start.elapsed(),
    })
}

/// `def` at `sizes`, its integer scalars that `sizes` binds replaced by
/// their values in expressions (they stay parameters, so the signature is
/// the original's): the form derivation works on.
pub fn at_sizes(def: &Def, sizes: &std::collections::HashMap<String, i64>) -> Def {
    let mut out = ir::at_sizes(def, sizes);
    let scalars: std::collections::HashMap<String, (i64, ir::DType)> = def
        .params
        .iter()
        .filter_map(|p| match p {
            ir::Param::Scalar { name, dtype } if dtype.is_int() => {
                sizes.get(name).map(|v| (name.clone(), (*v, *dtype)))
            }
            _ => None,
        })
        .collect();
    let bind = |e: ir::Expr| {
        e.map(&mut |e| match e {
            ir::Expr::Sym(s) => match scalars.get(&s) {
                Some(&(v, t)) => ir::Expr::Lit(ir::Value::Int(v), t),
                None => ir::Expr::Sym(s),
            },
            e => e,
        })
    };
    for s in &mut out.stmts {
        if let ir::Stmt::Comp(c) = s {
            c.body = bind(std::mem::replace(&mut c.body, ir::Expr::int(0)));
            for (_, e) in &mut c.lets {
                *e = bind(std::mem::replace(e, ir::Expr::int(0)));
            }
        }
    }
    out
}

/// Whether `def` printed as TC checks back with every tensor's shape.
pub fn round_trips(def: &Def) -> bool {
    let text = ir::print_program(&ir::Program {
        defs: vec![def.clone()],
    });
    let Ok(checked) = tc::check_source(&text) else {
        return false;
    };
    checked.program.def(&def.name).is_some_and(|d| {
        def.tensors.iter().all(|t| {
            d.tensor(&t.name)
                .is_some_and(|u| u.shape == t.shape && u.dtype == t.dtype)
        })
    })
}
