//! The final proof, region by region: a candidate is proved equal to the
//! original def by proving only the parts where it computes differently,
//! each on its own, instead of the whole def at once.
//!
//! The candidate's chosen classes are matched against the original's
//! statements from the inputs forward: a class whose node is an original
//! statement's operator applied to the tensors the match already gave that
//! statement's arguments (the same scalars besides) computes that
//! statement's tensor, with no proof needed ("settled"). A class that does
//! not match but that the e-graph says holds an original tensor is a
//! region's root, mapped to that tensor (an output's class to the output);
//! the region is what the candidate computes for it back to settled
//! classes, other roots and inputs (its leaves). Each region becomes a
//! pair of defs over the leaves — the candidate's nodes, and the original
//! statements that compute the root's tensor from the leaves' tensors —
//! which the verifier proves equal for all values of the leaves. By
//! induction in the candidate's order every class then holds its
//! original tensor's value, the outputs included: the candidate equals
//! the original. The e-graph only suggests the pairing; nothing it claims
//! is trusted.
//!
//! Requires the search the candidate was extracted from and the original
//! def it was built on. Guarantees: [`Plan::same`] only when the candidate
//! computes every original statement the original's way (the original,
//! renamed); an error from [`prove`] when a region could not be written,
//! which callers answer with the whole-def proof.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use egg::Id;
use ir::{CallArg, Def, Param, Program, Stmt, TensorRole};
use rayon::prelude::*;

use crate::cost::CostModel;
use crate::egraph::extract::Choice;
use crate::egraph::lang::{self, Node};
use crate::egraph::Search;
use crate::verify;

/// A part of the candidate to prove: class `root`, which must hold the
/// original's tensor `tensor`, computed from the classes `leaves` names
/// (by their original tensors).
#[derive(Clone, Debug)]
pub struct Region {
    pub root: Id,
    pub tensor: String,
    pub leaves: Vec<(Id, String)>,
}

/// How a candidate differs from the original.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The regions to prove, in the candidate's order.
    pub regions: Vec<Region>,
    /// Whether the candidate is the original: no region, and every
    /// original statement computed.
    pub same: bool,
    /// Original tensors whose statement repeats an earlier statement, and
    /// that one's tensor (the regions' leaves are named by the latter).
    pub alias: HashMap<String, String>,
}

/// An argument of a statement, as matching compares it: a tensor by its
/// original name, a scalar by its (integer or float) class.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Tensor(String),
    Scalar(Id),
}

