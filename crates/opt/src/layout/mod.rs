//! Channel-blocked layouts as a rewrite of a def's comprehensions (Stripe
//! §2.3's layout change, done before lowering): NCHW tensors become NCHW[c]
//! tensors, `N x CB x H x W x L` with channel `c` at block `c / L`, lane
//! `c % L` and `CB = ceil(C / L)`, where `L` is the target's vector width in
//! elements, so that the generated kernels vectorize along the channel
//! lanes whatever the image width or stride.
//!
//! The rules (a table, [`RULES`], tried in order on each statement) are one
//! file each: [`conv`] rewrites a 2-D convolution into a blocked one over
//! packed weights (`OIHW[i][o]`), [`channelwise`] keeps the statements that
//! read a blocked tensor channel by channel (bias, activations, residual
//! adds, batch norm, pooling) in the blocked layout, and [`concat`] a
//! concatenation of channels at a whole block. Every other statement
//! is kept as written, and a blocked tensor it reads is first made plain
//! again (`T(n, c, h, w) = Tb(n, c / L, h, w, c % L)`), once, so layouts
//! change only at the ends of blocked chains; so is every output.
//!
//! Requires: a def that passes `ir::verify_program`, and the sizes it will
//! run at (the rewritten def leaves out the channel guards those sizes make
//! true, so it is meant for them). Guarantees: the rewritten def has the
//! same parameters and outputs, passes `ir::verify_program`, and computes
//! the same outputs up to the order of float additions inside a
//! convolution (proved per rule by the equivalence verifier in
//! `tests/files/layout/`). Lanes past `C` in a blocked tensor are zero on
//! finite inputs; only blocked convolutions read them, by zero weights.

mod channelwise;
mod concat;
mod conv;

use std::collections::{HashMap, HashSet};

use ir::{BinOp, Comprehension, DType, Def, Expr, IterRange, Reduction, SizeExpr, Stmt};
use ir::{TensorDecl, TensorRole, Value};

/// A layout rule: the statements replacing `c` (blocked operands made first
/// included), or `None` when the rule does not apply. A rule changes
/// `Blocking` only when it applies.
type Rule = fn(&mut Blocking, &Comprehension) -> Option<Vec<Stmt>>;

/// The rules, tried in this order.
const RULES: &[Rule] = &[conv::rewrite, channelwise::rewrite, concat::rewrite];

/// `def` with its convolutions and the chains reading them in blocks of
/// `lanes` channels, for `sizes`; `None` when no rule applies.
pub fn block_channels(def: &Def, lanes: i64, sizes: &HashMap<String, i64>) -> Option<Def> {
    if lanes < 2 {
        return None;
    }
    let mut b = Blocking::new(def, lanes, sizes);
    let mut changed = false;
    'stmts: for stmt in &def.stmts {
        if let Stmt::Comp(c) = stmt {
            if b.candidate(c) {
                for rule in RULES {
                    if let Some(stmts) = rule(&mut b, c) {
                        b.out.extend(stmts);
                        changed = true;
                        continue 'stmts;
                    }
                }
            }
        }
        let read: Vec<String> = stmt.reads().into_iter().map(str::to_string).collect();
        for t in read {
            b.make_plain(&t);
        }
        b.out.push(stmt.clone());
    }
    if !changed {
        return None;
    }
    for o in &def.outputs {
        b.make_plain(o);
    }
    Some(b.finish())
}

/// The rewrite under way.
pub(crate) struct Blocking<'d> {
    def: &'d Def,
    lanes: i64,
    sizes: &'d HashMap<String, i64>,
    /// The new def's statements so far.
    out: Vec<Stmt>,
    /// New temporaries.
    decls: Vec<TensorDecl>,
    /// Each blocked tensor's plain name → its blocked twin.
    blocked: HashMap<String, String>,
    /// Blocked tensors whose plain form the new def computes.
    plain: HashSet<String>,
    /// Packed weights: (weights, whether the input is blocked) → name.
    packed: HashMap<(String, bool), String>,
    /// Names of tensors, parameters and symbols, so new ones are fresh.
    taken: HashSet<String>,
    /// How many statements write each tensor.
    writers: HashMap<String, usize>,
}

