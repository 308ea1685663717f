//! Lowering: a def of the comprehension IR, with its sizes bound, to a
//! kernel block.
//!
//! The root block is the def: it has no indices, and one refinement per
//! tensor (inputs `in`, outputs `out`, in/out parameters `inout`,
//! temporaries local `inout` buffers) and per scalar parameter (a rank-0
//! `in` buffer). Each comprehension becomes a child block whose indices are
//! its iterators (shifted to start at 0), whose refinements are one
//! single-element view per distinct read and one for the written element
//! (aggregated with the reduction operator), and whose statements compute
//! the body in SSA form. An initializing reduction (`op=!`) is preceded by a
//! block that stores the identity. The out-of-bounds points a reduction
//! skips become constraints. Indirect subscripts become `gather` loads.
//!
//! A `?:` branch whose reads are in bounds everywhere is computed inline;
//! otherwise it runs in a guard block: a child with the parent's indices
//! passed, the branch condition as constraints, and the branch value left in
//! a local buffer the parent then loads. In an initializing reduction the
//! guard block also carries its reads' skip constraints and sets a flag
//! local the parent initialized to "branch not taken"; a point where the
//! flag stays false (the branch was taken but a read fell outside its
//! tensor) stores the reduction's identity, which is exactly a skip there. A call becomes a child block: the
//! callee lowered for the sizes the call fixes. A statement that reads the
//! tensor it writes anywhere but at the element a point writes (or from a
//! reduction that revisits elements) reads a copy made just before it.
//!
//! Requires: a verified program, and sizes binding every size symbol and
//! integer scalar the def's shapes and ranges use. Guarantees: the block
//! computes what the interpreter computes for these sizes, point for point
//! in the same order (so float results are identical).
//!
//! In a reduction, a floor division or modulo by a constant in a subscript
//! or a `?:` condition gets an index of its own (the quotient, pinned by two
//! constraints), which keeps those subscripts and conditions affine: a
//! transposed convolution's `th % sh == 0 ? X(.., th / sh, ..)` becomes a
//! guard block with equality constraints. Not lowered yet (clear errors):
//! `?:` branches with out-of-bounds-prone reads under a condition that is
//! not a conjunction of affine comparisons, such branches in accumulating
//! reductions (`+=` without `!`) or nested in another such branch, other
//! non-affine subscripts in reductions (`A(i * k)`), and calls that update a
//! parameter into a different result tensor.

use std::collections::HashMap;

use ir::{
    arith, Comprehension, DType, Def, Expr, Param, Program, Reduction, Stmt, TensorRole, Value,
};

use crate::{
    row_major, Affine, Agg, Block, Dim, Index, Op, RefDir, Refinement, Statement, StmtKind, Tags,
};

/// Why a def could not be lowered: its kind, and a message naming the
/// statement and the form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LowerError {
    pub kind: LowerErrorKind,
    pub message: String,
}

/// Whether lowering refused a def because of a form it does not handle yet
/// (the program is fine, and the interpreter runs it) or because of the
/// program, its sizes or a bug (an `=` reading out of bounds, a size with
/// no value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LowerErrorKind {
    /// A form lowering does not handle yet.
    NotLoweredYet,
    /// An error in the program or its sizes, or an inconsistency that is a
    /// bug in tessera.
    Invalid,
}

impl LowerError {
    /// An error in the program, its sizes or tessera.
    pub fn invalid(message: impl Into<String>) -> LowerError {
        LowerError {
            kind: LowerErrorKind::Invalid,
            message: message.into(),
        }
    }