/// The regions where `choice` computes `original` differently.
pub fn plan(search: &Search, original: &Def, choice: &Choice) -> Result<Plan, String> {
    let eg = &search.egraph;
    // Each original statement by its operator and arguments, and the
    // statements that repeat an earlier one (the same operator on the
    // same tensors) as that one's tensor: they hold its value.
    let mut statements: HashMap<(String, Vec<Key>), String> = HashMap::new();
    let mut alias: HashMap<String, String> = HashMap::new();
    // The original tensor each class holds, as the e-graph says: outputs
    // first, so that an output's class maps to that output.
    let mut holds: HashMap<Id, String> = HashMap::new();
    let mut held = Vec::new();
    for s in &search.statements {
        let Node::Call(op, kids) = search.canonical(&s.node) else {
            continue;
        };
        let tensors: Vec<&str> = match lang::opaque_index(&op) {
            Some(k) => eg.analysis.opaque[k]
                .reads
                .iter()
                .map(String::as_str)
                .collect(),
            None => match original.stmts.get(s.index) {
                Some(Stmt::Call(c)) => c
                    .args
                    .iter()
                    .map(|a| match a {
                        CallArg::Tensor(t) => t.as_str(),
                        CallArg::Scalar(_) => "",
                    })
                    .collect(),
                _ => return Err(format!("statement {} is not a call", s.index + 1)),
            },
        };
        let key = kids
            .iter()
            .zip(&tensors)
            .map(|(kid, t)| match *t {
                "" => Key::Scalar(eg.find(*kid)),
                t => Key::Tensor(canonical(&alias, t)),
            })
            .collect();
        match statements.entry((op.as_str().to_string(), key)) {
            Entry::Occupied(e) => {
                alias.insert(s.result.clone(), e.get().clone());
            }
            Entry::Vacant(e) => {
                e.insert(s.result.clone());
            }
        }
        held.push((eg.find(s.class), canonical(&alias, &s.result)));
    }
    for (name, id) in &search.outputs {
        holds
            .entry(eg.find(*id))
            .or_insert_with(|| canonical(&alias, name));
    }
    for (id, t) in held {
        holds.entry(id).or_insert(t);
    }

    // The candidate's classes, operands first.
    let mut order = Vec::new();
    let mut visited = HashSet::new();
    for (_, id) in &search.outputs {
        postorder(search, choice, eg.find(*id), &mut visited, &mut order)?;
    }
    let mut tensor: HashMap<Id, String> = HashMap::new();
    let mut roots = Vec::new();
    let mut computed = HashSet::new();
    for &id in &order {
        match choice.node(id)? {
            Node::Leaf(s) => {
                if let Some(lang::LeafKind::Input(name)) = lang::leaf_kind(s) {
                    tensor.insert(id, name.to_string());
                }
            }
            Node::Int(_) => {}
            Node::Call(op, kids) => {
                let key: Option<Vec<Key>> = kids
                    .iter()
                    .map(|&kid| {
                        let kid = eg.find(kid);
                        match tensor.get(&kid) {
                            Some(t) => Some(Key::Tensor(t.clone())),
                            None if is_scalar(choice, kid) => Some(Key::Scalar(kid)),
                            None => None,
                        }
                    })
                    .collect();
                let settled = key.and_then(|k| statements.get(&(op.as_str().to_string(), k)));
                if let Some(t) = settled {
                    computed.insert(t.clone());
                    tensor.insert(id, t.clone());
                } else if let Some(t) = holds.get(&id) {
                    roots.push(id);
                    tensor.insert(id, t.clone());
                }
            }
        }
    }
    let mut regions = Vec::new();
    for &root in &roots {
        regions.push(region(
            search,
            choice,
            root,
            tensor[&root].clone(),
            &tensor,
        )?);
    }
    // An output whose class holds another tensor is proved to equal it.
    for (name, id) in &search.outputs {
        let id = eg.find(*id);
        if tensor.get(&id) != Some(&canonical(&alias, name)) {
            regions.push(region(search, choice, id, name.clone(), &tensor)?);
        }
    }
    let same = regions.is_empty()
        && search
            .statements
            .iter()
            .all(|s| computed.contains(&s.result));
    Ok(Plan {
        regions,
        same,
        alias,
    })
}

/// The tensor that `t` repeats, or `t`.
fn canonical(alias: &HashMap<String, String>, t: &str) -> String {
    alias.get(t).cloned().unwrap_or_else(|| t.to_string())
}

/// Whether class `id` is a scalar as `choice` computes it.
fn is_scalar(choice: &Choice, id: Id) -> bool {
    match choice.node(id) {
        Ok(Node::Int(_)) => true,
        Ok(Node::Leaf(s)) => matches!(lang::leaf_kind(s), Some(lang::LeafKind::Float(_))),
        _ => false,
    }
}

/// The classes reachable from `id` by `choice`, each after its operands.
fn postorder(
    search: &Search,
    choice: &Choice,
    id: Id,
    visited: &mut HashSet<Id>,
    order: &mut Vec<Id>,
) -> Result<(), String> {
    // An explicit stack: a model's chain of statements can be long.
    let mut stack = vec![(id, false)];
    while let Some((id, expanded)) = stack.pop() {
        if expanded {
            order.push(id);
            continue;
        }
        if !visited.insert(id) {
            continue;
        }
        stack.push((id, true));
        if let Node::Call(_, kids) = choice.node(id)? {
            for &kid in kids.iter().rev() {
                let kid = search.egraph.find(kid);
                if !visited.contains(&kid) {
                    stack.push((kid, false));
                }
            }
        }
    }
    Ok(())
}

/// The region of `root` (to hold `name`): its leaves are the first classes
/// back from it that `tensor` maps.
fn region(
    search: &Search,
    choice: &Choice,
    root: Id,
    name: String,
    tensor: &HashMap<Id, String>,
) -> Result<Region, String> {
    let mut leaves = Vec::new();
    let mut seen = HashSet::new();
    let mut todo = vec![root];
    while let Some(id) = todo.pop() {
        if !seen.insert(id) {
            continue;
        }
        match choice.node(id)? {
            Node::Call(_, kids) => {
                for &kid in kids {
                    let kid = search.egraph.find(kid);
                    match tensor.get(&kid) {
                        Some(t) if kid != root => {
                            if !leaves.iter().any(|(k, _)| *k == kid) {
                                leaves.push((kid, t.clone()));
                            }
                        }
                        _ if is_scalar(choice, kid) => {}
                        _ => todo.push(kid),
                    }
                }
            }
            Node::Leaf(s) => {
                if let Some(lang::LeafKind::Input(input)) = lang::leaf_kind(s) {
                    leaves.push((id, input.to_string()));
                }
            }
            Node::Int(_) => {}
        }
    }
    Ok(Region {
        root,
        tensor: name,
        leaves,
    })
}