impl<'d> Blocking<'d> {
    fn new(def: &'d Def, lanes: i64, sizes: &'d HashMap<String, i64>) -> Blocking<'d> {
        let mut taken: HashSet<String> = def.tensors.iter().map(|t| t.name.clone()).collect();
        taken.extend(def.params.iter().map(|p| p.name().to_string()));
        taken.extend(def.size_symbols());
        let mut writers = HashMap::new();
        for s in &def.stmts {
            for w in s.written() {
                *writers.entry(w.to_string()).or_insert(0) += 1;
            }
        }
        Blocking {
            def,
            lanes,
            sizes,
            out: Vec::new(),
            decls: Vec::new(),
            blocked: HashMap::new(),
            plain: HashSet::new(),
            packed: HashMap::new(),
            taken,
            writers,
        }
    }

    /// Whether a rule may rewrite `c`: a float32 NCHW tensor, computed by
    /// this statement alone, from zero-based ranges, without lets.
    fn candidate(&self, c: &Comprehension) -> bool {
        let Some(t) = self.def.tensor(&c.tensor) else {
            return false;
        };
        t.dtype == DType::F32
            && t.shape.len() == 4
            && matches!(t.role, TensorRole::Temp | TensorRole::Output)
            && self.writers.get(&c.tensor) == Some(&1)
            && c.lets.is_empty()
            && c.exists.is_empty()
            && c.indices
                .iter()
                .all(|i| c.range(i).is_some_and(|r| r.lo == SizeExpr::zero()))
    }

    fn decl(&self, name: &str) -> Option<&TensorDecl> {
        self.def
            .tensor(name)
            .or_else(|| self.decls.iter().find(|d| d.name == name))
    }

    /// A size's value at the bound sizes.
    fn value(&self, s: &SizeExpr) -> Option<i64> {
        s.eval_map(self.sizes).ok()
    }

    /// Whether `s` is a whole number of blocks at the bound sizes.
    fn whole_blocks(&self, s: &SizeExpr) -> bool {
        self.value(s).is_some_and(|v| v % self.lanes == 0)
    }

    /// `ceil(s / L)`.
    fn blocks(&self, s: &SizeExpr) -> SizeExpr {
        s.add_const(self.lanes - 1)
            .div(&SizeExpr::constant(self.lanes))
    }

    /// A fresh name starting with `base`.
    fn fresh(&mut self, base: &str) -> String {
        let mut name = base.to_string();
        let mut k = 1;
        while self.taken.contains(&name) {
            name = format!("{base}{k}");
            k += 1;
        }
        self.taken.insert(name.clone());
        name
    }

    /// A new float32 temporary of `shape`.
    fn temp(&mut self, base: &str, shape: Vec<SizeExpr>) -> String {
        let name = self.fresh(base);
        self.decls.push(TensorDecl {
            name: name.clone(),
            dtype: DType::F32,
            shape,
            role: TensorRole::Temp,
        });
        name
    }

    /// The blocked twin of plain NCHW tensor `t`, with the statement that
    /// blocks it pushed onto `stmts` the first time it is asked for.
    fn blocked_of(&mut self, t: &str, stmts: &mut Vec<Stmt>) -> String {
        if let Some(b) = self.blocked.get(t) {
            return b.clone();
        }
        let shape = self
            .decl(t)
            .expect("a read tensor is declared")
            .shape
            .clone();
        let cb = self.blocks(&shape[1]);
        let blocked_shape = vec![
            shape[0].clone(),
            cb.clone(),
            shape[2].clone(),
            shape[3].clone(),
            SizeExpr::constant(self.lanes),
        ];
        let name = self.temp(&format!("{t}_nchwc"), blocked_shape);
        let names = fresh_iters(&[], &self.taken, &["n", "cb", "h", "w", "l"]);
        let [n, cbi, h, w, l] = [0, 1, 2, 3, 4].map(|k| iter(&names[k]));
        let channel = self.lane_of(&cbi, &l);
        let read = Expr::Read(t.to_string(), vec![n, channel.clone(), h, w]);
        let body = self.guarded(&[(channel, &shape[1])], read);
        let extents = [
            &shape[0],
            &cb,
            &shape[2],
            &shape[3],
            &SizeExpr::constant(self.lanes),
        ];
        let ranges = names
            .iter()
            .zip(extents)
            .map(|(i, s)| range(i, s))
            .collect();
        stmts.push(assign(&name, &names, body, ranges));
        self.blocked.insert(t.to_string(), name.clone());
        self.plain.insert(t.to_string());
        name
    }

    /// Makes plain tensor `t` available in its plain layout at this point of
    /// the new def, if only its blocked twin is.
    fn make_plain(&mut self, t: &str) {
        let Some(b) = self.blocked.get(t).cloned() else {
            return;
        };
        if !self.plain.insert(t.to_string()) {
            return;
        }
        let shape = self
            .decl(t)
            .expect("a blocked tensor is declared")
            .shape
            .clone();
        let lanes = Expr::int(self.lanes);
        let names = fresh_iters(&[], &self.taken, &["n", "c", "h", "w"]);
        let c = iter(&names[1]);
        let read = Expr::Read(
            b,
            vec![
                iter(&names[0]),
                Expr::binary(BinOp::Div, c.clone(), lanes.clone()),
                iter(&names[2]),
                iter(&names[3]),
                Expr::binary(BinOp::Mod, c, lanes),
            ],
        );
        let ranges = names.iter().zip(&shape).map(|(i, s)| range(i, s)).collect();
        self.out.push(assign(t, &names, read, ranges));
    }

    /// The blocked statement replacing `c`: `T_nchwc(n, block, h, w, lane)
    /// op body` over `c`'s batch and spatial ranges, `blocks` blocks of
    /// channels and the lanes, then `reductions`; records that `c`'s
    /// tensor is computed blocked. `None` when `c` lacks a range.
    fn blocked_statement(
        &mut self,
        c: &Comprehension,
        (block, blocks): (&str, SizeExpr),
        lane: &str,
        (op, init, body): (Reduction, bool, Expr),
        reductions: impl FnOnce(&[String], &Expr) -> Option<Vec<IterRange>>,
    ) -> Option<Stmt> {
        let [n, h, w] = [0, 2, 3].map(|k| c.range(&c.indices[k]).cloned());
        let (n, h, w) = (n?, h?, w?);
        let lanes = SizeExpr::constant(self.lanes);
        let indices = vec![
            n.name.clone(),
            block.to_string(),
            h.name.clone(),
            w.name.clone(),
            lane.to_string(),
        ];
        let more = reductions(&indices, &body)?;
        let shape = vec![
            n.hi.clone(),
            blocks.clone(),
            h.hi.clone(),
            w.hi.clone(),
            lanes.clone(),
        ];
        let out = self.temp(&format!("{}_nchwc", c.tensor), shape);
        let mut ranges = vec![n, range(block, &blocks), h, w, range(lane, &lanes)];
        ranges.extend(more);
        self.blocked.insert(c.tensor.clone(), out.clone());
        Some(Stmt::Comp(Comprehension {
            tensor: out,
            indices,
            op,
            init,
            body,
            ranges,
            lets: Vec::new(),
            exists: Vec::new(),
        }))
    }

    /// `L * block + lane`: the channel of a lane of a block.
    fn lane_of(&self, block: &Expr, lane: &Expr) -> Expr {
        Expr::binary(
            BinOp::Add,
            Expr::binary(BinOp::Mul, Expr::int(self.lanes), block.clone()),
            lane.clone(),
        )
    }

    /// `e`, or zero where a channel is past its extent: `(c0 < C0 && ...) ?
    /// e : 0.0`, leaving out the conditions the bound sizes make true.
    fn guarded(&self, channels: &[(Expr, &SizeExpr)], e: Expr) -> Expr {
        let cond = channels
            .iter()
            .filter(|(_, extent)| !self.whole_blocks(extent))
            .map(|(c, extent)| Expr::binary(BinOp::Lt, c.clone(), extent.to_expr()))
            .reduce(|a, b| Expr::binary(BinOp::And, a, b));
        match cond {
            None => e,
            Some(cond) => Expr::Select(
                Box::new(cond),
                Box::new(e),
                Box::new(Expr::Lit(Value::Float(0.0), DType::F32)),
            ),
        }
    }

    /// The new def: the original with the new statements and temporaries,
    /// less the temporaries no statement computes any more.
    fn finish(self) -> Def {
        let written: HashSet<&str> = self.out.iter().flat_map(Stmt::written).collect();
        let mut tensors: Vec<TensorDecl> = self
            .def
            .tensors
            .iter()
            .filter(|t| t.role != TensorRole::Temp || written.contains(t.name.as_str()))
            .cloned()
            .collect();
        tensors.extend(self.decls);
        Def {
            name: self.def.name.clone(),
            params: self.def.params.clone(),
            outputs: self.def.outputs.clone(),
            tensors,
            stmts: self.out,
        }
    }
}