    /// A form lowering does not handle yet.
    pub fn not_lowered_yet(message: impl Into<String>) -> LowerError {
        LowerError {
            kind: LowerErrorKind::NotLoweredYet,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for LowerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LowerError {}

/// Loop and branch regions run as a sequence of lowered bodies, which
/// lowering into one kernel block does not express.
fn regions_not_lowered(def: &str) -> LowerError {
    LowerError::not_lowered_yet(format!(
        "def `{def}` has loop or branch regions, which are not lowered into kernels yet"
    ))
}

fn err<T>(m: impl Into<String>) -> Result<T, LowerError> {
    Err(LowerError::invalid(m))
}

/// Lowers def `name` of `program` with `sizes` bound.
pub fn lower_def(
    program: &Program,
    name: &str,
    sizes: &HashMap<String, i64>,
) -> Result<Block, LowerError> {
    let source = program
        .def(name)
        .ok_or_else(|| LowerError::invalid(format!("no def `{name}`")))?;
    let (with_copies, origin) = copy_old_values(source);
    let def = &with_copies;
    let size = |s: &ir::SizeExpr, what: &str| -> Result<i64, LowerError> {
        s.eval_map(sizes)
            .map_err(|e| LowerError::invalid(format!("{what}: {e}")))
    };
    let mut root = Block::new(&def.name);
    root.tags.insert("main".to_string());
    for p in &def.params {
        if let Param::Scalar { name, dtype } = p {
            root.refs.push(buffer(RefDir::In, name, *dtype, Vec::new()));
        }
    }
    // Outputs that statements read back (or that calls may) are `inout`.
    let mut read_back: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for st in &def.stmts {
        match st {
            Stmt::Comp(c) => {
                let lets = c.lets.iter().map(|(_, e)| e);
                for e in std::iter::once(&c.body).chain(lets) {
                    read_back.extend(e.reads().into_iter().map(|(t, _)| t));
                }
                if c.op != Reduction::Assign && !c.init {
                    read_back.insert(&c.tensor);
                }
            }
            Stmt::Loop(_) | Stmt::If(_) => return Err(regions_not_lowered(&def.name)),
            Stmt::Call(call) => {
                read_back.extend(call.results.iter().map(String::as_str));
                read_back.extend(call.args.iter().filter_map(|a| match a {
                    ir::CallArg::Tensor(t) => Some(t.as_str()),
                    ir::CallArg::Scalar(_) => None,
                }));
            }
        }
    }
    let mut shapes: HashMap<String, Vec<u64>> = HashMap::new();
    for t in &def.tensors {
        let dims = t
            .shape
            .iter()
            .map(|d| {
                let v = size(d, &format!("the shape of `{}`", t.name))?;
                u64::try_from(v).map_err(|_| {
                    LowerError::invalid(format!("`{}` has a negative dimension {v}", t.name))
                })
            })
            .collect::<Result<Vec<u64>, _>>()?;
        let dir = match t.role {
            TensorRole::Input => RefDir::In,
            TensorRole::Output if !read_back.contains(t.name.as_str()) => RefDir::Out,
            TensorRole::Output | TensorRole::InOut | TensorRole::Temp => RefDir::InOut,
        };
        let layout = row_major(&dims, t.dtype).ok_or_else(|| too_large(&t.name, t.dtype, &dims))?;
        let mut r = buffer(dir, &t.name, t.dtype, layout);
        if t.role == TensorRole::Temp {
            r.tags.insert("temp".to_string());
        }
        root.refs.push(r);
        shapes.insert(t.name.clone(), dims);
    }
    for (k, s) in def.stmts.iter().enumerate() {
        let c = match s {
            Stmt::Comp(c) => c,
            Stmt::Call(call) => {
                root.stmts.push(block_stmt(lower_call(
                    program, def, call, sizes, &shapes, origin[k],
                )?));
                continue;
            }
            Stmt::Loop(_) | Stmt::If(_) => return Err(regions_not_lowered(&def.name)),
        };
        let cx = Cx {
            def,
            sizes,
            shapes: &shapes,
            stmt: origin[k],
        };
        if c.init && c.op != Reduction::Assign {
            root.stmts.push(block_stmt(cx.init_block(c)?));
        }
        root.stmts.push(block_stmt(cx.comp_block(c)?));
    }
    Ok(root)
}

/// The def with a copy of the old values before every statement that
/// reads the tensor it writes other than in place, and the source statement
/// of each statement (for messages).
///
/// A statement computes every value from the tensors as they were before it
/// (functional update), but its kernel block writes into the tensor as it
/// goes. Reading only the element a point writes, before writing it, is the
/// same thing when each element is written once: no reduction iterators and
/// no identity stored first. Otherwise the statement reads a temporary copy
/// `T_old` that a plain assignment fills just before it.
fn copy_old_values(def: &Def) -> (Def, Vec<usize>) {
    let mut out = def.clone();
    out.stmts.clear();
    let mut origin = Vec::new();
    for (k, st) in def.stmts.iter().enumerate() {
        let Stmt::Comp(c) = st else {
            out.stmts.push(st.clone());
            origin.push(k);
            continue;
        };
        let exprs = || std::iter::once(&c.body).chain(c.lets.iter().map(|(_, e)| e));
        let reads: Vec<&[Expr]> = exprs()
            .flat_map(|e| e.reads())
            .filter(|(t, _)| *t == c.tensor)
            .map(|(_, subs)| subs)
            .collect();
        let in_place = reads.iter().all(|subs| {
            subs.len() == c.indices.len()
                && subs
                    .iter()
                    .zip(&c.indices)
                    .all(|(s, i)| matches!(s, Expr::Iter(n) if n == i))
        }) && c.reduction_iters().next().is_none()
            && !(c.init && c.op != Reduction::Assign);
        let Some(decl) = def
            .tensor(&c.tensor)
            .filter(|_| !reads.is_empty() && !in_place)
        else {
            out.stmts.push(st.clone());
            origin.push(k);
            continue;
        };
        let mut old = format!("{}_old", c.tensor);
        while out.tensor(&old).is_some() || out.scalar(&old).is_some() {
            old.push('_');
        }
        out.tensors.push(ir::TensorDecl {
            name: old.clone(),
            dtype: decl.dtype,
            shape: decl.shape.clone(),
            role: TensorRole::Temp,
        });
        let iters: Vec<String> = (0..decl.shape.len()).map(|d| format!("i{d}")).collect();
        out.stmts.push(Stmt::Comp(Comprehension {
            tensor: old.clone(),
            indices: iters.clone(),
            op: Reduction::Assign,
            init: false,
            body: Expr::Read(
                c.tensor.clone(),
                iters.iter().map(|i| Expr::Iter(i.clone())).collect(),
            ),
            ranges: iters
                .iter()
                .zip(&decl.shape)
                .map(|(i, d)| ir::IterRange {
                    name: i.clone(),
                    lo: ir::SizeExpr::zero(),
                    hi: d.clone(),
                })
                .collect(),
            lets: Vec::new(),
            exists: Vec::new(),
        }));
        origin.push(k);
        let rename = &mut |e: Expr| match e {
            Expr::Read(t, subs) if t == c.tensor => Expr::Read(old.clone(), subs),
            e => e,
        };
        let mut c = c.clone();
        c.body = c.body.map(rename);
        c.lets = c
            .lets
            .into_iter()
            .map(|(n, e)| (n, e.map(rename)))
            .collect();
        out.stmts.push(Stmt::Comp(c));
        origin.push(k);
    }
    (out, origin)
}

/// A call statement as a child block: the callee lowered for the sizes the
/// call fixes, its parameters and results refining the caller's tensors,
/// its scalar parameters local buffers set from the arguments.
fn lower_call(
    program: &Program,
    def: &Def,
    call: &ir::CallStmt,
    sizes: &HashMap<String, i64>,
    shapes: &HashMap<String, Vec<u64>>,
    k: usize,
) -> Result<Block, LowerError> {
    let at = |m: String| LowerError::invalid(format!("statement {} of `{}`: {m}", k + 1, def.name));
    let not_yet = |m: String| {
        LowerError::not_lowered_yet(format!("statement {} of `{}`: {m}", k + 1, def.name))
    };
    let callee = program
        .def(&call.callee)
        .ok_or_else(|| at(format!("unknown def `{}`", call.callee)))?;
    let mut csizes: HashMap<String, i64> = HashMap::new();
    let mut scalar_args = Vec::new();
    let mut tensor_args: HashMap<&str, &str> = HashMap::new();
    for (p, a) in callee.params.iter().zip(&call.args) {
        match (p, a) {
            (Param::Tensor(pn), ir::CallArg::Tensor(an)) => {
                let decl = callee
                    .tensor(pn)
                    .ok_or_else(|| at(format!("no declaration of `{pn}`")))?;
                let dims = shapes
                    .get(an)
                    .ok_or_else(|| at(format!("unknown tensor `{an}`")))?;
                for (want, have) in decl.shape.iter().zip(dims) {
                    if let Some(sym) = want.as_sym() {
                        csizes.insert(sym.to_string(), i64::try_from(*have).unwrap_or(i64::MAX));
                    }
                }
                tensor_args.insert(pn, an);
            }
            (Param::Scalar { name, dtype }, ir::CallArg::Scalar(e)) => {
                if let Some(v) = const_int(e, sizes) {
                    if dtype.is_int() {
                        csizes.insert(name.clone(), v);
                    }
                }
                scalar_args.push((name.clone(), *dtype, e));
            }
            _ => {
                return Err(at(format!(
                    "argument kinds do not match the parameters of `{}`",
                    callee.name
                )))
            }
        }
    }
    let mut b = lower_def(program, &callee.name, &csizes)?;
    b.name = format!("s{}_call_{}", k + 1, callee.name);
    b.tags.remove("main");
    b.tags.insert("call".to_string());
    let results: HashMap<&str, &str> = callee
        .outputs
        .iter()
        .map(String::as_str)
        .zip(call.results.iter().map(String::as_str))
        .collect();
    let mut setup = Vec::new();
    let mut extra = Vec::new();
    for r in &mut b.refs {
        let param = tensor_args.get(r.into.as_str()).copied();
        let result = results.get(r.into.as_str()).copied();
        let target = match (param, result) {
            (Some(a), Some(res)) if a != res => {
                return Err(not_yet(format!(
                    "`{}` updates `{}` in place into a different tensor `{res}`; not lowered yet",
                    callee.name, r.into
                )))
            }
            (Some(a), _) | (None, Some(a)) => Some(a),
            (None, None) => None,
        };
        if let Some(t) = target {
            r.from = Some(t.to_string());
            r.access = vec![Affine::constant(0); r.shape.len()];
            continue;
        }
        let Some((_, dtype, e)) = scalar_args.iter().find(|(n, _, _)| *n == r.into) else {
            continue;
        };
        // A scalar parameter: a local buffer set from the argument.
        r.dir = RefDir::InOut;
        let v = format!("{}_arg", r.into);
        let kind = match (e, const_int(e, sizes), const_value(e).map(|(v, _)| v)) {
            (_, Some(c), _) => StmtKind::Constant {
                into: v.clone(),
                value: Value::Int(c),
                dtype: *dtype,
            },
            (_, None, Some(val)) => StmtKind::Constant {
                into: v.clone(),
                value: val,
                dtype: *dtype,
            },
            (Expr::Sym(s), None, None) if def.scalar(s) == Some(*dtype) => {
                let view = format!("{s}_outer");
                extra.push(Refinement {
                    dir: RefDir::In,
                    from: Some(s.clone()),
                    into: view.clone(),
                    access: Vec::new(),
                    dtype: *dtype,
                    shape: Vec::new(),
                    agg: Agg::Assign,
                    location: None,
                    tags: Tags::new(),
                });
                StmtKind::Load {
                    from: view,
                    into: v.clone(),
                }
            }
            _ => {
                return Err(not_yet(format!(
                    "the argument for `{}` is not lowered yet (only constants and scalars)",
                    r.into
                )))
            }
        };
        setup.push(Statement {
            kind,
            tags: Tags::new(),
        });
        setup.push(Statement {
            kind: StmtKind::Store {
                from: v,
                into: r.into.clone(),
            },
            tags: Tags::new(),
        });
    }
    b.refs.extend(extra);
    setup.append(&mut b.stmts);
    b.stmts = setup;
    Ok(b)
}

/// The value of an integer expression of literals, sizes and integer
/// scalars, if it has one.
fn const_int(e: &Expr, sizes: &HashMap<String, i64>) -> Option<i64> {
    match e {
        Expr::Lit(Value::Int(v), _) => Some(*v),
        Expr::Sym(s) => sizes.get(s).copied(),
        Expr::Cast(t, a) if t.is_int() => const_int(a, sizes),
        Expr::Unary(ir::UnOp::Neg, a) => Some(const_int(a, sizes)?.wrapping_neg()),
        Expr::Binary(op, a, b) => {
            let (x, y) = (const_int(a, sizes)?, const_int(b, sizes)?);
            match op {
                ir::BinOp::Add => Some(x.wrapping_add(y)),
                ir::BinOp::Sub => Some(x.wrapping_sub(y)),
                ir::BinOp::Mul => Some(x.wrapping_mul(y)),
                ir::BinOp::Div => (y != 0).then(|| ir::floor_div(x, y)),
                ir::BinOp::Mod => (y != 0).then(|| ir::floor_mod(x, y)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The value and type of an expression of literals alone, computed as the
/// interpreter does: a literal, or a float TC has no literal for (the
/// ONNX importer writes an infinite bound as `1.0 / 0.0`, which the
/// checker leaves unfolded).
fn const_value(e: &Expr) -> Option<(Value, DType)> {
    match e {
        Expr::Lit(v, t) => Some((*v, *t)),
        Expr::Unary(op, a) => {
            let (v, t) = const_value(a)?;
            Some((arith::unary(*op, t, v).ok()?, t))
        }
        Expr::Binary(op, a, b) if !op.is_comparison() => {
            let ((x, t), (y, _)) = (const_value(a)?, const_value(b)?);
            Some((arith::binary(*op, t, x, y).ok()?, t))
        }
        _ => None,
    }
}

fn block_stmt(b: Block) -> Statement {
    Statement {
        kind: StmtKind::Block(Box::new(b)),
        tags: Tags::new(),
    }
}

/// The error for a tensor whose row-major layout leaves `int64`.
fn too_large(name: &str, dtype: DType, dims: &[u64]) -> LowerError {
    let dims: Vec<String> = dims.iter().map(u64::to_string).collect();
    LowerError::invalid(format!(
        "tensor `{name}` ({dtype}, shape ({})) cannot be addressed: its strides or its size in bytes leave int64",
        dims.join(", ")
    ))
}

/// A whole buffer of layout `shape`, as the root (or a local) declares it.
fn buffer(dir: RefDir, name: &str, dtype: DType, shape: Vec<Dim>) -> Refinement {
    Refinement {
        dir,
        from: None,
        into: name.to_string(),
        access: Vec::new(),
        dtype,
        shape,
        agg: Agg::Assign,
        location: None,
        tags: Tags::new(),
    }
}

/// `x / c` as an affine form when `x` is `c * q + r` with `r` in `0..c` at
/// every point of the box (`q` takes the terms whose coefficients `c`
/// divides): a split iterator's `i / k` is its outer index.
fn exact_quotient(x: &Affine, c: i64, ranges: &HashMap<String, u64>) -> Option<Affine> {
    let mut q = Affine::constant(x.constant.div_euclid(c));
    for (n, coef) in &x.terms {
        if coef % c == 0 {
            q.add_term(n, coef / c);
        }
    }
    let (lo, hi) = x.checked_add_scaled(&q, -c)?.bounds(ranges)?;
    (lo >= 0 && hi < c).then_some(q)
}

/// The divisor `k` when iterator `iter` of `c` appears both as `iter / k`
/// and as `iter % k` for one positive constant `k` (sizes bound), and with
/// no other divisor: a reshape's merge of two dimensions read back apart,
/// which splitting the iterator into quotient and remainder makes affine.
fn merged_divisor(c: &Comprehension, iter: &str, sizes: &HashMap<String, i64>) -> Option<i64> {
    let mut divs = Vec::new();
    let mut mods = Vec::new();
    for e in std::iter::once(&c.body).chain(c.lets.iter().map(|(_, e)| e)) {
        e.walk(&mut |x| {
            if let Expr::Binary(op @ (ir::BinOp::Div | ir::BinOp::Mod), a, b) = x {
                let k = match &**b {
                    Expr::Lit(Value::Int(k), _) => Some(*k),
                    Expr::Sym(s) => sizes.get(s).copied(),
                    _ => None,
                };
                if let (Expr::Iter(n), Some(k)) = (&**a, k) {
                    if n == iter {
                        if *op == ir::BinOp::Div {
                            divs.push(k);
                        } else {
                            mods.push(k);
                        }
                    }
                }
            }
        });
    }
    for v in [&mut divs, &mut mods] {
        v.sort_unstable();
        v.dedup();
    }
    match (divs.as_slice(), mods.as_slice()) {
        ([k], [m]) if k == m && *k >= 2 => Some(*k),
        _ => None,
    }
}

fn agg_of(op: Reduction) -> Agg {
    match op {
        Reduction::Assign => Agg::Assign,
        Reduction::Add => Agg::Add,
        Reduction::Mul => Agg::Mul,
        Reduction::Min => Agg::Min,
        Reduction::Max => Agg::Max,
    }
}

/// A new comprehension block, its iterators as affine forms of its indices
/// and with their smallest and largest values, and its index ranges.
type Start = (
    Block,
    HashMap<String, Affine>,
    HashMap<String, (i64, i64)>,
    HashMap<String, u64>,
);

struct Cx<'a> {
    def: &'a Def,
    sizes: &'a HashMap<String, i64>,
    shapes: &'a HashMap<String, Vec<u64>>,
    stmt: usize,
}

/// A comprehension block under construction.
struct Builder<'a> {
    block: Block,
    /// Iterator name to its value as an affine form of the block's indices.
    iters: HashMap<String, Affine>,
    /// Iterator name to its smallest and largest value.
    values: HashMap<String, (i64, i64)>,
    /// Index ranges, for bounds reasoning.
    ranges: HashMap<String, u64>,
    /// Read (tensor, subscripts as text) to its view name.
    views: HashMap<(String, Vec<Affine>), String>,
    lets: HashMap<String, String>,
    next: usize,
    cx: &'a Cx<'a>,
    comp: &'a Comprehension,
    /// Floor quotients `x / c` (by the affine `x` and the constant `c`)
    /// that have an index of their own, to their affine form.
    quotients: HashMap<(Affine, i64), Affine>,
    /// For a guard block (a child evaluating one `?:` branch): the parent's
    /// view to refine for each tensor and scalar. In an assignment its reads
    /// must be in bounds where the branch is taken (the verifier proves it);
    /// in a reduction they get skip constraints of the guard block's own.
    parent_of: Option<HashMap<String, String>>,
    /// Scalars that are false at a point a guard block skipped: the branch
    /// was taken there but one of its reads fell outside its tensor, so the
    /// point contributes nothing.
    taken_ok: Vec<String>,
}

impl Cx<'_> {
    /// The row-major layout of tensor `t`.
    fn layout(&self, t: &str) -> Result<Vec<Dim>, LowerError> {
        let dims = self
            .shapes
            .get(t)
            .ok_or_else(|| LowerError::invalid(format!("unknown tensor `{t}`")))?;
        let dtype = self.def.tensor(t).map_or(DType::F64, |d| d.dtype);
        row_major(dims, dtype).ok_or_else(|| too_large(t, dtype, dims))
    }

    /// The layout of one element of tensor `t`: its strides, sizes 1.
    fn stride_dims(&self, t: &str) -> Result<Vec<Dim>, LowerError> {
        Ok(self
            .layout(t)?
            .into_iter()
            .map(|d| Dim { size: 1, ..d })
            .collect())
    }

    fn start(&self, c: &Comprehension, lhs_only: bool) -> Result<Start, LowerError> {
        let mut b = Block::new(&format!("s{}_{}", self.stmt + 1, c.tensor));
        b.comment = ir::print_comprehension(self.def, c, None);
        let mut iters = HashMap::new();
        let mut values = HashMap::new();
        let mut ranges = HashMap::new();
        for r in &c.ranges {
            if lhs_only && !c.indices.contains(&r.name) {
                continue;
            }
            let lo =
                r.lo.eval_map(self.sizes)
                    .map_err(|e| LowerError::invalid(format!("range of `{}`: {e}", r.name)))?;
            let hi =
                r.hi.eval_map(self.sizes)
                    .map_err(|e| LowerError::invalid(format!("range of `{}`: {e}", r.name)))?;
            let range = hi
                .checked_sub(lo)
                .and_then(|n| u64::try_from(n).ok())
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    LowerError::invalid(format!(
                        "iterator `{}` has the empty range {lo}:{hi}",
                        r.name
                    ))
                })?;
            values.insert(r.name.clone(), (lo, hi - 1));
            let split = match c.op {
                Reduction::Assign if !lhs_only => {
                    merged_divisor(c, &r.name, self.sizes).filter(|&k| {
                        let k = k.unsigned_abs();
                        lo.unsigned_abs() % k == 0 && range % k == 0 && range > k
                    })
                }
                _ => None,
            };
            let Some(k) = split else {
                b.idxs.push(Index {
                    name: r.name.clone(),
                    range,
                    affine: None,
                    tags: Tags::new(),
                });
                ranges.insert(r.name.clone(), range);
                iters.insert(
                    r.name.clone(),
                    Affine::index(&r.name).add(&Affine::constant(lo)),
                );
                continue;
            };
            // The iterator runs as `k * hi + lo` over two indices, outer
            // first, so the points keep their order; `i / k` and `i % k`
            // are then the two indices (see `affine_upto`).
            let fresh = |suffix: &str| {
                let mut n = format!("{}_{suffix}", r.name);
                while c.ranges.iter().any(|x| x.name == n) {
                    n.push('_');
                }
                n
            };
            let (outer, inner) = (fresh("hi"), fresh("lo"));
            let k_range = k.unsigned_abs();
            for (name, n) in [(&outer, range / k_range), (&inner, k_range)] {
                b.idxs.push(Index {
                    name: name.clone(),
                    range: n,
                    affine: None,
                    tags: Tags::new(),
                });
                ranges.insert(name.clone(), n);
            }
            iters.insert(
                r.name.clone(),
                Affine::term(&outer, k)
                    .add(&Affine::index(&inner))
                    .add(&Affine::constant(lo)),
            );
        }
        Ok((b, iters, values, ranges))
    }

    fn lhs_view(
        &self,
        c: &Comprehension,
        iters: &HashMap<String, Affine>,
        agg: Agg,
        dir: RefDir,
    ) -> Result<Refinement, LowerError> {
        let decl = self
            .def
            .tensor(&c.tensor)
            .ok_or_else(|| LowerError::invalid(format!("unknown tensor `{}`", c.tensor)))?;
        Ok(Refinement {
            dir,
            from: Some(c.tensor.clone()),
            into: c.tensor.clone(),
            access: c.indices.iter().map(|i| iters[i].clone()).collect(),
            dtype: decl.dtype,
            shape: self.stride_dims(&c.tensor)?,
            agg,
            location: None,
            tags: Tags::new(),
        })
    }

    /// Stores the reduction's identity over the left-hand box.
    fn init_block(&self, c: &Comprehension) -> Result<Block, LowerError> {
        let (mut b, iters, _, _) = self.start(c, true)?;
        b.name.push_str("_init");
        let t = self
            .def
            .tensor(&c.tensor)
            .map(|d| d.dtype)
            .unwrap_or(DType::F32);
        b.refs
            .push(self.lhs_view(c, &iters, Agg::Assign, RefDir::Out)?);
        let value = c.op.identity(t);
        let s = |kind| Statement {
            kind,
            tags: Tags::new(),
        };
        b.stmts.push(s(StmtKind::Constant {
            into: "id".to_string(),
            value,
            dtype: t,
        }));
        b.stmts.push(s(StmtKind::Store {
            from: "id".to_string(),
            into: c.tensor.clone(),
        }));
        Ok(b)
    }

    fn comp_block(&self, c: &Comprehension) -> Result<Block, LowerError> {
        let (block, iters, values, ranges) = self.start(c, false)?;
        let mut bl = Builder {
            block,
            iters,
            values,
            ranges,
            views: HashMap::new(),
            lets: HashMap::new(),
            next: 0,
            cx: self,
            comp: c,
            parent_of: None,
            quotients: HashMap::new(),
            taken_ok: Vec::new(),
        };
        if c.op != Reduction::Assign {
            bl.add_quotients();
        }
        // The left side is read in place only at the element it writes
        // (copy_old_values made every other read a read of a copy).
        let lhs_affine: Vec<Affine> = c.indices.iter().map(|i| bl.iters[i].clone()).collect();
        let reads_lhs = c
            .body
            .reads()
            .into_iter()
            .chain(c.lets.iter().flat_map(|(_, e)| e.reads()))
            .any(|(t, _)| t == c.tensor);
        let dir = if reads_lhs {
            RefDir::InOut
        } else {
            RefDir::Out
        };
        bl.block
            .refs
            .push(self.lhs_view(c, &bl.iters, agg_of(c.op), dir)?);
        if reads_lhs {
            bl.views
                .insert((c.tensor.clone(), lhs_affine), c.tensor.clone());
        }
        for (n, e) in &c.lets {
            let v = bl.expr(e)?;
            bl.lets.insert(n.clone(), v);
        }
        let mut v = bl.expr(&c.body)?;
        if let Some(ok) = bl
            .taken_ok
            .clone()
            .into_iter()
            .reduce(|a, b| bl.intrinsic(Op::Binary(ir::BinOp::And), vec![a, b], DType::Bool))
        {
            // A point a guard block skipped stores the reduction's identity,
            // which leaves the accumulator as it is: exactly so for the
            // initializing reductions this is lowered for (an accumulator
            // that starts at the identity never becomes -0.0 under `+`, or
            // NaN under `max`/`min`, where adding the identity would change
            // it).
            let t = self
                .def
                .tensor(&c.tensor)
                .map(|d| d.dtype)
                .unwrap_or(DType::F32);
            let id = bl.emit_into(|into| StmtKind::Constant {
                into,
                value: c.op.identity(t),
                dtype: t,
            });
            v = bl.intrinsic(Op::Select, vec![ok, v, id], t);
        }
        bl.emit(StmtKind::Store {
            from: v,
            into: c.tensor.clone(),
        });
        Ok(bl.block)
    }
}

impl Builder<'_> {
    fn fresh(&mut self) -> String {
        self.next += 1;
        format!("t{}", self.next)
    }

    fn emit(&mut self, kind: StmtKind) {
        self.block.stmts.push(Statement {
            kind,
            tags: Tags::new(),
        });
    }

    /// The affine form of an integer subscript in the block's indices.
    fn affine(&self, e: &Expr) -> Option<Affine> {
        self.affine_upto(e, self.comp.lets.len())
    }

    /// [`Builder::affine`] seeing only the first `limit` lets.
    fn affine_upto(&self, e: &Expr, limit: usize) -> Option<Affine> {
        match e {
            Expr::Lit(Value::Int(v), _) => Some(Affine::constant(*v)),
            Expr::Iter(n) => self.iters.get(n).cloned(),
            // Sizes and integer scalars are bound: constants here.
            Expr::Sym(s) => self.cx.sizes.get(s).map(|v| Affine::constant(*v)),
            // A let's form, from the lets before it (so this terminates).
            Expr::Local(n) => {
                let k = self.comp.lets[..limit].iter().position(|(m, _)| m == n)?;
                self.affine_upto(&self.comp.lets[k].1, k)
            }
            // A cast that keeps every value is the identity.
            Expr::Cast(t, a) if self.keeps(a, *t) => self.affine_upto(a, limit),
            Expr::Unary(ir::UnOp::Neg, a) => {
                Affine::constant(0).checked_add_scaled(&self.affine_upto(a, limit)?, -1)
            }
            Expr::Binary(op @ (ir::BinOp::Add | ir::BinOp::Sub), a, b) => {
                let k = if *op == ir::BinOp::Add { 1 } else { -1 };
                self.affine_upto(a, limit)?
                    .checked_add_scaled(&self.affine_upto(b, limit)?, k)
            }
            // A floor division or modulo by a positive constant is affine
            // when the quotient is the same at every point of the box.
            Expr::Binary(op @ (ir::BinOp::Div | ir::BinOp::Mod), a, b) => {
                let (x, c) = (self.affine_upto(a, limit)?, self.affine_upto(b, limit)?);
                if !c.is_constant() || c.constant <= 0 {
                    return None;
                }
                if c.constant == 1 {
                    return Some(if *op == ir::BinOp::Div {
                        x
                    } else {
                        Affine::constant(0)
                    });
                }
                let (lo, hi) = x.bounds(&self.ranges)?;
                let q = if lo.div_euclid(c.constant) == hi.div_euclid(c.constant) {
                    Affine::constant(lo.div_euclid(c.constant))
                } else if let Some(q) = exact_quotient(&x, c.constant, &self.ranges) {
                    q
                } else {
                    self.quotients.get(&(x.clone(), c.constant))?.clone()
                };
                if *op == ir::BinOp::Div {
                    Some(q)
                } else {
                    x.checked_add_scaled(&q, -c.constant)
                }
            }
            Expr::Binary(ir::BinOp::Mul, a, b) => {
                let (x, y) = (self.affine_upto(a, limit)?, self.affine_upto(b, limit)?);
                let zero = Affine::constant(0);
                if x.is_constant() {
                    zero.checked_add_scaled(&y, x.constant)
                } else if y.is_constant() {
                    zero.checked_add_scaled(&x, y.constant)
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// What the iterators, sizes and lets range over, for proving that a
    /// subscript or condition cannot wrap.
    fn bounds(&self) -> ir::Bounds<'_> {
        ir::Bounds {
            def: self.cx.def,
            lets: &self.comp.lets,
            iters: &self.values,
            sizes: self.cx.sizes,
        }
    }

    /// Whether casting integer `e` to `t` keeps every value it takes.
    fn keeps(&self, e: &Expr, t: DType) -> bool {
        let top = if t == DType::U64 {
            i64::MAX
        } else {
            ir::int_max(t)
        };
        t.is_int()
            && self
                .bounds()
                .interval(e)
                .is_ok_and(|(lo, hi)| lo >= ir::int_min(t) && hi <= top)
    }

    /// `NotLoweredYet` unless no `int64` operation of subscript or condition
    /// `e` can wrap over the box (the interpreter computes subscripts
    /// without wrapping, the kernel's affine forms exactly); `what` names
    /// it from its text.
    fn no_wrap(&self, e: &Expr, what: impl Fn(&str) -> String) -> Result<(), LowerError> {
        if self.bounds().interval(e).is_ok() {
            return Ok(());
        }
        Err(self.overflow(&what(&ir::print_expr(self.cx.def, Some(self.comp), e))))
    }

    /// "`what` may overflow int64": a form lowering does not handle yet.
    fn overflow(&self, what: &str) -> LowerError {
        LowerError::not_lowered_yet(format!(
            "statement {}: {what} may overflow int64 over the statement's ranges; not lowered yet",
            self.cx.stmt + 1
        ))
    }

    /// The smallest and largest value of form `a` (`what`) over the box;
    /// `NotLoweredYet` if the C computing it might overflow there.
    fn bounded(&self, a: &Affine, what: &str) -> Result<(i64, i64), LowerError> {
        match a.bounds(&self.ranges) {
            Some(b) if a.fits(&self.ranges) => Ok(b),
            _ => Err(self.overflow(&format!("{what} `{a}`"))),
        }
    }

    /// Gives every floor division and modulo by a positive constant in a
    /// subscript or a `?:` condition an index of its own when its quotient
    /// varies over the box, so those subscripts and conditions are affine.
    ///
    /// The quotient `q` of `x / c` gets the range of values `x / c` takes
    /// and the constraints `0 <= x - c q <= c - 1`, which hold for exactly
    /// one `q` at each point of the box: the block runs the same points. The
    /// new indices come last, so the points also run in the same order.
    /// Only for reductions: an assignment's points must each write their
    /// own element, and the verifier proves that over the box.
    fn add_quotients(&mut self) {
        let mut exprs: Vec<Expr> = Vec::new();
        let lets = self.comp.lets.iter().map(|(_, e)| e);
        for e in std::iter::once(&self.comp.body).chain(lets) {
            e.walk(&mut |x| match x {
                Expr::Read(_, subs)
                    if !subs.iter().any(|s| s.any(&|y| matches!(y, Expr::Read(..)))) =>
                {
                    exprs.extend(subs.iter().cloned())
                }
                Expr::Select(c, _, _) => exprs.push((**c).clone()),
                _ => {}
            });
        }
        // The lets these use, transitively.
        let mut k = 0;
        while k < exprs.len() {
            let mut used = Vec::new();
            exprs[k].walk(&mut |x| {
                if let Expr::Local(n) = x {
                    used.push(n.clone());
                }
            });
            for n in used {
                if let Some((_, v)) = self.comp.lets.iter().find(|(m, _)| *m == n) {
                    if !exprs.contains(v) {
                        exprs.push(v.clone());
                    }
                }
            }
            k += 1;
        }
        // Nested quotients (`x / a / b`) become affine one level per round.
        loop {
            let mut found = Vec::new();
            for e in &exprs {
                e.walk(&mut |x| {
                    if let Expr::Binary(ir::BinOp::Div | ir::BinOp::Mod, a, b) = x {
                        if let (Some(a), Some(b)) = (self.affine(a), self.affine(b)) {
                            if b.is_constant() && b.constant > 0 && self.affine(x).is_none() {
                                found.push((a, b.constant));
                            }
                        }
                    }
                });
            }
            found.sort();
            found.dedup();
            if found.is_empty() {
                return;
            }
            for (x, c) in found {
                let Some((lo, hi)) = x.bounds(&self.ranges) else {
                    continue;
                };
                let (qlo, qhi) = (lo.div_euclid(c), hi.div_euclid(c));
                let mut name = format!("q{}", self.quotients.len() + 1);
                while self.ranges.contains_key(&name) || self.iters.contains_key(&name) {
                    name.push('_');
                }
                let Some(range) = qhi
                    .checked_sub(qlo)
                    .and_then(|n| u64::try_from(n).ok()?.checked_add(1))
                else {
                    continue;
                };
                let q = Affine::index(&name).add(&Affine::constant(qlo));
                // `x - c q` and `c - 1 - (x - c q)`, which pin `q`.
                let rest = x.checked_add_scaled(&q, -c);
                let mut ranges = self.ranges.clone();
                ranges.insert(name.clone(), range);
                let Some((rest, top)) = rest
                    .and_then(|r| {
                        Some((
                            r.clone(),
                            Affine::constant(c - 1).checked_add_scaled(&r, -1)?,
                        ))
                    })
                    .filter(|(r, t)| r.fits(&ranges) && t.fits(&ranges))
                else {
                    continue;
                };
                self.block.idxs.push(Index {
                    name: name.clone(),
                    range,
                    affine: None,
                    tags: Tags::new(),
                });
                self.ranges = ranges;
                self.block.constraints.push(top);
                self.block.constraints.push(rest);
                self.quotients.insert((x, c), q);
            }
        }
    }

    /// The view for a read with affine subscripts; adds the skip
    /// constraints of a reduction, or checks an assignment's bounds.
    fn view(&mut self, t: &str, access: Vec<Affine>) -> Result<String, LowerError> {
        let key = (t.to_string(), access.clone());
        if let Some(v) = self.views.get(&key) {
            return Ok(v.clone());
        }
        let dims = self.cx.shapes.get(t).cloned().unwrap_or_default();
        let guarded = self.parent_of.is_some();
        for (d, (a, &size)) in access.iter().zip(&dims).enumerate() {
            if guarded && self.comp.op == Reduction::Assign {
                break;
            }
            let last = i64::try_from(size).unwrap_or(i64::MAX) - 1;
            let (lo, hi) = self.bounded(a, &format!("the access of `{t}` in dimension {d}"))?;
            if lo >= 0 && hi <= last {
                continue;
            }
            if self.comp.op == Reduction::Assign {
                return err(format!(
                    "statement {}: `=` reads `{t}` out of bounds in dimension {d} ({lo}..={hi}, size {size})",
                    self.cx.stmt + 1
                ));
            }
            if lo < 0 {
                self.block.constraints.push(a.clone());
            }
            if hi > last {
                // `last - a` may not fit where `a` does.
                let below = Affine::constant(last)
                    .checked_add_scaled(a, -1)
                    .filter(|b| b.fits(&self.ranges))
                    .ok_or_else(|| {
                        self.overflow(&format!(
                            "the bound `{last} - ({a})` of `{t}` in dimension {d}"
                        ))
                    })?;
                self.block.constraints.push(below);
            }
        }
        // A second view of a tensor, or a view of the tensor written, takes
        // a name of its own that no other view and no tensor of the def
        // has (`scores_1` may be the def's next tensor).
        let taken = |n: &str| {
            self.views.values().any(|v| v == n)
                || n == self.comp.tensor
                || self.block.refinement(n).is_some()
        };
        let mut name = t.to_string();
        let mut k = self.views.len();
        while taken(&name) || (name != t && self.cx.def.tensor(&name).is_some()) {
            name = format!("{t}_{k}");
            k += 1;
        }
        let dtype = self.cx.def.tensor(t).map(|d| d.dtype).unwrap_or(DType::F32);
        self.block.refs.push(Refinement {
            dir: RefDir::In,
            from: Some(self.outer(t)),
            into: name.clone(),
            access,
            dtype,
            shape: self.cx.stride_dims(t)?,
            agg: Agg::Assign,
            location: None,
            tags: Tags::new(),
        });
        self.views.insert(key, name.clone());
        Ok(name)
    }

    /// The whole tensor as one view, for gathers.
    fn whole(&mut self, t: &str) -> Result<String, LowerError> {
        let name = format!("{t}_all");
        if self.block.refinement(&name).is_none() {
            let shape = self.cx.layout(t)?;
            let dtype = self.cx.def.tensor(t).map(|d| d.dtype).unwrap_or(DType::F32);
            self.block.refs.push(Refinement {
                dir: RefDir::In,
                from: Some(self.outer(t)),
                into: name.clone(),
                access: vec![Affine::constant(0); shape.len()],
                dtype,
                shape,
                agg: Agg::Assign,
                location: None,
                tags: Tags::new(),
            });
        }
        Ok(name)
    }

    fn scalar_view(&mut self, s: &str, dtype: DType) -> String {
        if self.block.refinement(s).is_none() {
            self.block.refs.push(Refinement {
                dir: RefDir::In,
                from: Some(self.outer(s)),
                into: s.to_string(),
                access: Vec::new(),
                dtype,
                shape: Vec::new(),
                agg: Agg::Assign,
                location: None,
                tags: Tags::new(),
            });
        }
        s.to_string()
    }

    /// The parent's view that a view of tensor or scalar `t` refines.
    fn outer(&self, t: &str) -> String {
        self.parent_of
            .as_ref()
            .and_then(|m| m.get(t).cloned())
            .unwrap_or_else(|| t.to_string())
    }

    /// Whether every read in `e` has affine subscripts that stay inside its
    /// tensor at every point of the box (so it needs no guard).
    fn reads_in_bounds(&self, e: &Expr) -> bool {
        e.reads().iter().all(|(t, subs)| {
            let dims = self.cx.shapes.get(*t).cloned().unwrap_or_default();
            subs.iter().zip(&dims).all(|(s, &size)| {
                let last = i64::try_from(size).unwrap_or(i64::MAX) - 1;
                // An affine subscript's exact range, else the interval
                // analysis's (floor divisions, `min`/`max` clamps).
                let range = match self.affine(s) {
                    Some(a) => a.bounds(&self.ranges),
                    None => self.bounds().interval(s).ok(),
                };
                range.is_some_and(|(lo, hi)| lo >= 0 && hi <= last)
            })
        })
    }

    /// The constraints under which condition `c` is `taken`, when they are a
    /// conjunction of affine inequalities.
    fn guard(&self, c: &Expr, taken: bool) -> Option<Vec<Affine>> {
        use ir::BinOp::{And, Eq, Ge, Gt, Le, Lt, Ne, Or};
        match c {
            Expr::Lit(Value::Bool(b), _) => Some(if *b == taken {
                Vec::new()
            } else {
                vec![Affine::constant(-1)]
            }),
            Expr::Unary(ir::UnOp::Not, x) => self.guard(x, !taken),
            Expr::Binary(op @ (And | Or), x, y) if (*op == And) == taken => {
                let mut v = self.guard(x, taken)?;
                v.extend(self.guard(y, taken)?);
                Some(v)
            }
            Expr::Binary(op, x, y) if op.is_comparison() => {
                // With d = y - x: x < y is d - 1 >= 0, x <= y is d >= 0.
                let d = self.affine(y)?.checked_add_scaled(&self.affine(x)?, -1)?;
                let neg = Affine::constant(0).checked_add_scaled(&d, -1)?;
                let minus_one = |a: &Affine| a.checked_add_scaled(&Affine::constant(1), -1);
                Some(match (op, taken) {
                    (Lt, true) | (Ge, false) => vec![minus_one(&d)?],
                    (Le, true) | (Gt, false) => vec![d],
                    (Gt, true) | (Le, false) => vec![minus_one(&neg)?],
                    (Ge, true) | (Lt, false) => vec![neg],
                    (Eq, true) | (Ne, false) => vec![d, neg],
                    // `x != y` is a disjunction, but one side of it is empty
                    // when the box keeps `y - x` on one side of zero (`b !=
                    // 0` with `b` in `0:2` is `b >= 1`).
                    (Ne, true) | (Eq, false) => match d.bounds(&self.ranges)? {
                        (lo, _) if lo >= 0 => vec![minus_one(&d)?],
                        (_, hi) if hi <= 0 => vec![minus_one(&neg)?],
                        _ => return None,
                    },
                    _ => return None,
                })
            }
            _ => None,
        }
    }

    /// A `?:` branch: computed inline when its reads are in bounds
    /// everywhere, else in a guard block that runs only where the branch is
    /// taken and leaves its value in a local buffer.
    ///
    /// In a reduction, the guard block also carries the skip constraints of
    /// its reads, so it runs only where the branch is taken and its reads are
    /// in bounds; a flag local, set beforehand to "not taken" and by the
    /// guard block to true, tells the parent whether the point counts.
    fn branch(
        &mut self,
        e: &Expr,
        cond: &Expr,
        cond_value: &str,
        taken: bool,
    ) -> Result<String, LowerError> {
        // Lets are computed before the body (their reads are unguarded), so
        // only the branch's own reads need a guard.
        let has_reads = e.any(&|x| matches!(x, Expr::Read(..)));
        if !has_reads || self.reads_in_bounds(e) {
            return self.expr(e);
        }
        // The guard's constraints are exact, the interpreter's condition
        // int64 arithmetic: they agree where it cannot wrap.
        self.no_wrap(cond, |c| format!("the condition `{c}`"))?;
        let constraints = self.guard(cond, taken).ok_or_else(|| {
            LowerError::not_lowered_yet(format!(
                "statement {}: a `?:` branch with reads under a condition that is not a conjunction of affine comparisons is not lowered yet",
                self.cx.stmt + 1
            ))
        })?;
        for c in &constraints {
            self.bounded(c, "the guard")?;
        }
        // The views the guard block refines: whole tensors and scalars.
        let mut parent_of = HashMap::new();
        let mut lets_used = Vec::new();
        let mut pending = vec![e.clone()];
        while let Some(x) = pending.pop() {
            for (t, _) in x.reads() {
                let t = t.to_string();
                if let std::collections::hash_map::Entry::Vacant(slot) = parent_of.entry(t) {
                    let v = self.whole(slot.key())?;
                    slot.insert(v);
                }
            }
            x.walk(&mut |y| match y {
                Expr::Sym(n) if self.cx.def.scalar(n).is_some() => {
                    lets_used.push(format!("sym:{n}"))
                }
                Expr::Local(n) => lets_used.push(n.clone()),
                _ => {}
            });
            for n in std::mem::take(&mut lets_used) {
                if let Some(s) = n.strip_prefix("sym:") {
                    let t = self.cx.def.scalar(s).unwrap_or(DType::I64);
                    let v = self.scalar_view(s, t);
                    parent_of.insert(s.to_string(), v);
                } else if let Some((_, v)) = self.comp.lets.iter().find(|(m, _)| *m == n) {
                    pending.push(v.clone());
                }
            }
        }
        let dtype = self.cx.def.type_of(Some(self.comp), e);
        // A guard block already refines its parent's local, named the same
        // way after the parent's statement count: where the counts meet, a
        // nested branch's local takes another name.
        let mut local = format!("G{}", self.block.stmts.len());
        while self.block.refinement(&local).is_some() {
            local.push('_');
        }
        self.block.refs.push(Refinement {
            dir: RefDir::InOut,
            from: None,
            into: local.clone(),
            access: Vec::new(),
            dtype,
            shape: Vec::new(),
            agg: Agg::Assign,
            location: None,
            tags: Tags::new(),
        });
        let mut child = Block::new(&format!("{}_{local}", self.block.name));
        child.tags.insert("guard".to_string());
        child.idxs = self
            .block
            .idxs
            .iter()
            .map(|ix| Index {
                name: ix.name.clone(),
                range: 1,
                affine: Some(Affine::index(&ix.name)),
                tags: Tags::new(),
            })
            .collect();
        // The parent's constraints hold wherever the child runs; repeating
        // them lets the verifier relate a quotient index to its dividend.
        child.constraints = self.block.constraints.clone();
        child.constraints.extend(constraints);
        child.refs.push(Refinement {
            dir: RefDir::Out,
            from: Some(local.clone()),
            into: local.clone(),
            access: Vec::new(),
            dtype,
            shape: Vec::new(),
            agg: Agg::Assign,
            location: None,
            tags: Tags::new(),
        });
        let mut sub = Builder {
            block: child,
            iters: self.iters.clone(),
            values: self.values.clone(),
            ranges: self.ranges.clone(),
            views: HashMap::new(),
            lets: HashMap::new(),
            next: self.next,
            cx: self.cx,
            comp: self.comp,
            parent_of: Some(parent_of),
            quotients: self.quotients.clone(),
            taken_ok: Vec::new(),
        };
        let before = sub.block.constraints.len();
        let v = sub.expr(e)?;
        sub.emit(StmtKind::Store {
            from: v,
            into: local.clone(),
        });
        if !sub.taken_ok.is_empty() {
            return Err(LowerError::not_lowered_yet(format!(
                "statement {}: a `?:` inside a `?:` branch whose reads may fall outside their tensors is not lowered yet",
                self.cx.stmt + 1
            )));
        }
        let skips = sub.block.constraints.len() > before;
        if skips && !self.comp.init {
            return Err(LowerError::not_lowered_yet(format!(
                "statement {}: an accumulating reduction (`{}` without `!`) with a `?:` branch whose reads may fall outside their tensors is not lowered yet",
                self.cx.stmt + 1,
                self.comp.op.symbol()
            )));
        }
        let flag = skips.then(|| format!("F{}", self.block.stmts.len()));
        if flag.is_none() {
            self.next = sub.next;
        }
        if let Some(flag) = &flag {
            let local_ref = |dir, from: Option<String>| Refinement {
                dir,
                from,
                into: flag.clone(),
                access: Vec::new(),
                dtype: DType::Bool,
                shape: Vec::new(),
                agg: Agg::Assign,
                location: None,
                tags: Tags::new(),
            };
            self.block.refs.push(local_ref(RefDir::InOut, None));
            sub.block
                .refs
                .push(local_ref(RefDir::Out, Some(flag.clone())));
            let yes = sub.emit_into(|into| StmtKind::Constant {
                into,
                value: Value::Bool(true),
                dtype: DType::Bool,
            });
            sub.emit(StmtKind::Store {
                from: yes,
                into: flag.clone(),
            });
            self.next = sub.next;
            // Before the guard block: the flag says whether the branch is
            // not taken, which makes the point count unless the guard block
            // runs and sets it.
            let not_taken = if taken {
                self.intrinsic(
                    Op::Unary(ir::UnOp::Not),
                    vec![cond_value.to_string()],
                    DType::Bool,
                )
            } else {
                cond_value.to_string()
            };
            self.emit(StmtKind::Store {
                from: not_taken,
                into: flag.clone(),
            });
        }
        self.emit(StmtKind::Block(Box::new(sub.block)));
        if let Some(flag) = flag {
            let ok = self.emit_into(|into| StmtKind::Load { from: flag, into });
            self.taken_ok.push(ok);
        }
        Ok(self.emit_into(|into| StmtKind::Load { from: local, into }))
    }

    /// Emits a statement defining a fresh scalar; returns the scalar.
    fn emit_into(&mut self, kind: impl FnOnce(String) -> StmtKind) -> String {
        let into = self.fresh();
        self.emit(kind(into.clone()));
        into
    }

    fn intrinsic(&mut self, op: Op, inputs: Vec<String>, dtype: DType) -> String {
        self.emit_into(|into| StmtKind::Intrinsic {
            op,
            inputs,
            into,
            dtype,
        })
    }

    /// Emits statements computing `e`; returns the scalar holding it.
    fn expr(&mut self, e: &Expr) -> Result<String, LowerError> {
        let def = self.cx.def;
        let ty = |x: &Expr| def.type_of(Some(self.comp), x);
        Ok(match e {
            Expr::Lit(v, t) => self.emit_into(|into| StmtKind::Constant {
                into,
                value: *v,
                dtype: *t,
            }),
            Expr::Iter(n) => {
                let from =
                    self.iters.get(n).cloned().ok_or_else(|| {
                        LowerError::invalid(format!("iterator `{n}` has no range"))
                    })?;
                self.emit_into(|into| StmtKind::LoadIndex { from, into })
            }
            Expr::Sym(s) => match def.scalar(s) {
                // An integer scalar bound to a value (a call's literal
                // argument) is that constant, as in affine forms: a
                // subscript's division by it is then by a constant.
                Some(t)
                    if t.is_int()
                        && self
                            .cx
                            .sizes
                            .get(s)
                            .is_some_and(|v| arith::wrap(t, *v) == *v) =>
                {
                    let v = self.cx.sizes[s];
                    self.emit_into(|into| StmtKind::Constant {
                        into,
                        value: Value::Int(v),
                        dtype: t,
                    })
                }
                Some(t) => {
                    let view = self.scalar_view(s, t);
                    self.emit_into(|into| StmtKind::Load { from: view, into })
                }
                None => {
                    let v =
                        *self.cx.sizes.get(s).ok_or_else(|| {
                            LowerError::invalid(format!("size `{s}` has no value"))
                        })?;
                    self.emit_into(|into| StmtKind::Constant {
                        into,
                        value: Value::Int(v),
                        dtype: DType::I64,
                    })
                }
            },
            Expr::Local(n) => match self.lets.get(n) {
                Some(v) => v.clone(),
                // A guard block recomputes the lets it uses.
                None => {
                    let (_, value) =
                        self.comp.lets.iter().find(|(m, _)| m == n).ok_or_else(|| {
                            LowerError::invalid(format!("let `{n}` is not bound"))
                        })?;
                    let v = self.expr(value)?;
                    self.lets.insert(n.clone(), v.clone());
                    v
                }
            },

            Expr::Read(t, subs) => {
                for s in subs {
                    self.no_wrap(s, |s| format!("the subscript `{s}` of `{t}`"))?;
                }
                let access: Option<Vec<Affine>> = subs.iter().map(|s| self.affine(s)).collect();
                match access {
                    Some(access) => {
                        let view = self.view(t, access)?;
                        self.emit_into(|into| StmtKind::Load { from: view, into })
                    }
                    None => {
                        let indirect = subs.iter().any(|s| s.any(&|x| matches!(x, Expr::Read(..))));
                        if self.comp.op != Reduction::Assign && !indirect {
                            return Err(LowerError::not_lowered_yet(format!(
                                "statement {}: a non-affine subscript of `{t}` in a reduction is not lowered yet",
                                self.cx.stmt + 1
                            )));
                        }
                        let indices = subs
                            .iter()
                            .map(|s| self.expr(s))
                            .collect::<Result<Vec<_>, _>>()?;
                        let from = self.whole(t)?;
                        self.emit_into(|into| StmtKind::Gather {
                            from,
                            indices,
                            into,
                        })
                    }
                }
            }
            Expr::Unary(op, a) => {
                let x = self.expr(a)?;
                self.intrinsic(Op::Unary(*op), vec![x], ty(e))
            }
            Expr::Binary(op, a, b) => {
                let (x, y) = (self.expr(a)?, self.expr(b)?);
                // Comparisons compute in their operands' type.
                let t = if op.is_comparison() { ty(a) } else { ty(e) };
                self.intrinsic(Op::Binary(*op), vec![x, y], t)
            }
            Expr::Select(c, a, b) => {
                let x = self.expr(c)?;
                let y = self.branch(a, c, &x, true)?;
                let z = self.branch(b, c, &x, false)?;
                self.intrinsic(Op::Select, vec![x, y, z], ty(e))
            }
            Expr::Call(f, args) => {
                let xs = args
                    .iter()
                    .map(|a| self.expr(a))
                    .collect::<Result<Vec<_>, _>>()?;
                self.intrinsic(Op::Builtin(*f), xs, ty(e))
            }
            Expr::Cast(t, a) => {
                let x = self.expr(a)?;
                self.intrinsic(Op::Cast, vec![x], *t)
            }
        })
    }
}