/// A candidate's regions written as pairs of defs, ready to prove.
#[derive(Clone, Debug)]
pub struct Written {
    /// The program with every pair's two defs after its own.
    pub program: Program,
    /// Per region: the names of its original and candidate defs, and
    /// whether the exact test applies to them (else why not).
    pub pairs: Vec<Pair>,
    /// The integer scalars the pairs take (their shapes are concrete).
    pub sizes: HashMap<String, i64>,
}

/// One region's two defs in [`Written::program`].
#[derive(Clone, Debug)]
pub struct Pair {
    pub region: Region,
    pub original: String,
    pub candidate: String,
    pub exact: Result<(), String>,
    /// When the exact test does not apply, whether the floating-point
    /// test is at sampled points (lazy and cheap) rather than whole.
    pub sampled: bool,
}

/// Writes each region of `plan` as a pair of defs: the candidate's nodes
/// (from `search` by `choice`) and the statements of `original` (a def of
/// `program`) computing the region's tensor from its leaves, at `sizes`.
pub fn write(
    search: &Search,
    program: &Program,
    original: &Def,
    choice: &Choice,
    plan: &Plan,
    sizes: &HashMap<String, i64>,
) -> Result<Written, String> {
    // The pairs are written at the sizes; only integer scalars remain.
    let scalars: HashMap<String, i64> = sizes
        .iter()
        .filter(|(s, _)| original.scalar(s).is_some())
        .map(|(s, v)| (s.clone(), *v))
        .collect();
    let mut p = program.clone();
    let mut pairs = Vec::new();
    for (k, r) in plan.regions.iter().enumerate() {
        let (ours, theirs) = (
            format!("__region{k}_candidate"),
            format!("__region{k}_original"),
        );
        let (a, b) = pair(search, original, choice, r, &plan.alias, &theirs, &ours)?;
        p.defs.push(ir::at_sizes(&a, sizes));
        p.defs.push(ir::at_sizes(&b, sizes));
        pairs.push(Pair {
            region: r.clone(),
            original: theirs,
            candidate: ours,
            exact: Ok(()),
            sampled: false,
        });
    }
    ir::verify_program(&p)
        .map_err(|e| format!("internal error: a region's defs do not check: {e:?}"))?;
    for pair in &mut pairs {
        pair.exact = verify::exact_applies(&p, &pair.original, &pair.candidate, &scalars);
        pair.sampled = pair.exact.is_err()
            && verify::points_apply(&p, &pair.original, &pair.candidate, &scalars);
    }
    Ok(Written {
        program: p,
        pairs,
        sizes: scalars,
    })
}

/// What proving a candidate region by region found.
#[derive(Clone, Debug)]
pub struct Proof {
    /// Every region's verdict.
    pub reports: Vec<(Region, verify::Report)>,
}

impl Proof {
    /// Whether every region is equivalent.
    pub fn equivalent(&self) -> bool {
        self.reports.iter().all(|(_, r)| r.equivalent())
    }

    /// The verdicts, one region a line.
    pub fn show(&self) -> String {
        let mut s = format!(
            "{} region{} where the result computes differently, each proved apart:\n",
            self.reports.len(),
            if self.reports.len() == 1 { "" } else { "s" }
        );
        for (r, report) in &self.reports {
            let text = verify::print_report(report);
            let first = text.lines().next().unwrap_or_default();
            let method = text.lines().nth(1).unwrap_or_default();
            let _ = writeln!(s, "  `{}`: {first}; {method}", r.tensor);
        }
        s
    }
}

/// The most comprehension points a region's exact test of an output of
/// many boxes evaluates before the floating-point test at a random choice
/// of its boxes decides instead: about a tenth of a second of the lazy
/// evaluator. A region whose every point costs a matrix product's sums
/// over transformed operands (a convolution by Winograd's algorithm: some
/// 2 x 10^5 points each, against 4608 for the direct 512-channel sum)
/// would otherwise take tens of seconds at a model's sizes; its rule was
/// proved exactly at the rule's sample sizes.
const EXACT_WORK: u64 = 1_000_000;