/// An iterator as an expression.
fn iter(name: &str) -> Expr {
    Expr::Iter(name.to_string())
}

/// `name in 0:hi`.
fn range(name: &str, hi: &SizeExpr) -> IterRange {
    IterRange {
        name: name.to_string(),
        lo: SizeExpr::zero(),
        hi: hi.clone(),
    }
}

/// `T(indices) = body where ranges`.
fn assign(tensor: &str, indices: &[String], body: Expr, ranges: Vec<IterRange>) -> Stmt {
    Stmt::Comp(Comprehension::assign(
        tensor,
        indices.to_vec(),
        body,
        ranges,
    ))
}

/// How many times iterator `name` occurs in `e`.
fn occurrences(e: &Expr, name: &str) -> usize {
    let mut k = 0;
    e.walk(&mut |x| {
        if matches!(x, Expr::Iter(n) if n == name) {
            k += 1;
        }
    });
    k
}

/// Whether `e` reads a tensor (in a subscript, an indirect read).
fn reads_any(e: &Expr) -> bool {
    e.any(&|x| matches!(x, Expr::Read(..)))
}

/// Fresh iterator names for each of `bases`: none of `used` (the
/// statement's own iterators) and none of the def's names (`taken`).
fn fresh_iters(used: &[&str], taken: &HashSet<String>, bases: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for base in bases {
        let mut name = base.to_string();
        let mut k = 1;
        while used.contains(&name.as_str()) || taken.contains(&name) || out.contains(&name) {
            name = format!("{base}{k}");
            k += 1;
        }
        out.push(name);
    }
    out
}