/// Proves each pair of `written` with the verifier, the pairs apart on the
/// thread pool (they share nothing, and a model's regions each take up to
/// a second).
pub fn prove(written: &Written) -> Result<Proof, String> {
    let reports = written
        .pairs
        .par_iter()
        .map(|pair| {
            let report = verify::verify(
                &written.program,
                &pair.original,
                &written.program,
                &pair.candidate,
                &verify::Options {
                    sizes: written.sizes.clone(),
                    exact_work: Some(EXACT_WORK),
                    ..Default::default()
                },
            )?;
            Ok((pair.region.clone(), report))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Proof { reports })
}

/// The region's two defs: the original statements computing its tensor
/// from its leaves' tensors (named `theirs`), and the candidate's nodes
/// (named `ours`), with one signature: the original's integer scalars,
/// then every tensor either side reads, in the original's order.
fn pair(
    search: &Search,
    original: &Def,
    choice: &Choice,
    r: &Region,
    alias: &HashMap<String, String>,
    theirs: &str,
    ours: &str,
) -> Result<(Def, Def), String> {
    let writer: HashMap<&str, usize> = original
        .stmts
        .iter()
        .enumerate()
        .flat_map(|(k, s)| s.written().into_iter().map(move |t| (t, k)))
        .collect();
    let leaf_names: HashSet<&str> = r.leaves.iter().map(|(_, t)| t.as_str()).collect();
    if leaf_names.contains(r.tensor.as_str()) {
        return Err(format!("the region of `{}` reads it", r.tensor));
    }
    // The original side: back from the tensor to the leaves or inputs.
    let mut needed = Vec::new();
    let mut reads: HashSet<String> = HashSet::new();
    let mut todo = vec![r.tensor.as_str()];
    let mut seen = HashSet::new();
    while let Some(t) = todo.pop() {
        if !seen.insert(t) {
            continue;
        }
        match writer.get(t) {
            Some(&k) if t == r.tensor || !leaf_names.contains(t) => {
                needed.push(k);
                // A repeated statement's tensor is read as the one it
                // repeats, the name the leaves have.
                todo.extend(
                    original.stmts[k]
                        .reads()
                        .into_iter()
                        .map(|t| alias.get(t).map_or(t, String::as_str)),
                );
            }
            _ => {
                reads.insert(t.to_string());
            }
        }
    }
    needed.sort_unstable();
    needed.dedup();
    reads.extend(leaf_names.iter().map(|t| t.to_string()));
    let decl = |t: &str| {
        original
            .tensor(t)
            .cloned()
            .ok_or_else(|| format!("`{t}` has no declaration"))
    };
    let mut params: Vec<Param> = original
        .params
        .iter()
        .filter(|p| matches!(p, Param::Scalar { .. }))
        .cloned()
        .collect();
    let mut inputs = Vec::new();
    for t in &original.tensors {
        if reads.contains(&t.name) {
            params.push(Param::Tensor(t.name.clone()));
            inputs.push(ir::TensorDecl {
                role: TensorRole::Input,
                ..t.clone()
            });
        }
    }
    let skeleton = |name: &str| Def {
        name: name.to_string(),
        params: params.clone(),
        outputs: vec![r.tensor.clone()],
        tensors: inputs.clone(),
        stmts: Vec::new(),
    };
    let mut a = skeleton(theirs);
    for &k in &needed {
        for t in original.stmts[k].written() {
            if !a.tensors.iter().any(|d| d.name == t) {
                let role = if t == r.tensor {
                    TensorRole::Output
                } else {
                    TensorRole::Temp
                };
                a.tensors.push(ir::TensorDecl { role, ..decl(t)? });
            }
        }
        a.stmts.push(reading_canonical(&original.stmts[k], alias));
    }
    let mut b = skeleton(ours);
    let leaves: HashMap<Id, String> = r.leaves.iter().cloned().collect();
    search.write_region(r.root, &r.tensor, &leaves, choice, &mut b)?;
    Ok((a, b))
}

/// Statement `s` with every tensor it reads that repeats another read as
/// that other one.
fn reading_canonical(s: &Stmt, alias: &HashMap<String, String>) -> Stmt {
    let name = |t: &str| alias.get(t).cloned().unwrap_or_else(|| t.to_string());
    match s {
        Stmt::Call(c) => Stmt::Call(ir::CallStmt {
            args: c
                .args
                .iter()
                .map(|a| match a {
                    CallArg::Tensor(t) => CallArg::Tensor(name(t)),
                    scalar => scalar.clone(),
                })
                .collect(),
            ..c.clone()
        }),
        Stmt::Comp(c) => {
            let mut c = c.clone();
            c.rename_reads(&|t| alias.get(t).cloned());
            Stmt::Comp(c)
        }
        // The optimizer's candidates are built from defs without regions.
        region => region.clone(),
    }
}

/// How a candidate is proved: its regions apart, or the whole def at
/// once when a region cannot be written (why, then).
#[derive(Clone, Debug)]
pub enum Method {
    Regions(Written),
    Whole(String),
}

impl From<Result<Written, String>> for Method {
    /// The regions as [`write`] wrote them, or the whole def when it
    /// could not.
    fn from(written: Result<Written, String>) -> Method {
        match written {
            Ok(w) => Method::Regions(w),
            Err(why) => Method::Whole(format!("the regions could not be written apart: {why}")),
        }
    }
}

impl Method {
    /// The floating-point operations the proof's floating-point checks
    /// would interpret (both sides, every draw), by `model`'s estimate,
    /// and why the first of them is not exact; def `candidate` of `work`
    /// is the candidate, for the whole-def method. Exact tests and
    /// floating-point ones at sampled points are not counted: they
    /// evaluate lazily.
    pub fn float_work<M: CostModel>(
        &self,
        model: &M,
        work: &Program,
        original: &Def,
        candidate: &str,
        sizes: &HashMap<String, i64>,
    ) -> Result<(u64, String), M::Error> {
        let flops = |p: &Program, a: &str, b: &str, s: &HashMap<String, i64>| {
            Ok::<u64, M::Error>(model.estimate(p, a, s)?.flops + model.estimate(p, b, s)?.flops)
        };
        let draws = verify::FLOAT_DRAWS as u64;
        match self {
            Method::Regions(w) => {
                let (mut total, mut why) = (0, String::new());
                for pair in &w.pairs {
                    if let (Err(e), false) = (&pair.exact, pair.sampled) {
                        total += flops(&w.program, &pair.original, &pair.candidate, &w.sizes)?;
                        if why.is_empty() {
                            why = format!("the region computing `{}`: {e}", pair.region.tensor);
                        }
                    }
                }
                Ok((total * draws, why))
            }
            Method::Whole(_) => match verify::exact_applies(work, &original.name, candidate, sizes)
            {
                Ok(()) => Ok((0, String::new())),
                Err(_) if verify::points_apply(work, &original.name, candidate, sizes) => {
                    Ok((0, String::new()))
                }
                Err(e) => Ok((flops(work, &original.name, candidate, sizes)? * draws, e)),
            },
        }
    }

    /// Proves def `candidate` of `work` equal to `original` (also a def
    /// of `work`): the verdict's text, or why it is not proved (an
    /// internal error for the optimizer).
    pub fn prove(
        &self,
        work: &Program,
        original: &Def,
        candidate: &str,
        sizes: &HashMap<String, i64>,
    ) -> Result<String, String> {
        let name = &original.name;
        let failed =
            |report: String| format!("the optimized `{name}` differs from the original:\n{report}");
        let why = match self {
            Method::Regions(w) => {
                let proof = prove(w).map_err(|e| format!("proving the optimized `{name}`: {e}"))?;
                if proof.equivalent() {
                    return Ok(proof.show());
                }
                let (k, (region, report)) = proof
                    .reports
                    .iter()
                    .enumerate()
                    .find(|(_, (_, r))| !r.equivalent())
                    .ok_or("internal error: a region proof without a verdict")?;
                let text = |d: &str| {
                    w.program
                        .def(d)
                        .map(|d| ir::print_def(&w.program, d))
                        .unwrap_or_default()
                };
                let pair = &w.pairs[k];
                // A region is proved for any values of its leaves, which
                // may be more than holds (the original may recompute a
                // leaf's value from the inputs); the whole def decides.
                &format!(
                    "the region computing `{}` is not equivalent apart: {}the original's statements:\n{}the result's:\n{}",
                    region.tensor,
                    verify::print_report(report),
                    text(&pair.original),
                    text(&pair.candidate)
                )
            }
            Method::Whole(why) => why,
        };
        let report = verify::verify(
            work,
            name,
            work,
            candidate,
            &verify::Options {
                sizes: sizes.clone(),
                ..Default::default()
            },
        )
        .map_err(|e| format!("proving the optimized `{name}`: {e}"))?;
        if !report.equivalent() {
            return Err(failed(format!("{}{why}", verify::print_report(&report))));
        }
        Ok(format!(
            "the whole def at once ({why}): {}",
            verify::print_report(&report)
        ))
    }
}
